// The 32-bit exact finish (what GPU kernels use for sums below 2^24) against the 64-bit one, and the
// planner's folding of power-of-two scales into the denominator.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "apron/ops.hpp"
#include "core/linear_finish.hpp"
#include "core/pixel.hpp"
#include "plan/plan.hpp"

using namespace apron;

namespace {

bool f_is_pow2(std::int64_t d) { return (d & (d - 1)) == 0; }

LinearFinish integer_finish(std::int64_t denominator, std::int64_t offset, std::int64_t delta) {
    LinearFinish f;
    f.denominator = denominator;
    f.inverse_denominator = 1.0 / double(denominator);
    f.offset = offset;
    f.delta_int = delta;
    f.integer_rounding = true;
    f.fits_int32 = true;
    f.power_of_two = (denominator & (denominator - 1)) == 0;
    return f;
}

} // namespace

TEST(Finish, Exact32EqualsExact64) {
    std::mt19937 rng(42);
    for (int trial = 0; trial < 200000; ++trial) {
        const std::int64_t d = trial % 3 == 0 ? 1 + rng() % 16 : 1 + rng() % (1 << 20);
        std::int64_t offset = trial % 5 == 0 ? std::int64_t(rng() % 4096) * (d % (1 << 16)) : 0;  // < 2^30
        if (f_is_pow2(d)) offset %= (1 << 23);
        const std::int64_t delta = int(rng() % 512) - 256;
        int isum = int(rng() % (1 << 25)) - (1 << 24);
        if (f_is_pow2(d)) isum /= 2;  // the power-of-two form needs |isum + offset| < 2^24
        const LinearFinish f = integer_finish(d, offset, delta);
        ASSERT_EQ(finish_exact32<std::uint8_t>(isum, f), finish_exact<std::uint8_t>(isum, f)) << isum << " / " << d;
        ASSERT_EQ(finish_exact32<std::uint16_t>(isum, f), finish_exact<std::uint16_t>(isum, f)) << isum << " / " << d;
    }
    // Exact halves round to even, on both sides of zero.
    for (std::int64_t d : {2, 8, 6})
        for (int isum : {-5, -3, -1, 1, 3, 5, 7, 9, 11, 13, 15, 27, 33}) {
            const LinearFinish f = integer_finish(d, 0, 100);
            EXPECT_EQ(finish_exact32<std::uint8_t>(isum, f), finish_exact<std::uint8_t>(isum, f)) << isum << "/" << d;
        }
}

// The float-only finish of the GPU kernels (finish_exact_f32) against the 64-bit one: power-of-two and other
// denominators, offsets, even and odd deltas, sums up to the 2^22 its flag allows, exact ties on both sides of
// zero, and both saturations.
TEST(Finish, FloatFormEqualsExact64) {
    std::mt19937 rng(7);
    auto check = [](int isum, const LinearFinish& f) {
        ASSERT_EQ(finish_exact_f32<std::uint8_t>(float(isum), f), finish_exact<std::uint8_t>(isum, f))
            << isum << " + " << f.offset << " / " << f.denominator << " + " << f.delta_int;
        ASSERT_EQ(finish_exact_f32<std::uint16_t>(float(isum), f), finish_exact<std::uint16_t>(isum, f))
            << isum << " + " << f.offset << " / " << f.denominator << " + " << f.delta_int;
    };
    for (int trial = 0; trial < 400000; ++trial) {
        const int shape = trial % 4;
        const std::int64_t d = shape == 0 ? 1 + rng() % 32 : shape == 1 ? std::int64_t(1) << (rng() % 22)
                                                                         : 1 + rng() % ((1 << 22) - 1);
        const std::int64_t offset = trial % 5 == 0 ? std::int64_t(rng() % (1 << 20)) - (1 << 19) : 0;
        const std::int64_t delta = trial % 7 == 0 ? std::int64_t(rng() % (1 << 22)) - (1 << 21) : int(rng() % 512) - 256;
        const int span = (1 << 22) - 1 - int(std::llabs(offset));
        int isum = int(rng() % (2u * unsigned(span) + 1)) - span;
        if (shape == 0) isum %= 4096;  // small quotients: the clamps and the ties matter
        LinearFinish f = integer_finish(d, offset, delta);
        f.f32_exact = true;
        check(isum, f);
    }
    // Exact halves: n / d = k + 1/2 for even d, positive and negative, with and without a delta.
    for (std::int64_t d : {2, 4, 6, 10, 12, 50, 1022, 4194302})
        for (int k = -40; k <= 40; ++k)
            for (std::int64_t delta : {0, 1, 100, -3}) {
                LinearFinish f = integer_finish(d, 0, delta);
                f.f32_exact = true;
                const std::int64_t n2 = (2 * std::int64_t(k) + 1) * d;  // 2n
                if (std::llabs(n2 / 2) < (1 << 22)) check(int(n2 / 2), f);
            }
    // Outside the flag it is finish_exact32.
    LinearFinish f = integer_finish(3, 0, 0);
    for (int isum : {-(1 << 24) + 1, -7, 0, 7, (1 << 24) - 1}) check(isum, f);
}

