// Masks of any finite weights (SPEC.md, "Any finite weights"): 1e38, 1e200, 1e308, 1e-30, 1e-300, the
// subnormal 1e-320, 1e30 beside 1e-30 and 1e200 beside 1e-200, with every normalisation, scales that
// bring the result back to ordinary values, every type pair, on the reference backend and on the CPU
// backend through each path --algo can force (direct, separable, low-rank, FFT), against the float64
// result computed in the test (large_weights_support.hpp). Before the planner scaled float masks to unit
// size, a 3x3 mask of 1e38 with normalize=sum gave 255 everywhere on the CPU (its float sum overflowed),
// 1e200 gave 0 (NaN), the reference itself failed at 1e308, and 1e-300 counted as the zero mask.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "apron/errors.hpp"
#include "apron/pipeline.hpp"
#include "core/low_rank.hpp"
#include "cpu/fft_linear.hpp"
#include "large_weights_support.hpp"
#include "plan/plan.hpp"
#include "plan_support.hpp"

using namespace apron;
using namespace apron::test::large;

namespace {

struct Finish {
    Normalise normalise;
    double scale, delta;
};

// The finishes tried at this magnitude: plain and offset sums, means, book; and a scale of 1/magnitude,
// which brings an unnormalised sum of huge (or tiny) weights back to ordinary values, so that the factor
// folded into the finish is checked to the last digit, not only by saturation.
std::vector<Finish> finishes_at(double magnitude) {
    std::vector<Finish> f = {{Normalise::none, 1, 0}, {Normalise::sum, 1, 0}, {Normalise::sum, 0.5, 3}, {Normalise::book, 1, 0}};
    const double inverse = 1 / magnitude;
    if (magnitude != 1 && std::isfinite(inverse) && std::fabs(inverse) >= DBL_MIN) f.push_back({Normalise::none, inverse, 3});
    return f;
}

struct Types {
    PixelType in, out;
};
constexpr Types type_pairs[] = {{PixelType::u8, PixelType::u8},
                                {PixelType::u16, PixelType::u16},
                                {PixelType::f32, PixelType::f32},
                                {PixelType::u8, PixelType::f32},
                                {PixelType::f32, PixelType::u8}};

struct Size {
    int w, h, c;
};
constexpr Size sizes[] = {{13, 11, 1}, {7, 9, 3}, {1, 1, 1}, {31, 5, 2}};

struct Path {
    Backend backend;
    Algorithm algorithm;
};
constexpr Path paths[] = {{Backend::reference, Algorithm::automatic}, {Backend::cpu, Algorithm::automatic},
                          {Backend::cpu, Algorithm::direct},          {Backend::cpu, Algorithm::separable},
                          {Backend::cpu, Algorithm::low_rank},        {Backend::cpu, Algorithm::fft}};

std::string path_name(Path p) {
    return std::string(to_string(p.backend)) + (p.algorithm == Algorithm::automatic ? "" : std::string(" --algo ") + to_string(p.algorithm));
}

// Whether the forced path must accept the case (float plans of these masks: all of them are).
bool must_accept(Path p, const WeightCase& wc) {
    switch (p.algorithm) {
    case Algorithm::separable: return wc.rank1;
    case Algorithm::low_rank: return wc.rank2;
    case Algorithm::fft: return cpu::fft_available();
    default: return true;
    }
}

LinearStep step_of(const Mask& m, BorderMode border, double value, Finish f) {
    LinearStep s;
    s.mask = m;
    s.border = border;
    s.border_value = value;
    s.normalise = f.normalise;
    s.scale = f.scale;
    s.delta = f.delta;
    return s;
}

const char* normalise_name(Normalise n) { return n == Normalise::none ? "none" : n == Normalise::sum ? "sum" : "book"; }

// Runs the step on every path against the float64 result; counts the runs.
int check_everywhere(const WeightCase& wc, const std::string& magnitude, const std::vector<Finish>& finishes, std::uint32_t& seed) {
    int runs = 0;
    for (const Finish& f : finishes)
        for (Types t : type_pairs) {
            ++seed;
            const Size size = sizes[seed % std::size(sizes)];
            const BorderMode border = test::all_borders[seed % std::size(test::all_borders)];
            const double value = t.in == PixelType::f32 ? 0.75 : 7;
            const Image in = test::random_image(size.w, size.h, size.c, t.in, seed);
            const LinearStep s = step_of(wc.mask, border, value, f);
            for (Path p : paths) {
                const std::string what = wc.name + " x " + magnitude + ", normalize=" + normalise_name(f.normalise) +
                                         " scale=" + number_text(f.scale) + " delta=" + number_text(f.delta) + ", " +
                                         types_of(t.in, t.out) + ", border " + to_string(border) + ", " +
                                         std::to_string(size.w) + "x" + std::to_string(size.h) + "x" + std::to_string(size.c) +
                                         ", " + path_name(p);
                RunOptions o;
                o.backend = p.backend;
                o.out_type = t.out;
                o.algorithm = p.algorithm;
                o.threads = 2;
                runs += run_and_check(s, in, o, must_accept(p, wc), what);
            }
        }
    return runs;
}

} // namespace

