#pragma once
// NaN and nodata in linear filters (SPEC.md "NaN and nodata in linear filters"), restated for the tests
// (tests/test_nan_linear.cpp on the host backends, tests/gpu_test_nan_linear.cpp on CUDA): its own border
// indexing and sums in double over the valid taps, images with NaN and nodata holes, and the checks both
// suites run on their backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/io.hpp"
#include "apron/ops.hpp"
#include "plan/plan.hpp"
#include "apron/pipeline.hpp"
#include "apron/stream.hpp"
#include "core/dispatch.hpp"
#include "test_io_support.hpp"
#include "test_support.hpp"

namespace apron::nantest {

inline const float nan_v = std::numeric_limits<float>::quiet_NaN();
constexpr double min_valid_fraction = 1e-4;  // SPEC.md: nan=ignore's threshold

// ---- the restatement --------------------------------------------------------------------------------

// Index of coordinate i on an axis of n samples; -1 for the constant border.
inline int axis_index(long long i, int n, BorderMode border) {
    if (i >= 0 && i < n) return int(i);
    switch (border) {
    case BorderMode::nearest: return i < 0 ? 0 : n - 1;
    case BorderMode::wrap: return int(((i % n) + n) % n);
    case BorderMode::reflect: {
        const long long p = 2LL * n, m = ((i % p) + p) % p;
        return int(m < n ? m : p - 1 - m);
    }
    case BorderMode::mirror: {
        if (n == 1) return 0;
        const long long p = 2LL * n - 2, m = ((i % p) + p) % p;
        return int(m < n ? m : p - m);
    }
    default: return -1;
    }
}

struct Filter {
    int w = 1, h = 1;
    std::vector<double> weights;  // row by row, correlation form, centre (w/2, h/2)
    BorderMode border = BorderMode::reflect;
    double value = 0;
    bool normalise_sum = false;
    double scale = 1, delta = 0;
    double at(int i, int j) const { return weights[std::size_t(j) * w + i]; }
    double sum() const {
        double s = 0;
        for (double v : weights) s += v;
        return s;
    }
    double abs_sum() const {
        double s = 0;
        for (double v : weights) s += std::fabs(v);
        return s;
    }
};

struct NanOptions {
    std::string mode = "propagate";  // propagate, ignore, fill
    double fill = 0;
    bool preserve = false;
    std::optional<double> nodata;
};

// One expected output sample: missing, or a value with the tolerance it is checked to.
struct Expected {
    bool missing = false;
    bool near_threshold = false;  // the valid weight within the FFT's rounding of the threshold: either way
    double value = 0, tolerance = 0;
};

inline bool is_missing(double v, PixelType t, const NanOptions& o) {
    if (std::isnan(v)) return true;
    if (!o.nodata) return false;
    const double nd = t == PixelType::f32 ? double(float(*o.nodata)) : *o.nodata;
    return v == nd;
}

inline std::vector<Expected> restate(const Image& in, const Filter& f, const NanOptions& o) {
    std::vector<Expected> out;
    const int W = in.width(), H = in.height(), C = in.channels();
    const double sum_w = f.sum(), abs_w = f.abs_sum();
    // SPEC's tolerances are relative to the largest magnitude the sums read: the image's valid samples, the
    // border value and the fill value.
    double largest = std::max({1.0, std::fabs(f.value), o.mode == "fill" ? std::fabs(o.fill) : 0.0});
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x)
            for (int c = 0; c < C; ++c)
                if (const double s = test::sample_at(in.view(), x, y, c); !is_missing(s, in.type(), o))
                    largest = std::max(largest, std::fabs(s));
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x)
            for (int c = 0; c < C; ++c) {
                Expected e;
                double S = 0, valid_w = 0;
                bool any_missing = false;
                for (int j = 0; j < f.h; ++j)
                    for (int i = 0; i < f.w; ++i) {
                        const double wt = f.at(i, j);
                        if (wt == 0) continue;
                        const int sx = axis_index(x + i - f.w / 2, W, f.border), sy = axis_index(y + j - f.h / 2, H, f.border);
                        double s;
                        bool missing = false;
                        if (sx < 0 || sy < 0) {
                            s = f.value;  // the constant border is a valid sample
                        } else {
                            s = test::sample_at(in.view(), sx, sy, c);
                            missing = is_missing(s, in.type(), o);
                        }
                        if (missing) {
                            any_missing = true;
                            if (o.mode != "fill") continue;
                            s = o.fill;
                        }
                        S += wt * s;
                        valid_w += wt;
                    }
                double n = S;  // the sum, normalised over the valid weights for ignore
                double q = 1;  // the tolerance's growth: sum |w| / |valid w|
                if (o.mode == "propagate" && any_missing) {
                    e.missing = true;
                } else if (o.mode == "ignore") {
                    const double signed_w = sum_w < 0 ? -valid_w : valid_w;
                    e.missing = !(signed_w > min_valid_fraction * abs_w);
                    e.near_threshold = std::fabs(signed_w - min_valid_fraction * abs_w) < 2e-5 * abs_w;
                    if (!e.missing) {
                        n = S * sum_w / valid_w;
                        q = abs_w / std::fabs(valid_w);
                    }
                }
                if (o.preserve && is_missing(test::sample_at(in.view(), x, y, c), in.type(), o)) e.missing = true;
                const double k = f.normalise_sum ? f.scale / sum_w : f.scale;
                e.value = k * n + f.delta;
                e.tolerance = 1e-5 * std::fabs(k) * abs_w * largest * q * (1 + q) + 1e-6 * std::max(1.0, std::fabs(e.value));
                out.push_back(e);
            }
    return out;
}

