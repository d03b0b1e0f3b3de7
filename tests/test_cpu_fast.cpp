// The fast CPU executor against the reference: bit-exact on the exact linear path, morphology and
// combine; within SPEC.md's tolerance on the float path. Plans come from the real planner (so the
// algorithms and accumulators are the ones users get), sometimes with the algorithm forced.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

constexpr PixelType kTypes[] = {PixelType::u8, PixelType::u16, PixelType::f32};

Executor& reference() { return test::reference_executor(); }
Executor& fast() { return test::fast_cpu_executor(); }

using test::linear_plan;
using test::plan_step;

MorphPlan morph_plan(const MorphStep& s, const ImageShape& shape) { return test::kind_plan<MorphPlan>(s, shape); }

Mask random_mask(int w, int h, bool integer, std::mt19937& rng) {
    std::vector<double> v(std::size_t(w) * h);
    for (double& x : v) {
        if (integer) x = std::uniform_int_distribution<int>(-4, 4)(rng);
        else x = std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
    }
    return Mask(w, h, v);
}

ConstImageView cv(const Image& img) { return img.view(); }

// A view onto the middle of a larger image: the row pitch is not the row size and rows do not start
// on a vector boundary, as for any ROI.
struct Framed {
    Image storage;
    ConstImageView view;
};
Framed framed(const Image& src) {
    Framed f{Image(src.width() + 3, src.height() + 2, src.channels(), src.type()), {}};
    f.view = cv(f.storage).roi(1, 1, src.width(), src.height());
    for (int y = 0; y < src.height(); ++y)
        std::memcpy(const_cast<std::byte*>(f.view.row_bytes(y)), src.view().row_bytes(y), src.shape().row_bytes());
    return f;
}

// Runs the plan on both executors and checks the contract. Returns the fast result.
Image check_linear(const LinearPlan& p, const Image& in, const std::string& what, Executor& ex = fast()) {
    Image want(in.width(), in.height(), in.channels(), p.out), got(in.width(), in.height(), in.channels(), p.out);
    reference().linear(p, in.view(), want.view());
    const Framed src = framed(in);
    ex.linear(p, src.view, got.view());
    if (p.exact) {
        EXPECT_TRUE(test::identical(cv(want), cv(got)))
            << what << ": exact path differs by " << test::max_abs_diff(cv(want), cv(got));
    } else {
        double tol = 1;
        if (p.out == PixelType::f32) {
            const double in_max = std::max(test::max_abs(in.view()), std::fabs(p.step.border_value));
            tol = 1e-5 * p.step.mask.abs_sum() * in_max * std::max(1.0, std::fabs(p.finish.mul)) + 1e-30;
        }
        EXPECT_LE(test::max_abs_diff(cv(want), cv(got)), tol) << what;
    }
    return got;
}

Image check_morph(const MorphPlan& p, const Image& in, const std::string& what, Executor& ex = fast()) {
    Image want(in.shape()), got(in.shape());
    reference().morph(p, in.view(), want.view());
    const Framed src = framed(in);
    ex.morph(p, src.view, got.view());
    EXPECT_TRUE(test::same_samples(cv(want), cv(got)))
        << what << ": differs by " << test::max_abs_diff(cv(want), cv(got));
    return got;
}

std::string describe(const LinearPlan& p, int w, int h, int c) {
    return std::string(p.exact ? "exact " : "float ") + (p.algorithm == LinearAlgorithm::separable ? "separable " : "direct ") +
           to_string(p.in) + "->" + to_string(p.out) + " " + std::to_string(p.step.mask.width) + "x" +
           std::to_string(p.step.mask.height) + " on " + std::to_string(w) + "x" + std::to_string(h) + "x" +
           std::to_string(c) + " border " + to_string(p.step.border);
}

// ---- masks: 0/1 structuring elements ----

Mask element(int w, int h, const char* shape) {
    std::vector<double> v(std::size_t(w) * h, 0);
    const double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0;
    for (int j = 0; j < h; ++j)
        for (int i = 0; i < w; ++i) {
            bool on = true;
            if (std::string(shape) == "cross") on = i == w / 2 || j == h / 2;
            if (std::string(shape) == "ellipse") {
                const double dx = (i - cx) / (w / 2.0), dy = (j - cy) / (h / 2.0);
                on = dx * dx + dy * dy <= 1.0;
            }
            if (std::string(shape) == "ring") on = i == 0 || j == 0 || i == w - 1 || j == h - 1;
            v[std::size_t(j) * w + i] = on ? 1 : 0;
        }
    return Mask(w, h, v);
}

} // namespace