// The review's case first: a 3x3 mask of 1e38 (then 1e200, 1e308) with normalize=sum is the plain mean.
TEST(LargeWeights, UniformHugeMaskWithSumIsTheMean) {
    const Image in = test::random_image(9, 7, 1, PixelType::u8, 5);
    for (double v : {1e38, 1e200, 1e308, 1e-300, 1e-320})
        for (Path p : paths) {
            if (p.algorithm == Algorithm::low_rank) continue;  // rank 1: the separable path
            if (p.algorithm == Algorithm::fft && !cpu::fft_available()) continue;
            RunOptions o;
            o.backend = p.backend;
            o.algorithm = p.algorithm;
            const LinearStep s = step_of(Mask(3, 3, std::vector<double>(9, v)), BorderMode::reflect, 0, {Normalise::sum, 1, 0});
            const Image got = pipeline_of(s).run(in, o);
            const Image mean = pipeline_of(step_of(Mask(3, 3, std::vector<double>(9, 1.0)), BorderMode::reflect, 0,
                                                   {Normalise::sum, 1, 0}))
                                   .run(in, {.backend = Backend::reference});
            EXPECT_TRUE(test::identical(got, mean)) << number_text(v) << " on " << path_name(p) << ": differs from the mean by up to "
                                                    << test::max_abs_diff(got, mean);
        }
}

TEST(LargeWeights, EveryPathEveryMagnitude) {
    std::uint32_t seed = 100;
    int runs = 0;
    for (double magnitude : magnitudes())
        for (const WeightCase& wc : masks_at(magnitude, seed))
            runs += check_everywhere(wc, number_text(magnitude), finishes_at(magnitude), seed);
    EXPECT_GT(runs, 2000);
}

TEST(LargeWeights, MixedMagnitudes) {
    std::uint32_t seed = 7;
    int runs = 0;
    for (const WeightCase& wc : mixed_magnitudes())
        runs += check_everywhere(wc, "1", finishes_at(std::fabs(wc.mask.weights[0])), seed);
    EXPECT_GT(runs, 80);
}