TEST(Finish, PlannerMarksTheFloatFormWhereItIsExact) {
    auto finish_of = [](const std::string& spec, PixelType t) {
        const ExecutionPlan plan = make_plan({parse_operation(spec)}, ImageShape{8, 8, 3, t}, t, Backend::cpu);
        return std::get<LinearPlan>(plan.operations[0].steps[0].what).finish;
    };
    EXPECT_TRUE(finish_of("box:width=5", PixelType::u8).f32_exact);
    EXPECT_TRUE(finish_of("sharpen", PixelType::u8).f32_exact);
    EXPECT_TRUE(finish_of("box:width=5", PixelType::u16).f32_exact);
    // u16 through a 127 x 127 box: sums up to 2^30, beyond the float form (and the f32 accumulator).
    EXPECT_FALSE(finish_of("box:width=127", PixelType::u16).f32_exact);
}

TEST(Finish, PowerOfTwoScalesBecomeIntegerDivisions) {
    for (double scale : {0.5, 0.125, 1.0 / 1024}) {
        OpProgram op{"box", {Step{LinearStep{Mask(3, 3, std::vector<double>(9, 1.0)), BorderMode::reflect, 0,
                                             Normalise::none, scale, 3}}}};
        const ExecutionPlan plan = make_plan({op}, ImageShape{8, 8, 1, PixelType::u8}, PixelType::u8, Backend::cpu);
        const auto& lp = std::get<LinearPlan>(plan.operations[0].steps[0].what);
        EXPECT_TRUE(lp.finish.integer_rounding) << scale;
        EXPECT_TRUE(lp.finish.fits_int32) << scale;
        EXPECT_TRUE(lp.finish.power_of_two) << scale;
        EXPECT_EQ(double(lp.finish.denominator), 1 / scale) << scale;
    }
    // Other scales keep the double form.
    OpProgram op{"third", {Step{LinearStep{Mask(3, 3, std::vector<double>(9, 1.0)), BorderMode::reflect, 0,
                                           Normalise::none, 1.0 / 3, 0}}}};
    const ExecutionPlan plan = make_plan({op}, ImageShape{8, 8, 1, PixelType::u8}, PixelType::u8, Backend::cpu);
    EXPECT_FALSE(std::get<LinearPlan>(plan.operations[0].steps[0].what).finish.integer_rounding);
}

// The planner's integer form of scale and delta gives the value SPEC defines, round_half_even(sum * scale +
// delta) saturated, for every sum: ties included, with odd and even deltas (an odd delta once rounded a
// tie the wrong way: 227.5 + 3 stored 231).
TEST(Finish, IntegerFormMatchesTheDefinitionWithOddDeltas) {
    for (double scale : {1.0, 0.5, 0.25, 1.0 / 1024})
        for (double delta : {0.0, 1.0, 3.0, -7.0, 255.0, -255.0})
            for (Normalise norm : {Normalise::none, Normalise::sum}) {
                const std::vector<double> w{1, 2, 0, 1, 0, -1, 3, 1, 2, 1, 1, 0};  // sum 11; 4x3
                std::vector<double> even_sum = w;
                even_sum[11] = 1;  // sum 12: ties after normalisation
                OpProgram op{"t", {Step{LinearStep{Mask(4, 3, even_sum), BorderMode::reflect, 0, norm, scale, delta}}}};
                const ExecutionPlan plan =
                    make_plan({op}, ImageShape{8, 8, 1, PixelType::u8}, PixelType::u8, Backend::cpu);
                const LinearFinish& f = std::get<LinearPlan>(plan.operations[0].steps[0].what).finish;
                for (int isum = -255; isum <= 12 * 255; ++isum) {
                    const double v = (norm == Normalise::sum ? double(isum) / 12 : double(isum)) * scale + delta;
                    const std::uint8_t want = store_pixel<std::uint8_t>(v);
                    ASSERT_EQ(finish_exact<std::uint8_t>(isum, f), want)
                        << isum << " scale " << scale << " delta " << delta << " norm " << int(norm);
                    ASSERT_EQ(finish_exact32<std::uint8_t>(isum, f), want)
                        << isum << " scale " << scale << " delta " << delta << " norm " << int(norm);
                }
            }
}

// The same plans to f32: the odd delta's unit lent to the dividend (for integer rounding) must not be
// added twice (a box with delta=3 to f32 once gave mean + 4).
TEST(Finish, ExactPlansToFloatAddAnOddDeltaOnce) {
    for (double scale : {1.0, 0.5, 1.0 / 3})
        for (double delta : {0.0, 1.0, 3.0, -7.0})
            for (Normalise norm : {Normalise::none, Normalise::sum}) {
                OpProgram op{"t", {Step{LinearStep{Mask(3, 3, std::vector<double>(9, 1.0)), BorderMode::reflect, 0, norm, scale, delta}}}};
                const ExecutionPlan plan = make_plan({op}, ImageShape{8, 8, 1, PixelType::u8}, PixelType::f32, Backend::cpu);
                const auto& lp = std::get<LinearPlan>(plan.operations[0].steps[0].what);
                ASSERT_TRUE(lp.exact);
                for (int isum = 0; isum <= 9 * 255; isum += 7) {
                    const double v = (norm == Normalise::sum ? double(isum) / 9 : double(isum)) * scale + delta;
                    EXPECT_NEAR(finish_exact<float>(isum, lp.finish), v, 1e-4 * std::max(1.0, std::fabs(v)))
                        << isum << " scale " << scale << " delta " << delta << " norm " << int(norm);
                    EXPECT_NEAR(finish_exact32<float>(isum, lp.finish), v, 1e-4 * std::max(1.0, std::fabs(v)))
                        << isum << " scale " << scale << " delta " << delta;
                }
            }
}