// Every input type x output type x border mode x mask shape, channels cycling 1..4, both arithmetic
// paths (random integer masks are exact on integer images, random real masks are float).
TEST(CpuFast, LinearSweepMatchesReference) {
    std::mt19937 rng(1234);
    const int sizes[][2] = {{1, 1}, {2, 3}, {3, 3}, {4, 4}, {5, 5}, {7, 1}, {1, 9}, {15, 15}};
    int k = 0;
    for (PixelType tin : kTypes)
        for (PixelType tout : kTypes)
            for (BorderMode b : test::all_borders)
                for (auto [mw, mh] : sizes)
                    for (bool integer : {true, false}) {
                        const int channels = 1 + k % 4, w = mw > 9 ? 29 : 37, h = mw > 9 ? 19 : 23;
                        const Image in = test::random_image(w, h, channels, tin, 100 + k++);
                        LinearStep s;
                        s.mask = random_mask(mw, mh, integer, rng);
                        s.border = b;
                        s.border_value = b == BorderMode::constant && k % 2 ? (tin == PixelType::f32 ? 77.25 : 77) : 0;
                        const LinearPlan p = linear_plan(s, in.shape(), tout);
                        check_linear(p, in, describe(p, w, h, channels));
                    }
}

// Masks larger than the image, 1-pixel rows and columns: the extension repeats (SPEC "Borders").
TEST(CpuFast, TinyImagesAndMasksLargerThanTheImage) {
    std::mt19937 rng(99);
    const int images[][2] = {{1, 1}, {1, 7}, {7, 1}, {3, 2}, {2, 5}};
    const int masks[][2] = {{1, 1}, {3, 3}, {9, 9}, {4, 6}, {1, 9}, {11, 1}};
    int k = 0;
    for (auto [w, h] : images)
        for (auto [mw, mh] : masks)
            for (BorderMode b : test::all_borders)
                for (PixelType t : {PixelType::u8, PixelType::f32}) {
                    const Image in = test::random_image(w, h, 1 + k % 3, t, 7 + k);
                    LinearStep s;
                    s.mask = random_mask(mw, mh, k % 2 == 0, rng);
                    s.border = b;
                    s.border_value = 3;
                    const LinearPlan p = linear_plan(s, in.shape(), t);
                    check_linear(p, in, describe(p, w, h, in.channels()));
                    MorphStep m;
                    m.element = element(mw, mh, k % 3 == 0 ? "rect" : k % 3 == 1 ? "cross" : "ring");
                    m.kind = k % 2 ? MorphKind::dilate : MorphKind::erode;
                    if (k % 6 != 0) m.border = b;
                    m.border_value = 5;
                    check_morph(morph_plan(m, in.shape()), in, "morph on tiny " + std::to_string(w) + "x" + std::to_string(h));
                    ++k;
                }
}

// Normalisation, scale and delta reach every finish: integer division (power of two and not),
// non-integral scale (double finish), f32 output of the exact path, book with zero-sum masks.
TEST(CpuFast, ExactFinishVariants) {
    struct Case { std::vector<double> w; int mw, mh; Normalise n; double scale, delta; };
    const std::vector<Case> cases = {
        {{1, 2, 1, 2, 4, 2, 1, 2, 1}, 3, 3, Normalise::sum, 1, 0},       // divide by 16
        {{1, 1, 1, 1, 1, 1, 1, 1, 1}, 3, 3, Normalise::sum, 1, 3},       // divide by 9, integer delta
        {{1, 1, 1, 1, 1, 1, 1, 1, 1}, 3, 3, Normalise::sum, 0.5, 0.25},  // double finish
        {{0, -1, 0, -1, 4, -1, 0, -1, 0}, 3, 3, Normalise::book, 1, 0},  // zero sum: + mid
        {{-1, -2, -1, 0, 0, 0, 1, 2, 1}, 3, 3, Normalise::none, 2, -7},
        {{1.5, 2.5, -0.5, 3}, 2, 2, Normalise::sum, 1, 0},               // integers over divisor 2
        {{-1, -1, -1, -1}, 2, 2, Normalise::book, 1, 0},                 // negative sum: + max
    };
    int k = 0;
    for (const Case& c : cases)
        for (PixelType tin : {PixelType::u8, PixelType::u16})
            for (PixelType tout : kTypes) {
                const Image in = test::random_image(45, 21, 1 + k % 4, tin, 500 + k);
                ++k;
                LinearStep s;
                s.mask = Mask(c.mw, c.mh, c.w);
                s.normalise = c.n;
                s.scale = c.scale;
                s.delta = c.delta;
                const LinearPlan p = linear_plan(s, in.shape(), tout);
                EXPECT_TRUE(p.exact);
                check_linear(p, in, describe(p, 45, 21, in.channels()) + " normalise " + to_string(c.n));
            }
}