inline std::string spec_text(const std::string& base, const NanOptions& o, const Filter& f) {
    std::string s = base + ",border=" + to_string(f.border);
    if (f.border == BorderMode::constant) s += ",value=" + std::to_string(int(f.value));
    if (o.mode == "fill") s += ",nan=fill:" + std::to_string(o.fill);
    else s += ",nan=" + o.mode;
    if (o.preserve) s += ",preserve_nan=1";
    if (o.nodata) s += ",nodata=" + std::to_string(*o.nodata);
    return s;
}

// `got` against the restatement: missing outputs are NaN in f32 and nodata (else 0) in an integer output.
inline void expect_matches(const Image& got, const std::vector<Expected>& want, const NanOptions& o, const std::string& what) {
    const PixelType t = got.type();
    int bad = 0, k = 0;
    for (int y = 0; y < got.height(); ++y)
        for (int x = 0; x < got.width(); ++x)
            for (int c = 0; c < got.channels(); ++c, ++k) {
                const Expected& e = want[std::size_t(k)];
                if (e.near_threshold) continue;
                const double v = test::sample_at(got.view(), x, y, c);
                bool ok;
                if (t == PixelType::f32) {
                    ok = e.missing ? std::isnan(v) : !std::isnan(v) && std::fabs(v - double(float(e.value))) <= e.tolerance;
                } else if (e.missing) {
                    ok = v == (o.nodata ? *o.nodata : 0.0);
                } else {
                    const double rounded = std::clamp(std::nearbyint(e.value), 0.0, type_max(t));
                    ok = std::fabs(v - rounded) <= 1 + e.tolerance;
                }
                if (!ok && bad++ < 3)
                    ADD_FAILURE() << what << " at (" << x << "," << y << "," << c << "): want "
                                  << (e.missing ? std::string("missing") : std::to_string(e.value)) << " +- " << e.tolerance
                                  << ", got " << v;
            }
    EXPECT_EQ(bad, 0) << what;
}

// ---- images -------------------------------------------------------------------------------------------

// Random samples with a hole larger than every mask here (windows with no valid sample), smaller holes and
// scattered missing samples: NaN in f32, `nodata` in u8 / u16 (and in f32 too when given).
inline Image holed(int w, int h, int c, PixelType t, std::optional<double> nodata, std::uint32_t seed) {
    Image img = test::random_image(w, h, c, t, seed);
    std::mt19937 rng(seed);
    const double hole = t == PixelType::f32 && !(nodata && seed % 2) ? double(nan_v) : nodata.value_or(0);
    auto put = [&](int x, int y, int k) {
        with_type(t, [&]<class T>() { img.row<T>(y)[std::size_t(x) * c + k] = T(hole); });
    };
    for (int n = 0; n < w * h / 12; ++n) put(int(rng() % unsigned(w)), int(rng() % unsigned(h)), int(rng() % unsigned(c)));
    for (int y = 3; y < std::min(h, 17); ++y)  // 14 x 14
        for (int x = 5; x < std::min(w, 19); ++x)
            for (int k = 0; k < c; ++k) put(x, y, k);
    for (int y = h - 4; y < h - 1; ++y)  // 3 x 3 near the bottom edge
        for (int x = w - 5; x < w - 2; ++x) put(x, y, 0);
    return img;
}