// With no normalisation the result of huge weights lies beyond every type: 255 / 65535 / inf (of the
// sum's sign), never NaN, 0 or a wrapped value; a zero image stays 0.
TEST(LargeWeights, UnnormalisedHugeSumsSaturate) {
    for (double v : {1e38, 1e200, 1e308})
        for (Path p : paths) {
            if (p.algorithm == Algorithm::low_rank || (p.algorithm == Algorithm::fft && !cpu::fft_available())) continue;
            RunOptions o;
            o.backend = p.backend;
            o.algorithm = p.algorithm;
            Image in(5, 4, 1, PixelType::u8);
            for (int y = 0; y < 4; ++y)
                for (int x = 0; x < 5; ++x) in.row<std::uint8_t>(y)[x] = std::uint8_t(1 + x + y);
            for (double sign : {1.0, -1.0}) {
                const LinearStep s = step_of(Mask(3, 3, std::vector<double>(9, sign * v)), BorderMode::nearest, 0, {Normalise::none, 1, 0});
                const std::string what = number_text(sign * v) + " on " + path_name(p);
                o.out_type = PixelType::u8;
                const Image u8 = pipeline_of(s).run(in, o);
                o.out_type = PixelType::f32;
                const Image f32 = pipeline_of(s).run(in, o);
                for (int y = 0; y < 4; ++y)
                    for (int x = 0; x < 5; ++x) {
                        EXPECT_EQ(u8.row<std::uint8_t>(y)[x], sign > 0 ? 255 : 0) << what;
                        EXPECT_EQ(f32.row<float>(y)[x], sign * std::numeric_limits<float>::infinity()) << what;
                    }
                o.out_type = PixelType::f32;
                Image blank(5, 4, 1, PixelType::u8);
                for (int y = 0; y < 4; ++y) std::fill_n(blank.row<std::uint8_t>(y), 5, std::uint8_t(0));
                const Image zero = pipeline_of(s).run(blank, o);
                EXPECT_EQ(test::max_abs(zero), 0.0) << what << " on a zero image";
            }
        }
}

// Huge integral weights are no integer mask (no int64 holds 1e38; the exact sums would pass 2^53), and
// tiny weights that round to zero are no zero mask: both go to the float path, quickly.
TEST(LargeWeights, IntegerFormRefusesWhatItCannotHold) {
    const auto start = std::chrono::steady_clock::now();
    for (double v : {1e38, 1e300, 0x1p62, 9.5e15})
        EXPECT_FALSE(integer_form(Mask(3, 3, std::vector<double>(9, v)))) << v;
    EXPECT_FALSE(integer_form(Mask(3, 1, {1, 1e38, 1})));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.5);
    for (double v : {1e-15, 1e-300, 1e-320}) EXPECT_FALSE(integer_form(Mask(3, 3, std::vector<double>(9, v)))) << v;
    // Still integer masks: a negligible weight beside integers, and integers up to 2^52 in all.
    const auto beside = integer_form(Mask(3, 1, {1, 1e-17, 2}));
    ASSERT_TRUE(beside);
    EXPECT_EQ(beside->weights, (std::vector<std::int64_t>{1, 0, 2}));
    EXPECT_TRUE(integer_form(Mask(2, 1, {0x1p50, 0x1p50})));
    // Rank-1 factors whose products would pass 2^63 where the mask is not of rank 1.
    const auto im = integer_form(Mask(2, 2, {1, 0x1p40, 0x1p40, 3}));
    ASSERT_TRUE(im);
    EXPECT_FALSE(integer_separable_form(*im, 2, 2));
    const auto big = integer_form(Mask(2, 2, {0x1p20, 0x1p40, 1, 0x1p20}));
    ASSERT_TRUE(big);
    const auto sep = integer_separable_form(*big, 2, 2);
    ASSERT_TRUE(sep);
    for (int j = 0; j < 2; ++j)
        for (int i = 0; i < 2; ++i) EXPECT_EQ(sep->column[std::size_t(j)] * sep->row[std::size_t(i)], big->weights[std::size_t(j) * 2 + i]);
}

// The SVD sees the mask scaled by a power of two: the same terms (scaled) at any magnitude.
TEST(LargeWeights, LowRankFormAtAnyMagnitude) {
    const Mask base = masks_at(1, 11)[2].mask;  // rank 2
    const auto unit = low_rank_form(base, 8);
    ASSERT_TRUE(unit);
    ASSERT_EQ(unit->terms.size(), 2u);
    for (double magnitude : {0x1p600, 0x1p-600, 0x1p1000, 0x1p-1000}) {
        std::vector<double> w = base.weights;
        for (double& x : w) x *= magnitude;
        const Mask m(base.width, base.height, w);
        const auto form = low_rank_form(m, 8);
        ASSERT_TRUE(form) << magnitude;
        ASSERT_EQ(form->terms.size(), 2u) << magnitude;
        double worst = 0, largest = 0;
        for (int j = 0; j < m.height; ++j)
            for (int i = 0; i < m.width; ++i) {
                double v = 0;
                for (const auto& t : form->terms) v += t.column[std::size_t(j)] * t.row[std::size_t(i)];
                worst = std::max(worst, std::fabs(v - m.at(i, j)));
                largest = std::max(largest, std::fabs(m.at(i, j)));
            }
        EXPECT_LE(worst, 1e-10 * largest) << magnitude;
    }
}