// Large integer weights: partial sums beyond 2^24 need the f64 accumulator, still exact.
TEST(CpuFast, ExactWithF64Accumulator) {
    std::mt19937 rng(5);
    for (PixelType tin : {PixelType::u8, PixelType::u16})
        for (auto [mw, mh] : {std::pair{3, 3}, std::pair{5, 4}, std::pair{1, 7}}) {
            std::vector<double> w(std::size_t(mw) * mh);
            for (double& x : w) x = std::uniform_int_distribution<int>(-20000, 20000)(rng);
            LinearStep s;
            s.mask = Mask(mw, mh, w);
            s.border = BorderMode::mirror;
            const Image in = test::random_image(40, 17, 2, tin, 77);
            for (PixelType tout : kTypes) {
                const LinearPlan p = linear_plan(s, in.shape(), tout);
                ASSERT_TRUE(p.exact);
                EXPECT_EQ(p.accumulator, Accumulator::f64);
                check_linear(p, in, describe(p, 40, 17, 2) + " f64 accumulator");
            }
        }
}

// Separable masks take the separable path, match the reference, and (exact) give the same bits as
// the direct path, or (float) stay within tolerance of it.
TEST(CpuFast, SeparablePathsMatchDirect) {
    std::mt19937 rng(77);
    int k = 0;
    for (bool integer : {true, false})
        for (auto [mw, mh] : {std::pair{3, 3}, std::pair{5, 5}, std::pair{2, 7}, std::pair{15, 15}, std::pair{8, 3}})
            for (BorderMode b : test::all_borders)
                for (PixelType t : kTypes) {
                    std::vector<double> row(static_cast<std::size_t>(mw)), col(static_cast<std::size_t>(mh)), w;
                    for (double& x : row) x = integer ? std::uniform_int_distribution<int>(-3, 4)(rng) : std::uniform_real_distribution<double>(-1, 1)(rng);
                    for (double& x : col) x = integer ? std::uniform_int_distribution<int>(1, 4)(rng) : std::uniform_real_distribution<double>(-1, 1)(rng);
                    row[0] = integer ? 1 : 0.5;  // never all zero
                    for (int j = 0; j < mh; ++j)
                        for (int i = 0; i < mw; ++i) w.push_back(col[std::size_t(j)] * row[std::size_t(i)]);
                    LinearStep s;
                    s.mask = Mask(mw, mh, w);
                    s.border = b;
                    s.border_value = 9;
                    const Image in = test::random_image(41, 26, 1 + k % 4, t, 900 + k);
                    ++k;
                    LinearPlan p = linear_plan(s, in.shape(), t);
                    // The planner may prefer the direct path for small masks; the separable form must exist.
                    ASSERT_TRUE(p.exact ? bool(p.integer_separable) : bool(p.separable)) << mw << "x" << mh;
                    p.algorithm = LinearAlgorithm::separable;
                    const std::string what = describe(p, 41, 26, in.channels());
                    const Image sep = check_linear(p, in, what);
                    p.algorithm = LinearAlgorithm::direct;
                    const Image direct = check_linear(p, in, what + " forced direct");
                    if (p.exact) EXPECT_TRUE(test::identical(cv(sep), cv(direct))) << what;
                }
}