inline Filter gaussian_filter(double sigma) {
    const int r = int(std::ceil(3 * sigma));
    std::vector<double> k(std::size_t(2 * r + 1));
    double s = 0;
    for (int x = -r; x <= r; ++x) s += k[std::size_t(x + r)] = std::exp(-0.5 * x * x / (sigma * sigma));
    Filter f;
    f.w = f.h = 2 * r + 1;
    for (int j = 0; j <= 2 * r; ++j)
        for (int i = 0; i <= 2 * r; ++i) f.weights.push_back(k[std::size_t(j)] / s * k[std::size_t(i)] / s);
    return f;
}

inline Mask mask_of(const Filter& f) { return Mask(f.w, f.h, f.weights); }

// The op through the registry with `f`'s weights as the mask parameter (as the Python bindings pass arrays).
inline OpProgram correlate(const Filter& f, const NanOptions& o) {
    std::string spec = "correlate:mask=given";
    if (f.normalise_sum) spec += ",normalize=sum";
    if (f.scale != 1) spec += ",scale=" + std::to_string(f.scale);
    if (f.delta != 0) spec += ",delta=" + std::to_string(f.delta);
    return parse_operation(spec_text(spec, o, f), GivenMasks{{"mask", mask_of(f)}});
}

inline Image run(const OpProgram& op, const Image& in, Backend b, std::optional<PixelType> out = {},
          Algorithm algorithm = Algorithm::automatic) {
    Pipeline p;
    p.add(op);
    return p.run(in, {.backend = b, .threads = 2, .out_type = out, .algorithm = algorithm});
}

// Missing outputs at the same places, and the other samples within `tolerance` (f32).
inline void expect_close(const Image& a, const Image& b, double tolerance, const std::string& what) {
    ASSERT_EQ(a.shape(), b.shape()) << what;
    int bad = 0;
    for (int y = 0; y < a.height(); ++y)
        for (int x = 0; x < a.width(); ++x)
            for (int c = 0; c < a.channels(); ++c) {
                const double p = test::sample_at(a.view(), x, y, c), q = test::sample_at(b.view(), x, y, c);
                const bool ok = (std::isnan(p) && std::isnan(q)) || std::fabs(p - q) <= tolerance;
                if (!ok && bad++ < 3) ADD_FAILURE() << what << " at (" << x << "," << y << "," << c << "): " << p << " vs " << q;
            }
    EXPECT_EQ(bad, 0) << what;
}

inline const BorderMode kBorders[] = {BorderMode::constant, BorderMode::nearest, BorderMode::reflect, BorderMode::mirror,
                               BorderMode::wrap};

// `base` with `key` set to `value`, replacing the key's item if it has one.
inline std::string with_param(const std::string& base, const std::string& key, const std::string& value) {
    OperationText op = split_operation(base);
    op.has_parameters = true;
    bool replaced = false;
    for (auto& item : op.items)
        if (item.first == key) item.second = value, replaced = true;
    if (!replaced) op.items.push_back({key, value});
    return join_operation(op);
}

struct MaskCase {
    std::string name;
    Filter f;
};

inline std::vector<MaskCase> mask_cases() {
    std::vector<MaskCase> cases;
    cases.push_back({"gaussian 1.5", gaussian_filter(1.5)});
    Filter box;
    box.w = 5, box.h = 3;
    box.weights.assign(15, 1.0 / 15);
    cases.push_back({"box 5x3", box});
    Filter odd;  // asymmetric, positive, even size, not normalised
    odd.w = 4, odd.h = 3;
    odd.weights = {1, 2, 0, 3, 0.5, 4, 1, 2, 3, 0, 1, 2};
    odd.scale = 0.5;
    odd.delta = 7;
    cases.push_back({"asymmetric 4x3", odd});
    Filter sharpen;  // mixed signs, sum 1
    sharpen.w = sharpen.h = 3;
    sharpen.weights = {0, -1, 0, -1, 5, -1, 0, -1, 0};
    cases.push_back({"sharpen", sharpen});
    Filter negative;  // a negative sum, normalised by it
    negative.w = 3, negative.h = 1;
    negative.weights = {-1, -2, -1};
    negative.normalise_sum = true;
    cases.push_back({"negative 3x1 normalize=sum", negative});
    return cases;
}