// What the planner hands the executors: a float mask of unit size, the factor in the finish where it is
// a normal float, else raw f32 sums and one combine step that applies it in double.
TEST(LargeWeights, PlanCarriesTheFactorInTheFinish) {
    const ImageShape shape{9, 9, 1, PixelType::u8};
    auto plan = [&](double v, Normalise n, double scale = 1) {
        OpProgram op = test::correlation_op(Mask(3, 3, std::vector<double>(9, v)), BorderMode::reflect, 0, n, scale);
        return make_plan({op}, shape, PixelType::u8, Backend::cpu).operations.at(0).steps;
    };
    for (double v : {1e38, 1e200, 1e308, 1e-300, 1e-320}) {
        const auto steps = plan(v, Normalise::sum);
        ASSERT_EQ(steps.size(), 1u) << v;  // a mean: the factor cancels
        const LinearPlan& p = std::get<LinearPlan>(steps[0].what);
        EXPECT_FALSE(p.exact);
        double largest = 0;
        for (double w : p.step.mask.weights) largest = std::max(largest, std::fabs(w));
        EXPECT_GE(largest, 0.5) << v;
        EXPECT_LT(largest, 1.0) << v;
        EXPECT_NEAR(p.finish.mul * p.step.mask.sum(), 1.0, 1e-15) << v;
    }
    const auto none38 = plan(1e38, Normalise::none);  // 2^127: still a float
    ASSERT_EQ(none38.size(), 1u);
    EXPECT_EQ(std::get<LinearPlan>(none38[0].what).finish.mul, 0x1p127);
    for (auto [v, factor] : {std::pair{1e200, 0x1p665}, {1e-200, 0x1p-664}, {1e308, std::numeric_limits<double>::infinity()}}) {
        const auto steps = plan(v, Normalise::none);
        ASSERT_EQ(steps.size(), 2u) << v;
        const LinearPlan& p = std::get<LinearPlan>(steps[0].what);
        EXPECT_EQ(p.out, PixelType::f32);
        EXPECT_EQ(p.finish.mul, 1.0);
        const CombinePlan& c = std::get<CombinePlan>(steps[1].what);
        EXPECT_EQ(c.out, PixelType::u8);
        EXPECT_EQ(steps[1].input, 0);
        EXPECT_EQ(c.step.a, std::isinf(factor) ? DBL_MAX : factor) << v;
    }
    const auto back = plan(1e200, Normalise::none, 1e-200);  // the scale brings it back: one float
    ASSERT_EQ(back.size(), 1u);
    EXPECT_NEAR(std::get<LinearPlan>(back[0].what).finish.mul, 0x1p665 * 1e-200, 1e-15);
}

// Low-rank plans whose multiplier is far past float's range add their raw terms before one combine scales
// them; a multiplier past the largest double is clamped and still saturates.
TEST(LargeWeights, LowRankSumsBeforeAHugeMultiplier) {
    const Mask base = masks_at(1, 11)[2].mask;
    for (double magnitude : {1e300, 1e250}) {
        std::vector<double> w = base.weights;
        for (double& x : w) x *= magnitude;
        const Mask m(base.width, base.height, w);
        for (double scale : {1.0, 1e300, 1 / magnitude}) {
            const LinearStep s = step_of(m, BorderMode::wrap, 0, {Normalise::none, scale, 0});
            const Image in = test::random_image(11, 9, 1, PixelType::f32, 3);
            for (PixelType out : {PixelType::f32, PixelType::u8}) {
                RunOptions o;
                o.backend = Backend::cpu;
                o.algorithm = Algorithm::low_rank;
                o.out_type = out;
                const Image got = pipeline_of(s).run(in, o);
                expect_within_spec(s, in.view(), got.view(), "low-rank " + number_text(magnitude) + " scale " + number_text(scale));
            }
        }
    }
}