// Rectangles (separable_rect, van Herk down the columns) equal the forced direct path and the
// reference, for every border and the ignored outside, both kinds, every type.
TEST(CpuFast, MorphologyRectMatchesDirectAndReference) {
    int k = 0;
    for (auto [mw, mh] : {std::pair{3, 3}, std::pair{2, 2}, std::pair{5, 1}, std::pair{1, 6}, std::pair{7, 7},
                          std::pair{4, 9}, std::pair{15, 15}, std::pair{31, 5}})
        for (PixelType t : kTypes)
            for (int b = -1; b < 5; ++b) {
                const Image in = test::random_image(53, 47, 1 + k % 4, t, 300 + k);
                MorphStep s;
                s.element = element(mw, mh, "rect");
                s.kind = k % 2 ? MorphKind::dilate : MorphKind::erode;
                if (b >= 0) s.border = test::all_borders[b];
                s.border_value = 200;
                ++k;
                MorphPlan p = morph_plan(s, in.shape());
                const std::string what = std::to_string(mw) + "x" + std::to_string(mh) + " rect " + to_string(t) +
                                         " border " + (b < 0 ? "ignore" : to_string(test::all_borders[b]));
                if (mw * mh > 1) EXPECT_EQ(p.algorithm, MorphAlgorithm::separable_rect);
                const Image rect = check_morph(p, in, what);
                p.algorithm = MorphAlgorithm::direct;
                const Image direct = check_morph(p, in, what + " forced direct");
                EXPECT_TRUE(test::identical(cv(rect), cv(direct))) << what;
            }
}

TEST(CpuFast, MorphologyShapesMatchReference) {
    std::mt19937 rng(3);
    int k = 0;
    for (const char* shape : {"cross", "ellipse", "ring", "random"})
        for (auto [mw, mh] : {std::pair{3, 3}, std::pair{5, 5}, std::pair{9, 7}, std::pair{4, 6}, std::pair{15, 15}})
            for (PixelType t : kTypes)
                for (int b = -1; b < 5; b += 2) {
                    Mask e = element(mw, mh, std::string(shape) == "random" ? "rect" : shape);
                    if (std::string(shape) == "random")
                        for (double& w : e.weights) w = std::uniform_int_distribution<int>(0, 2)(rng) ? 1 : 0;
                    const Image in = test::random_image(44, 31, 1 + k % 4, t, 40 + k);
                    MorphStep s;
                    s.element = e;
                    s.kind = k % 2 ? MorphKind::dilate : MorphKind::erode;
                    if (b >= 0) s.border = test::all_borders[b];
                    s.border_value = 17;
                    ++k;
                    check_morph(morph_plan(s, in.shape()), in,
                                std::string(shape) + " " + std::to_string(mw) + "x" + std::to_string(mh) + " " + to_string(t));
                }
}

// f32 morphology gives the reference's values: NaN is a missing sample, +-inf are kept, and a window
// with no cell inside the image (or only NaN) gives NaN (tests/test_morph_nan.cpp restates the rule).
TEST(CpuFast, MorphologyF32SpecialValues) {
    Image in = test::random_image(19, 13, 1, PixelType::f32, 8);
    in.row<float>(0)[0] = NAN;
    in.row<float>(3)[5] = INFINITY;
    in.row<float>(7)[9] = -INFINITY;
    for (int x = 0; x < 19; ++x) in.row<float>(12)[x] = NAN;
    for (auto kind : {MorphKind::erode, MorphKind::dilate})
        for (const char* shape : {"rect", "ring"}) {
            MorphStep s;
            s.element = element(5, 5, shape);
            s.kind = kind;
            check_morph(morph_plan(s, in.shape()), in, std::string("special values ") + shape);
            s.border = BorderMode::constant;
            s.border_value = NAN;
            check_morph(morph_plan(s, in.shape()), in, std::string("special values, NaN border ") + shape);
        }
    // A ring with the anchor outside every cell's reach on a 1x1 image: nothing inside.
    const Image one = test::random_image(1, 1, 1, PixelType::f32, 1);
    MorphStep s;
    s.element = element(5, 5, "ring");
    check_morph(morph_plan(s, one.shape()), one, "no cell inside");
}