// The registry's linear operations with each mode against the restatement on `backend` and the reference:
// the op's own weights, border and value are read from its program (step 1, the sum of the filled image),
// on f32 images with NaN holes and u16 / u8 images with nodata holes, whatever path the planner picks.
inline void expect_operations_match_restatement(Backend backend) {
    const Image f32 = holed(150, 110, 3, PixelType::f32, {}, 21);
    const Image u16 = holed(131, 97, 1, PixelType::u16, 9, 22);
    const Image u8 = holed(129, 77, 4, PixelType::u8, 9, 23);
    struct Case {
        const char* spec;
        const char* mode;
        double fill;
        bool preserve;
    };
    for (const Case& c : {Case{"gaussian:sigma=5,nan=ignore", "ignore", 0, false},
                          Case{"gaussian:sigma=2,nan=ignore,preserve_nan=1,border=wrap", "ignore", 0, true},
                          Case{"box:width=9,height=5,nan=ignore,border=constant,value=2", "ignore", 0, false},
                          Case{"gaussian:sigma=2,nan=fill:1", "fill", 1, false},
                          Case{"sharpen:nan=ignore,border=mirror", "ignore", 0, false},
                          Case{"emboss:nan=ignore,preserve_nan=1", "ignore", 0, true},
                          Case{"xf-lowpass:nan=ignore,border=nearest", "ignore", 0, false},
                          Case{"sobel:dx=1,nan=fill:0.5,preserve_nan=1", "fill", 0.5, true}}) {
        for (const Image* in : {&f32, &u16, &u8}) {
            NanOptions o;
            o.mode = c.mode, o.fill = c.fill, o.preserve = c.preserve;
            if (in != &f32) o.nodata = 9;
            const std::string spec = std::string(c.spec) + (o.nodata ? ",nodata=9" : "");
            const OpProgram op = parse_operation(spec);
            const auto& data = std::get<LinearStep>(op.steps.at(1).action);
            Filter f;
            f.w = data.mask.width, f.h = data.mask.height;
            f.weights.assign(data.mask.weights.begin(), data.mask.weights.end());
            f.border = data.border;
            f.value = data.border_value;
            const std::vector<Expected> want = restate(*in, f, o);
            for (PixelType out : {in->type(), PixelType::f32})
                for (Backend b : {Backend::reference, backend})
                    expect_matches(run(op, *in, b, out), want, o,
                                   spec + " " + to_string(b) + " " + to_string(in->type()) + "->" + to_string(out));
        }
    }
}

// ---- the checks both suites run -------------------------------------------------------------------------

// Every mask case, border, input type and preserve_nan against the restatement, nodata on the integer
// images and on every other f32 one (images of width .. width + 2 by `height`, seeds from `seed`): each run
// on `backends` to the input's type and to f32 with each of `algorithms`. A forced path a backend does not
// take for the plan is passed over, and the reference, which sums directly, runs no FFT.
inline void sweep_restatement(const std::string& mode, double fill, int width, int height, std::uint32_t seed,
                              std::initializer_list<Backend> backends, std::initializer_list<Algorithm> algorithms) {
    int k = 0;
    for (const MaskCase& mc : mask_cases())
        for (BorderMode border : kBorders)
            for (PixelType t : {PixelType::f32, PixelType::u8, PixelType::u16})
                for (bool preserve : {false, true}) {
                    Filter f = mc.f;
                    f.border = border;
                    f.value = border == BorderMode::constant ? 9 : 0;
                    NanOptions o;
                    o.mode = mode;
                    o.fill = fill;
                    o.preserve = preserve;
                    if (t != PixelType::f32 || k % 2) o.nodata = t == PixelType::u16 ? 65535 : t == PixelType::u8 ? 3 : -9999;
                    const Image in = holed(width + k % 3, height, 1 + k % 3, t, o.nodata, seed + unsigned(k));
                    ++k;
                    const std::vector<Expected> want = restate(in, f, o);
                    const OpProgram op = correlate(f, o);
                    for (Backend b : backends)
                        for (PixelType out : {t, PixelType::f32})
                            for (Algorithm a : algorithms) {
                                if (a == Algorithm::fft && b == Backend::reference) continue;  // the reference sums directly
                                const std::string what = std::string(to_string(b)) + " " + mc.name + " " + spec_text("", o, f) +
                                                         " " + to_string(t) + "->" + to_string(out) + " algo " + to_string(a);
                                Image got;
                                try {
                                    got = run(op, in, b, out, a);
                                } catch (const Error& e) {  // a path the backend does not take for this plan
                                    if (a == Algorithm::fft && std::string(e.what()).rfind("--algo", 0) == 0) continue;
                                    throw;
                                }
                                expect_matches(got, want, o, what);
                            }
                }
}

