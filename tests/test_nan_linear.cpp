// NaN and nodata in linear filters (SPEC.md "NaN and nodata in linear filters"): the parameters nan=propagate|
// ignore|fill:V, preserve_nan and nodata of every linear, edge and preset operation.
//
// The expected images come from a restatement of the rule (nan_linear_support.hpp: its own border indexing,
// sums in double over the valid taps), compared with the reference and the fast CPU backends on f32 images with NaN
// holes and u8 / u16 / f32 images with nodata holes, holes larger than the masks included (windows with no
// valid sample). The forced FFT path is compared with the direct one, streamed bands with the whole image,
// and the pointwise forms of the combine step between backends bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/io.hpp"
#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "apron/stream.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "plan/plan.hpp"
#include "nan_linear_support.hpp"
#include "test_io_support.hpp"
#include "test_support.hpp"

namespace apron {
namespace {

using namespace nantest;

// ---- the program ----------------------------------------------------------------------------------------

const CombineStep& combine_at(const OpProgram& p, std::size_t k) { return std::get<CombineStep>(p.steps.at(k).action); }

TEST(NanLinear, GaussianIgnorePreserveIsFillSumValidSumRatioMark) {
    const OpProgram p = parse_operation("gaussian:sigma=2,nan=ignore,preserve_nan=1,delta=3");
    ASSERT_EQ(p.steps.size(), 6u);
    EXPECT_EQ(combine_at(p, 0).form, CombineForm::fill);
    EXPECT_EQ(combine_at(p, 0).c, 0);
    EXPECT_EQ(p.steps[0].input, op_input);
    const auto& data = std::get<LinearStep>(p.steps[1].action);
    EXPECT_EQ(p.steps[1].input, 0);
    EXPECT_EQ(data.delta, 0);  // moved to the ratio
    EXPECT_EQ(combine_at(p, 2).form, CombineForm::valid);
    EXPECT_EQ(p.steps[2].input, op_input);
    const auto& weights = std::get<LinearStep>(p.steps[3].action);
    EXPECT_EQ(p.steps[3].input, 2);
    EXPECT_EQ(weights.normalise, Normalise::sum);
    EXPECT_EQ(weights.mask.weights, data.mask.weights);
    const CombineStep& ratio = combine_at(p, 4);
    EXPECT_EQ(ratio.form, CombineForm::ratio);
    EXPECT_EQ(p.steps[4].input, 1);
    EXPECT_EQ(p.steps[4].second, 3);
    EXPECT_EQ(ratio.c, 3);
    EXPECT_NEAR(ratio.b, min_valid_fraction, 1e-15);  // sum |w| = sum w = 1
    EXPECT_EQ(combine_at(p, 5).form, CombineForm::mark);
    EXPECT_EQ(p.steps[5].input, 4);
    EXPECT_EQ(p.steps[5].second, op_input);
    // The plan: both sums are linear steps the planner gives a path (separable here), f32 between steps.
    const ExecutionPlan plan = make_plan({p}, {64, 48, 1, PixelType::u8}, PixelType::u8, Backend::cpu);
    const auto& steps = plan.operations[0].steps;
    ASSERT_EQ(steps.size(), 6u);
    EXPECT_EQ(std::get<CombinePlan>(steps[0].what).out, PixelType::u8);  // a fill of 0 keeps u8: exact sums
    EXPECT_EQ(std::get<LinearPlan>(steps[1].what).algorithm, LinearAlgorithm::separable);
    EXPECT_EQ(std::get<LinearPlan>(steps[3].what).in, PixelType::f32);
    EXPECT_EQ(std::get<CombinePlan>(steps[4].what).out, PixelType::f32);
    EXPECT_EQ(std::get<CombinePlan>(steps[5].what).out, PixelType::u8);
}

TEST(NanLinear, PropagateByDefaultLeavesTheProgramAsItWas) {
    for (const char* spec : {"gaussian:sigma=2", "sobel:dx=1", "unsharp:sigma=1,amount=2", "xf-lowpass", "box:width=5"}) {
        const OpProgram plain = parse_operation(spec);
        const OpProgram named = parse_operation(std::string(spec) + (std::string(spec).find(':') == std::string::npos ? ":" : ",") +
                                                "nan=propagate,preserve_nan=0");
        ASSERT_EQ(plain.steps.size(), named.steps.size()) << spec;
        const Image in = holed(31, 23, 2, PixelType::f32, {}, 3);
        Pipeline a, b;
        a.add(plain);
        b.add(named);
        EXPECT_TRUE(test::identical(a.run(in, {.backend = Backend::cpu}), b.run(in, {.backend = Backend::cpu}))) << spec;
    }
}

TEST(NanLinear, EveryLinearEdgeAndPresetOperationTakesTheParameters) {
    int with = 0;
    for (const OpInfo& op : operations()) {
        auto has = [&](const char* name) {
            return std::any_of(op.params.begin(), op.params.end(), [&](const ParamSpec& p) { return p.name == name; });
        };
        const bool linear = op.category == "linear" || op.category == "edge" || op.category == "preset";
        EXPECT_EQ(has("nan"), linear) << op.name;
        EXPECT_EQ(has("preserve_nan"), linear) << op.name;
        EXPECT_EQ(has("nodata"), linear) << op.name;
        with += linear;
        if (!linear) continue;
        // Every example builds with each mode (ignore where the weights allow it).
        for (const std::string& ex : op.examples) {
            const std::string fill = with_param(with_param(with_param(ex, "nan", "fill:1.5"), "preserve_nan", "1"), "nodata", "0");
            EXPECT_NO_THROW(parse_operation(fill)) << fill;
            EXPECT_NO_THROW(parse_operation(with_param(ex, "nodata", "3"))) << ex;
        }
    }
    EXPECT_GE(with, 17);
}

// ---- against the restatement ----------------------------------------------------------------------------

// Images of 27..29 x 22, on the reference and the CPU backends, with the planner's path and the forced FFT.
void sweep(const std::string& mode, double fill) {
    sweep_restatement(mode, fill, 27, 22, 50, {Backend::reference, Backend::cpu}, {Algorithm::automatic, Algorithm::fft});
}

TEST(NanLinear, IgnoreIsTheNormalisedSumOverValidSamples) { sweep("ignore", 0); }

TEST(NanLinear, FillReadsMissingSamplesAsTheValue) { sweep("fill", 2.5); }

TEST(NanLinear, PropagateWithNodataMakesNodataMissing) { sweep("propagate", 0); }

TEST(NanLinear, RegistryOperationsMatchTheRestatement) { expect_operations_match_restatement(Backend::cpu); }

// A mask whose valid part nearly cancels: the threshold is on the valid weight with the sign of the mask's sum,
// so outputs whose valid weights sum to about 0 or to the other sign are missing, never huge.
TEST(NanLinear, MixedSignsNearZeroValidWeightAreMissing) {
    Filter f;
    f.w = 3, f.h = 1;
    f.weights = {-1, 3, -1};  // sum 1; with the centre missing the valid weights sum to -2
    Image in(5, 1, 1, PixelType::f32);
    const float row[] = {1, 2, nan_v, 4, 5};
    std::copy(row, row + 5, in.row<float>(0));
    NanOptions o;
    o.mode = "ignore";
    for (Backend b : {Backend::reference, Backend::cpu}) {
        const Image got = run(correlate(f, o), in, b);
        EXPECT_TRUE(std::isnan(got.row<float>(0)[2])) << to_string(b);  // valid weight -2: the other sign
        // x = 1: taps 1 (w -1), 2 (w 3), NaN: valid weight 2, sum -1 + 6 = 5, times 1 / 2.
        EXPECT_FLOAT_EQ(got.row<float>(0)[1], 2.5f) << to_string(b);
        expect_matches(got, restate(in, f, o), o, to_string(b));
    }
}

TEST(NanLinear, UnsharpIgnoreWithNodata) {
    const Image in = holed(33, 25, 1, PixelType::u16, 0, 9);
    for (Backend b : {Backend::reference, Backend::cpu})
        for (PixelType out : {PixelType::u16, PixelType::f32}) {
            const Image got = run(parse_operation("unsharp:sigma=1.2,amount=0.5,nan=ignore,nodata=0"), in, b, out);
            // in + 0.5 (in - blur), blur the normalised Gaussian; missing where the input is.
            NanOptions o;
            o.mode = "ignore";
            o.nodata = 0;
            Filter g = gaussian_filter(1.2);
            const std::vector<Expected> blur = restate(in, g, o);
            std::vector<Expected> want = blur;
            for (int y = 0, k = 0; y < in.height(); ++y)
                for (int x = 0; x < in.width(); ++x, ++k) {
                    const double v = in.row<std::uint16_t>(y)[x];
                    Expected& e = want[std::size_t(k)];
                    e.missing = v == 0 || blur[std::size_t(k)].missing;
                    e.value = 1.5 * v - 0.5 * blur[std::size_t(k)].value;
                    e.tolerance = 0.5 * blur[std::size_t(k)].tolerance + 0.02;
                }
            expect_matches(got, want, o, std::string(to_string(b)) + " " + to_string(out));
        }
}

// ---- exactness, all-missing images, paths, bands --------------------------------------------------------

// On integer images a fill value of the type keeps the exact integer path: the bits of the op on the image
// with the value written in, on every host backend.
TEST(NanLinear, FillOnIntegersIsExactlyTheImageWithTheValueWrittenIn) {
    for (PixelType t : {PixelType::u8, PixelType::u16})
        for (const char* op : {"box:width=5,height=3", "sobel:dx=1,delta=100", "gaussian:sigma=1.5", "xf-gaussian"}) {
            const double nodata = t == PixelType::u8 ? 7 : 1000;
            const Image in = holed(30, 21, 3, t, nodata, 11);
            Image written = copy_of(in.view());
            with_type(t, [&]<class T>() {
                for (int y = 0; y < in.height(); ++y)
                    for (int k = 0; k < in.width() * 3; ++k)
                        if (written.row<T>(y)[k] == T(nodata)) written.row<T>(y)[k] = T(40);
            });
            const std::string spec = std::string(op) + (std::string(op).find(':') == std::string::npos ? ":" : ",") +
                                     "nan=fill:40,nodata=" + std::to_string(int(nodata));
            const bool exact = std::string(op).rfind("gaussian", 0) != 0;  // integer weights over one divisor
            for (Backend b : {Backend::reference, Backend::cpu}) {
                const Image got = run(parse_operation(spec), in, b);
                EXPECT_TRUE(test::identical(got, run(parse_operation(op), written, b))) << spec << " " << to_string(b);
                if (exact) EXPECT_TRUE(test::identical(got, run(parse_operation(spec), in, Backend::reference))) << spec;
            }
        }
}

TEST(NanLinear, AllMissingImagesGiveAllMissingOutputs) {
    Image nan_image(9, 7, 2, PixelType::f32);
    for (int y = 0; y < 7; ++y) std::fill(nan_image.row<float>(y), nan_image.row<float>(y) + 18, nan_v);
    Image nodata_image(9, 7, 1, PixelType::u16);
    for (int y = 0; y < 7; ++y) std::fill(nodata_image.row<std::uint16_t>(y), nodata_image.row<std::uint16_t>(y) + 9, 500);
    for (Backend b : {Backend::reference, Backend::cpu})
        for (BorderMode border : {BorderMode::reflect, BorderMode::wrap, BorderMode::nearest}) {
            const std::string bt = std::string(",border=") + to_string(border);
            for (Algorithm a : {Algorithm::automatic, Algorithm::fft}) {
                if (a == Algorithm::fft && b == Backend::reference) continue;  // the reference sums directly
                const Image g = run(parse_operation("gaussian:sigma=1.5,nan=ignore" + bt), nan_image, b, {}, a);
                for (int y = 0; y < 7; ++y)
                    for (int k = 0; k < 18; ++k) ASSERT_TRUE(std::isnan(g.row<float>(y)[k])) << to_string(b) << bt;
                const Image u = run(parse_operation("box:width=3,nan=ignore,nodata=500" + bt), nodata_image, b, {}, a);
                for (int y = 0; y < 7; ++y)
                    for (int x = 0; x < 9; ++x) ASSERT_EQ(u.row<std::uint16_t>(y)[x], 500) << to_string(b) << bt;
                const Image f = run(parse_operation("box:width=3,nan=ignore,nodata=500" + bt), nodata_image, b, PixelType::f32, a);
                for (int y = 0; y < 7; ++y)
                    for (int x = 0; x < 9; ++x) ASSERT_TRUE(std::isnan(f.row<float>(y)[x])) << to_string(b) << bt;
            }
            // The constant border is valid: outputs that reach it are its value.
            const Image c = run(parse_operation("box:width=3,nan=ignore,border=constant,value=4"), nan_image, b);
            EXPECT_FLOAT_EQ(c.row<float>(0)[0], 4.0f);
            EXPECT_TRUE(std::isnan(c.row<float>(3)[6]));
        }
}

TEST(NanLinear, ForcedFftPathEqualsTheDirectPath) {
    const Image f32 = holed(150, 110, 1, PixelType::f32, {}, 21);
    const Image u16 = holed(131, 97, 2, PixelType::u16, 9, 22);
    std::vector<std::pair<Filter, NanOptions>> cases;
    auto add = [&](Filter f, BorderMode border, double value, const std::string& mode, double fill, bool preserve) {
        f.border = border;
        f.value = value;
        NanOptions o;
        o.mode = mode, o.fill = fill, o.preserve = preserve;
        cases.push_back({f, o});
    };
    Filter box;
    box.w = 9, box.h = 5;
    box.weights.assign(45, 1.0 / 45);
    Filter sharpen;
    sharpen.w = sharpen.h = 3;
    sharpen.weights = {0, -1, 0, -1, 5, -1, 0, -1, 0};
    add(gaussian_filter(5), BorderMode::reflect, 0, "ignore", 0, false);
    add(gaussian_filter(3), BorderMode::wrap, 0, "ignore", 0, true);
    add(box, BorderMode::constant, 2, "ignore", 0, false);
    add(gaussian_filter(2), BorderMode::nearest, 0, "fill", 0.5, false);
    add(sharpen, BorderMode::mirror, 0, "ignore", 0, false);
    for (auto [f, o] : cases) {
        for (const Image* in : {&f32, &u16}) {
            if (in == &u16) o.nodata = 9;
            const OpProgram op = correlate(f, o);
            const std::vector<Expected> want = restate(*in, f, o);
            const std::string what = spec_text("correlate", o, f) + " " + to_string(in->type());
            const Image direct = run(op, *in, Backend::cpu, PixelType::f32, Algorithm::direct);
            const Image fft = run(op, *in, Backend::cpu, PixelType::f32, Algorithm::fft);
            expect_matches(direct, want, o, what + " direct");
            expect_matches(fft, want, o, what + " fft");
        }
    }
    // The plan really has two FFT steps.
    const ExecutionPlan plan = make_plan({parse_operation("gaussian:sigma=5,nan=ignore")}, f32.shape(), PixelType::f32,
                                         Backend::cpu, Algorithm::fft);
    int ffts = 0;
    for (const StepPlan& s : plan.operations[0].steps)
        if (const auto* l = std::get_if<LinearPlan>(&s.what)) ffts += l->algorithm == LinearAlgorithm::fft;
    EXPECT_EQ(ffts, 2);
}

TEST(NanLinear, StreamedBandsGiveTheWholeImagesBits) {
    expect_streamed_bands_give_whole_images_bits(
        Backend::cpu,
        {"gaussian:sigma=2,nan=ignore,preserve_nan=1", "box:width=7,nan=ignore,nodata=1,border=wrap",
         "sobel:dx=1,nan=fill:0,nodata=1,preserve_nan=1", "gaussian:sigma=1,nan=propagate,nodata=1",
         "unsharp:sigma=1.5,nan=ignore,nodata=1,border=mirror"},
        {Algorithm::automatic, Algorithm::fft});
}

// ---- the pointwise forms ----------------------------------------------------------------------------------

// Each form on every type pair: the fast CPU executor stores the reference's bits.
TEST(NanLinear, PointwiseFormsGiveTheReferencesBits) {
    const auto cpu = make_cpu_executor(2);
    expect_pointwise_forms_give_reference_bits([&](const CombinePlan& p, const Image& a, const Image* b) {
        Image got(a.width(), a.height(), a.channels(), p.out);
        cpu->combine(p, a.view(), b ? ConstImageView(b->view()) : ConstImageView{}, got.view());
        return got;
    });
}

// The band engine and Pipeline::run fuse a morphology step with the affine combine that alone reads it; a
// combine of another form after a morphology step runs as itself.
TEST(NanLinear, OnlyTheAffineFormIsFusedWithMorphology) {
    for (PixelType t : {PixelType::u8, PixelType::u16}) {
        const Image in = holed(40, 30, 1, t, 5, 41);
        OpProgram p;
        p.spec = "dilate then mark";
        MorphStep m;
        m.element = Mask(3, 3, std::vector<double>(9, 1.0));
        p.steps.push_back(Step{m});
        p.steps.push_back(Step{CombineStep{1, -1, 0, CombineForm::mark, true, 5}, 0, op_input});
        const Image want = run(p, in, Backend::reference);
        EXPECT_TRUE(test::identical(want, run(p, in, Backend::cpu))) << to_string(t);
        // mark: the dilation where the input is not 5, and 5 where it is.
        const Image dilated = run(parse_operation("dilate:se=rect:3x3"), in, Backend::reference);
        with_type(t, [&]<class T>() {
            for (int y = 0; y < 30; ++y)
                for (int x = 0; x < 40; ++x) {
                    const T v = in.row<T>(y)[x];
                    ASSERT_EQ(want.row<T>(y)[x], v == 5 ? T(5) : dilated.row<T>(y)[x]);
                }
        });
    }
}

// ---- errors -----------------------------------------------------------------------------------------------

void expect_error(const std::function<void()>& f, const std::string& prefix, const std::string& fragment) {
    try {
        f();
        ADD_FAILURE() << "no error: " << prefix;
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
        EXPECT_NE(msg.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
}

void expect_refused(const std::string& spec, const std::string& param, const std::string& fragment) {
    expect_error([&] { parse_operation(spec); }, "--op " + spec + ": " + param + ": ", fragment);
}

TEST(NanLinear, ParameterErrorsNameTheParameter) {
    expect_refused("gaussian:sigma=1,nan=foo", "nan", "'foo' is not propagate, ignore or fill:V");
    expect_refused("gaussian:sigma=1,nan=fill:", "nan", "fill value");
    expect_refused("gaussian:sigma=1,nan=fill:abc", "nan", "fill value");
    expect_refused("gaussian:sigma=1,nan=fill:1e39", "nan", "out of range");
    expect_refused("gaussian:sigma=1,preserve_nan=2", "preserve_nan", "not one of 0, 1");
    expect_refused("gaussian:sigma=1,nodata=1e39", "nodata", "out of range");
    expect_refused("gaussian:sigma=1,nodata=abc", "nodata", "not a finite number");
    for (const char* op : {"sobel:dx=1", "scharr:dy=1,dx=0", "prewitt:dx=1", "laplacian", "xf-highpass", "xf-dgaussian",
                           "separable:row=1:-1"}) {
        const std::string spec = std::string(op) + (std::string(op).find(':') == std::string::npos ? ":" : ",") + "nan=ignore";
        const std::string name = std::string(op).substr(0, std::string(op).find(':'));
        expect_refused(spec, "nan", "nan=ignore needs weights that do not sum to 0 (" + name + "'s sum to 0); use nan=fill:V");
        EXPECT_NO_THROW(parse_operation(std::string(spec).replace(spec.find("nan=ignore"), 10, "nan=fill:0"))) << spec;
    }
    // Weights whose sum is under 1e-3 of their magnitudes' (rounding magnified a thousandfold and more) are
    // refused too; xf-sharpen is refused only as alpha nears 1.
    expect_refused("separable:row=1:-1.0001,nan=ignore", "nan",
                   "nan=ignore needs weights that do not sum to 0 (separable's sum to -0.0001, under 1e-3 of the sum of "
                   "their magnitudes, 2); use nan=fill:V");
    EXPECT_NO_THROW(parse_operation("separable:row=1:-1.01,nan=ignore"));
    EXPECT_NO_THROW(parse_operation("xf-sharpen:alpha=0.99,nan=ignore"));
    expect_refused("xf-sharpen:alpha=0.999,nan=ignore", "nan", "under 1e-3 of the sum of their magnitudes");
    // The nodata value against the image's type (the input's, and the output's where missing outputs are
    // written), refused when the pipeline is planned for it.
    const Image u8 = test::random_image(8, 8, 1, PixelType::u8, 1);
    const Image f32 = test::random_image(8, 8, 1, PixelType::f32, 1);
    expect_error([&] { Pipeline({"box:width=3,nan=ignore,nodata=300"}).run(u8, {.backend = Backend::cpu}); },
                 "--op box:width=3,nan=ignore,nodata=300: nodata: ", "300 is not a u8 sample value");
    expect_error([&] { Pipeline({"box:width=3,nodata=2.5"}).run(u8, {.backend = Backend::cpu, .out_type = PixelType::f32}); },
                 "--op box:width=3,nodata=2.5: nodata: ", "is not a u8 sample value");
    expect_error([&] { Pipeline({"box:width=3,nan=ignore,nodata=-1"}).run(f32, {.backend = Backend::cpu, .out_type = PixelType::u8}); },
                 "--op box:width=3,nan=ignore,nodata=-1: nodata: ", "cannot be written to u8 pixels");
    EXPECT_NO_THROW(Pipeline({"box:width=3,nan=ignore,nodata=-1"}).run(f32, {.backend = Backend::cpu}));
    const std::string book = "correlate:mask=given,normalize=book,nan=ignore";
    expect_error([&] { parse_operation(book, GivenMasks{{"mask", Mask(3, 1, {-1, -2, -1})}}); }, "--op " + book + ": nan: ",
                 "normalize=book needs weights with a positive sum");
    EXPECT_NO_THROW(parse_operation(book, GivenMasks{{"mask", Mask(3, 1, {1, 2, 1})}}));
}

} // namespace
} // namespace apron