TEST(CpuFast, CombineMatchesReference) {
    int k = 0;
    for (PixelType ta : kTypes)
        for (PixelType tb : kTypes)
            for (PixelType tout : kTypes) {
                const Image a = test::random_image(33, 9, 3, ta, 60 + k), b = test::random_image(33, 9, 3, tb, 61 + k);
                ++k;
                // Integer coefficients take the int32 form (saturating at both ends, the largest it takes);
                // others, and one a hair off an integer, the double form.
                for (CombineStep s : {CombineStep{1, -1, 0}, CombineStep{1.5, 0.25, 3.5}, CombineStep{1, 0, 0},
                                      CombineStep{-2, 0, 128}, CombineStep{-1, 1, 0}, CombineStep{3, -2, -7},
                                      CombineStep{16384, -16384, 16777216}, CombineStep{1.0000001, -1, 0}}) {
                    CombinePlan p{s, ta, tb, tout};
                    Image want(33, 9, 3, tout), got(33, 9, 3, tout);
                    const ConstImageView bv = s.b != 0 ? b.view() : ConstImageView{};
                    reference().combine(p, a.view(), bv, want.view());
                    fast().combine(p, a.view(), bv, got.view());
                    EXPECT_TRUE(test::identical(cv(want), cv(got))) << "combine " << s.a << " " << s.b << " " << s.c;
                }
            }
}

// The same bits whatever the number of threads (tasks are cut differently for each).
TEST(CpuFast, ResultsDoNotDependOnThreadCount) {
    std::mt19937 rng(11);
    const Image u8 = test::random_image(301, 97, 3, PixelType::u8, 1), f32 = test::random_image(301, 97, 1, PixelType::f32, 2);
    std::vector<LinearPlan> linear;
    for (bool integer : {false, true})
        for (auto [mw, mh] : {std::pair{5, 5}, std::pair{17, 9}}) {
            LinearStep s;
            s.mask = random_mask(mw, mh, integer, rng);
            linear.push_back(linear_plan(s, u8.shape(), PixelType::u8));
            linear.push_back(linear_plan(s, f32.shape(), PixelType::f32));
        }
    {
        LinearStep s;  // separable float
        s.mask = Mask(5, 5, std::vector<double>(25, 0.04));
        linear.push_back(linear_plan(s, f32.shape(), PixelType::f32));
    }
    MorphStep m;
    m.element = element(9, 9, "ellipse");
    const MorphPlan ellipse = morph_plan(m, u8.shape());
    m.element = element(11, 13, "rect");
    const MorphPlan rect = morph_plan(m, f32.shape());

    std::vector<Image> first;
    for (int threads : {1, 2, 3, 7}) {
        auto ex = make_cpu_executor(threads);
        std::vector<Image> results;
        for (const LinearPlan& p : linear) {
            const Image& in = p.in == PixelType::u8 ? u8 : f32;
            Image out(in.width(), in.height(), in.channels(), p.out);
            ex->linear(p, in.view(), out.view());
            results.push_back(std::move(out));
        }
        Image e(u8.shape()), r(f32.shape());
        ex->morph(ellipse, u8.view(), e.view());
        ex->morph(rect, f32.view(), r.view());
        results.push_back(std::move(e));
        results.push_back(std::move(r));
        if (first.empty()) {
            first = std::move(results);
            continue;
        }
        for (std::size_t i = 0; i < first.size(); ++i)
            EXPECT_TRUE(test::identical(cv(first[i]), cv(results[i]))) << "result " << i << " with " << threads << " threads";
    }
}

// A bigger image than the sweep uses, so several strips and bands run and the 8-vector blocks of the
// kernels are exercised with tails; plus even-mask anchors moved by convolve's flip.
TEST(CpuFast, LargerImagesAndFlippedAnchors) {
    std::mt19937 rng(21);
    const Image in = test::random_image(517, 63, 2, PixelType::u8, 4);
    for (bool integer : {true, false}) {
        LinearStep s;
        s.mask = flipped(random_mask(6, 4, integer, rng));
        s.border = BorderMode::reflect;
        for (PixelType tout : kTypes) {
            const LinearPlan p = linear_plan(s, in.shape(), tout);
            check_linear(p, in, describe(p, 517, 63, 2) + " flipped");
        }
    }
    MorphStep m;
    m.element = flipped(element(6, 4, "cross"));
    m.border = BorderMode::wrap;
    check_morph(morph_plan(m, in.shape()), in, "flipped cross");
}