// Each pointwise form of the combine step (fill, valid, ratio, mark) on every type pair stores the
// reference's bits on the backend under test: `combine` runs the plan there on `a` and `b` (null where the
// form reads no second image).
inline void expect_pointwise_forms_give_reference_bits(
    const std::function<Image(const CombinePlan& p, const Image& a, const Image* b)>& combine) {
    const auto reference = make_reference_executor();
    const std::vector<CombineStep> steps = {
        CombineStep{1, 0, 0, CombineForm::fill, true, 7},     CombineStep{1, 0, 2.5, CombineForm::fill, false, 0},
        CombineStep{1, 0, 0, CombineForm::valid, true, 7},    CombineStep{1, 0, 0, CombineForm::valid, false, 0},
        CombineStep{1, 1e-4, 3, CombineForm::ratio, true, 7}, CombineStep{0.7, 0.2, -1, CombineForm::ratio, false, 0},
        CombineStep{1, 1, 0, CombineForm::mark, true, 7},     CombineStep{1, 0, 0, CombineForm::mark, true, 7},
        CombineStep{1, 1, 0, CombineForm::mark, false, 0}};
    const PixelType types[] = {PixelType::u8, PixelType::u16, PixelType::f32};
    std::uint32_t seed = 5;
    for (const CombineStep& s : steps)
        for (PixelType ta : types)
            for (PixelType tb : types)
                for (PixelType tout : types) {
                    Image a = holed(37, 13, 2, ta, 7, seed++), b = holed(37, 13, 2, tb, 7, seed++);
                    if (tb == PixelType::f32)  // weights in -1..2 and a few zeros
                        for (int y = 0; y < 13; y += 4) b.row<float>(y)[y] = 0;
                    const CombinePlan p{s, ta, tb, tout};
                    Image want(37, 13, 2, tout);
                    reference->combine(p, a.view(), s.b != 0 ? ConstImageView(b.view()) : ConstImageView{}, want.view());
                    const Image got = combine(p, a, s.b != 0 ? &b : nullptr);
                    EXPECT_TRUE(test::same_samples(want, got)) << to_string(s.form) << " " << to_string(ta) << ","
                                                               << to_string(tb) << "->" << to_string(tout);
                }
}

// Streamed bands of 7 and 16 rows on `backend` give the bits of the whole image's run, for each of `specs`
// on an f32 image with NaN holes (PFM) and a u16 one with nodata 1 (PGM), with each of `algorithms` (the
// FFT passed over for sobel, which it does not take).
inline void expect_streamed_bands_give_whole_images_bits(Backend backend, std::initializer_list<const char*> specs,
                                                         std::initializer_list<Algorithm> algorithms) {
    iotest::ScratchDir dir;
    const Image f32 = holed(64, 90, 1, PixelType::f32, {}, 31);
    const Image u16 = holed(57, 83, 1, PixelType::u16, 1, 32);
    write_image(dir.file("in.pfm"), f32);
    write_image(dir.file("in.pgm"), u16);
    int n = 0;
    for (const char* spec : specs)
        for (Algorithm a : algorithms)
            for (const char* input : {"in.pfm", "in.pgm"}) {
                if (a == Algorithm::fft && std::string(spec).rfind("sobel", 0) == 0) continue;
                const Pipeline p({spec});
                const Image& in = std::string(input) == "in.pfm" ? f32 : u16;
                const Image whole = p.run(in, {.backend = backend, .algorithm = a});
                for (int rows : {7, 16}) {
                    StreamOptions o;
                    o.run.backend = backend;
                    o.run.algorithm = a;
                    o.band_rows = rows;
                    const std::string out = dir.file("out" + std::to_string(n++) + (input[4] == 'f' ? ".pfm" : ".pgm"));
                    stream_filter(dir.file(input), out, p, o);
                    EXPECT_TRUE(test::same_samples(read_image(out), whole)) << spec << " " << input << " rows " << rows
                                                                            << (a == Algorithm::fft ? " fft" : "");
                }
            }
}

} // namespace apron::nantest