// Every SIMD level compiled in (AVX-512, AVX2, SSE4, the portable fallback) gives the reference's
// results, so the binary is right on machines other than this one.
TEST(CpuFast, EverySimdTargetMatchesReference) {
    std::mt19937 rng(31);
    const Image u8 = test::random_image(83, 19, 3, PixelType::u8, 12), f32 = test::random_image(45, 17, 1, PixelType::f32, 13);
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        auto ex = make_cpu_executor(2);
        const std::string name = hwy::TargetName(target);
        for (bool integer : {true, false})
            for (auto [mw, mh] : {std::pair{5, 5}, std::pair{3, 1}, std::pair{7, 6}}) {
                LinearStep s;
                s.mask = random_mask(mw, mh, integer, rng);
                s.border = BorderMode::reflect;
                for (PixelType tout : kTypes) {
                    check_linear(linear_plan(s, u8.shape(), tout), u8, name + " u8", *ex);
                    check_linear(linear_plan(s, f32.shape(), tout), f32, name + " f32", *ex);
                }
            }
        LinearStep g;  // separable float and exact
        g.mask = Mask(5, 5, std::vector<double>(25, 1.0 / 25));
        check_linear(linear_plan(g, u8.shape(), PixelType::u8), u8, name + " separable", *ex);
        check_linear(linear_plan(g, f32.shape(), PixelType::f32), f32, name + " separable", *ex);
        g.mask = Mask(3, 3, {1, 2, 1, 2, 4, 2, 1, 2, 1});
        g.normalise = Normalise::sum;
        check_linear(linear_plan(g, u8.shape(), PixelType::u16), u8, name + " separable exact", *ex);
        for (const char* shape : {"rect", "ellipse"})
            for (const Image* in : {&u8, &f32}) {
                MorphStep m;
                m.element = element(7, 5, shape);
                m.kind = MorphKind::erode;
                check_morph(morph_plan(m, in->shape()), *in, name + " " + shape, *ex);
            }
    }
    hwy::SetSupportedTargetsForTest(0);
}

// Outputs of 32 MiB and more are written with non-temporal stores; they must hold the same values.
TEST(CpuFast, LargeOutputsMatchReference) {
    const Image f32 = test::random_image(2900, 2900, 1, PixelType::f32, 5);
    const Image u8 = test::random_image(2900, 2900, 1, PixelType::u8, 6);
    LinearStep s;
    s.mask = Mask(3, 1, {0.25, 0.5, 0.25});
    check_linear(linear_plan(s, f32.shape(), PixelType::f32), f32, "large float path");
    s.mask = Mask(1, 2, {1, 3});
    check_linear(linear_plan(s, u8.shape(), PixelType::f32), u8, "large exact path, f32 out");
    MorphStep m;
    m.element = element(2, 2, "rect");
    check_morph(morph_plan(m, f32.shape()), f32, "large dilate");
}

// NaN and infinities in f32 input: a group of rows must not mix a non-finite pixel into rows whose
// mask does not reach it (a zero weight times inf is NaN), and integer outputs store NaN as 0.
TEST(CpuFast, NonFiniteInputsMatchReference) {
    Image in = test::random_image(37, 29, 2, PixelType::f32, 17);
    in.row<float>(3)[10] = NAN;
    in.row<float>(11)[40] = INFINITY;
    in.row<float>(12)[41] = -INFINITY;
    in.row<float>(20)[0] = INFINITY;
    std::mt19937 rng(8);
    for (auto [mw, mh] : {std::pair{5, 5}, std::pair{3, 2}, std::pair{7, 7}})
        for (bool separable : {false, true}) {
            LinearStep s;
            if (separable) s.mask = Mask(mw, mh, std::vector<double>(std::size_t(mw) * mh, 1.0 / (mw * mh)));
            else s.mask = random_mask(mw, mh, false, rng);
            if (!separable)  // zero weights inside the mask: the products a group must not form
                for (std::size_t k = 0; k < s.mask.weights.size(); k += 3) s.mask.weights[k] = 0;
            for (PixelType tout : kTypes) {
                const LinearPlan p = linear_plan(s, in.shape(), tout);
                Image want(in.width(), in.height(), 2, tout), got(in.width(), in.height(), 2, tout);
                reference().linear(p, in.view(), want.view());
                fast().linear(p, in.view(), got.view());
                const double tol = tout == PixelType::f32 ? 1e-5 * p.step.mask.abs_sum() * 2 : 1;
                int bad = 0;
                for (int y = 0; y < in.height(); ++y)
                    for (int x = 0; x < in.width(); ++x)
                        for (int c = 0; c < 2; ++c) {
                            const double a = test::sample_at(cv(want), x, y, c), b = test::sample_at(cv(got), x, y, c);
                            const bool same = std::isnan(a) ? std::isnan(b) : std::isinf(a) ? a == b : std::fabs(a - b) <= tol;
                            if (!same && bad++ < 3) ADD_FAILURE() << describe(p, 37, 29, 2) << " at " << x << "," << y << ": " << a << " vs " << b;
                        }
            }
        }
}

// ---- rows off a cache line, f32 input read in place ----

namespace {

// `in` copied into a view `dx` samples... (dx pixels) into a wider image, so its rows start off any
// vector boundary; `extra` pixels of pitch beyond that (0: a pitch of width + 16 pixels).
struct Offset {
    Image storage;
    ImageView view;
};
Offset offset_view(int w, int h, int c, PixelType t, int dx, int extra = 0) {
    Offset o{Image(w + 16 + extra, h, c, t), {}};
    o.view = o.storage.view().roi(dx, 0, w, h);
    return o;
}
Offset offset_copy(const Image& in, int dx, int extra = 0) {
    Offset o = offset_view(in.width(), in.height(), in.channels(), in.type(), dx, extra);
    for (int y = 0; y < in.height(); ++y) std::memcpy(o.view.row_bytes(y), in.view().row_bytes(y), in.shape().row_bytes());
    return o;
}

// The plan into an aligned output and into outputs (and from inputs) whose rows start 1..15 samples
// past a line: the same bits everywhere (the kernels only move where their vectors start), and the
// reference's where the path is exact.
void check_offsets(const LinearPlan& p, const Image& in, const std::string& what, Executor& ex, int step = 1) {
    Image want(in.width(), in.height(), in.channels(), p.out), ref(in.width(), in.height(), in.channels(), p.out);
    ex.linear(p, in.view(), want.view());
    reference().linear(p, in.view(), ref.view());
    if (p.exact) EXPECT_TRUE(test::identical(cv(want), cv(ref))) << what << ": differs from the reference";
    for (int dx = 1; dx <= 15; dx += step) {
        const int extra = dx % 3 == 0 ? dx : 0;  // pitches that are not a multiple of 64 bytes too
        Offset out = offset_view(in.width(), in.height(), in.channels(), p.out, dx, extra);
        const Offset src = offset_copy(in, 16 - dx, extra);
        ex.linear(p, dx % 2 ? ConstImageView(src.view) : in.view(), out.view);
        EXPECT_TRUE(test::same_samples(cv(want), ConstImageView(out.view)))
            << what << ": output offset " << dx << " differs by " << test::max_abs_diff(cv(want), ConstImageView(out.view));
    }
}

std::vector<LinearPlan> offset_plans(const ImageShape& shape, PixelType out, std::mt19937& rng) {
    std::vector<LinearPlan> plans;
    for (bool integer : {true, false})
        for (auto [mw, mh] : {std::pair{3, 3}, std::pair{5, 4}, std::pair{1, 7}}) {
            LinearStep s;
            s.mask = random_mask(mw, mh, integer, rng);
            s.border = mw == 5 ? BorderMode::constant : BorderMode::mirror;
            s.border_value = 9;
            plans.push_back(linear_plan(s, shape, out));
        }
    LinearStep box;  // separable: the exact running sums, and the float form
    box.mask = Mask(5, 5, std::vector<double>(25, 1.0));
    box.normalise = Normalise::sum;
    plans.push_back(linear_plan(box, shape, out));
    box.mask = Mask(5, 5, {1, 4, 6, 4, 1, 4, 16, 24, 16, 4, 6, 24, 36, 24, 6, 4, 16, 24, 16, 4, 1, 4, 6, 4, 1});
    box.normalise = Normalise::none;
    box.scale = 1.0 / 255.5;
    plans.push_back(linear_plan(box, shape, out));
    return plans;
}

} // namespace

TEST(CpuFast, OutputsAndInputsOffACacheLine) {
    std::mt19937 rng(77);
    int k = 0;
    for (PixelType tin : kTypes)
        for (PixelType tout : kTypes) {
            const int channels = 1 + k % 4, w = 203 + 2 * k;
            const Image in = test::random_image(w, 13, channels, tin, 500 + k++);
            for (const LinearPlan& p : offset_plans(in.shape(), tout, rng))
                check_offsets(p, in, describe(p, w, 13, channels), fast());
        }
}

// Streamed outputs (32 MiB and more) off a line: the rows' heads are written plainly, the rest streamed.
TEST(CpuFast, StreamedOutputsOffACacheLine) {
    const Image f32 = test::random_image(2900, 2900, 1, PixelType::f32, 15);
    std::mt19937 rng(5);
    LinearStep s;
    s.mask = random_mask(3, 3, false, rng);
    s.border = BorderMode::mirror;
    check_offsets(linear_plan(s, f32.shape(), PixelType::f32), f32, "f32 3x3 streamed", fast(), 7);
    const Image u8 = test::random_image(4100, 2900, 3, PixelType::u8, 16);
    LinearStep box;
    box.mask = Mask(5, 5, std::vector<double>(25, 1.0));
    box.normalise = Normalise::sum;
    check_offsets(linear_plan(box, u8.shape(), PixelType::u8), u8, "u8 box streamed", fast(), 7);
}

TEST(CpuFast, OffsetRowsOnEverySimdTarget) {
    std::mt19937 rng(41);
    const Image u8 = test::random_image(211, 9, 3, PixelType::u8, 42), f32 = test::random_image(199, 9, 1, PixelType::f32, 43);
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        auto ex = make_cpu_executor(2);
        const std::string name = hwy::TargetName(target);
        for (const Image* in : {&u8, &f32})
            for (PixelType tout : kTypes)
                for (const LinearPlan& p : offset_plans(in->shape(), tout, rng))
                    check_offsets(p, *in, name + " " + describe(p, in->width(), 9, in->channels()), *ex, 4);
    }
    hwy::SetSupportedTargetsForTest(0);
}

// f32 direct masks read the rows inside the image in place and pad only the border columns: every
// border, masks with and without zero weights, windows wider than the interior, NaN and infinities,
// and the same bits whatever the thread count (strips and bands cut the interior differently).
TEST(CpuFast, F32InPlaceRowsMatchPaddedRows) {
    std::mt19937 rng(3);
    Image in = test::random_image(331, 41, 2, PixelType::f32, 23);
    Image odd = test::random_image(331, 41, 2, PixelType::f32, 23);
    odd.row<float>(5)[100] = NAN;
    odd.row<float>(17)[301] = INFINITY;
    odd.row<float>(30)[0] = -INFINITY;
    odd.row<float>(40)[661] = NAN;
    int k = 0;
    for (auto [mw, mh] : {std::pair{3, 3}, std::pair{7, 5}, std::pair{1, 9}, std::pair{12, 2}, std::pair{40, 3}})
        for (BorderMode b : test::all_borders)
            for (bool zeros : {false, true}) {
                LinearStep s;
                s.mask = random_mask(mw, mh, false, rng);
                if (zeros)
                    for (std::size_t i = 1; i < s.mask.weights.size(); i += 3) s.mask.weights[i] = 0;
                s.border = b;
                s.border_value = k++ % 2 ? 2.5 : INFINITY;
                for (PixelType tout : kTypes) {
                    const LinearPlan p = linear_plan(s, in.shape(), tout);
                    check_linear(p, in, describe(p, 331, 41, 2) + " in place");
                    // Non-finite input: the fast result with one thread is the yardstick (the padded
                    // form's bits, checked against the reference by NonFiniteInputsMatchReference).
                    std::vector<Image> got;
                    for (int threads : {1, 2, 3, 7}) {
                        auto ex = make_cpu_executor(threads);
                        Image out(odd.width(), odd.height(), 2, tout);
                        ex->linear(p, odd.view(), out.view());
                        got.push_back(std::move(out));
                        EXPECT_TRUE(test::same_samples(cv(got.front()), cv(got.back())))
                            << describe(p, 331, 41, 2) << " non-finite, " << threads << " threads";
                    }
                    Image want(odd.width(), odd.height(), 2, tout);
                    reference().linear(p, odd.view(), want.view());
                    int bad = 0;
                    for (int y = 0; y < odd.height(); ++y)
                        for (int x = 0; x < odd.width(); ++x)
                            for (int c = 0; c < 2; ++c) {
                                const double a = test::sample_at(cv(want), x, y, c), g = test::sample_at(cv(got[0]), x, y, c);
                                const double tol = tout == PixelType::f32 ? 1e-5 * p.step.mask.abs_sum() * 2 : 1;
                                const bool same = std::isnan(a) ? std::isnan(g) : std::isinf(a) ? a == g : std::fabs(a - g) <= tol;
                                if (!same && bad++ < 3)
                                    ADD_FAILURE() << describe(p, 331, 41, 2) << " non-finite at " << x << "," << y << ": " << a << " vs " << g;
                            }
                }
            }
}
