// The 32-bit exact finish (what GPU kernels use for sums below 2^24) against the 64-bit one, and the
// planner's folding of power-of-two scales into the denominator.
#include <gtest/gtest.h>

#include <random>

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

// The GPU kernels run an exact plan's finish in float arithmetic where exact_finish_as_float allows it;
// it must store what the integer form stores, for every sum the f32 accumulator holds exactly: ties,
// saturation at both ends, every power-of-two denominator to 2^8, offsets and even deltas of either sign.
template <class T>
void expect_float_form_exact(std::mt19937& rng) {
    int taken = 0;
    for (int trial = 0; trial < 400000; ++trial) {
        const std::int64_t d = std::int64_t(1) << (rng() % 10);  // 1 .. 512 (512: refused)
        const std::int64_t delta = 2 * (int(rng() % 64) - 32) * (trial % 7 == 0 ? 1000 : 1);
        std::int64_t offset = trial % 3 == 0 ? std::int64_t(rng() % 4096) - 2048 : 0;
        if (trial % 11 == 0) offset = d / 2;  // the planner's rounding offset
        LinearFinish f = integer_finish(d, offset, delta);
        // isum near the rounding boundaries of the output range, or anywhere below 2^24 - |offset|.
        const std::int64_t span = (std::int64_t(1) << 24) - 4096;
        std::int64_t isum = std::int64_t(rng() % (2 * span)) - span;
        if (trial % 2 == 0) {
            const std::int64_t target = std::int64_t(rng() % (std::int64_t(PixelTraits<T>::max) + 3)) - 1;
            isum = (target - delta) * d - offset + std::int64_t(rng() % (2 * d + 1)) - d;
            if (isum <= -span || isum >= span) continue;
        }
        LinearFinish g;
        if (!exact_finish_as_float(f, true, g)) {
            EXPECT_TRUE(d > 256 || std::llabs(offset + delta * d) >= (std::int64_t(1) << 24));
            continue;
        }
        ++taken;
        const T want = finish_exact<T>(isum, f);
        const T got = finish_float<T, float>(float(isum), g);
        ASSERT_EQ(int(got), int(want)) << "isum " << isum << " d " << d << " offset " << offset << " delta " << delta;
    }
    EXPECT_GT(taken, 300000);
}

TEST(Finish, FloatFormOfExactFinishStoresTheSameBits) {
    std::mt19937 rng(7);
    expect_float_form_exact<std::uint8_t>(rng);
    expect_float_form_exact<std::uint16_t>(rng);
    LinearFinish g;
    EXPECT_FALSE(exact_finish_as_float(integer_finish(3, 1, 0), true, g));   // not a power of two
    EXPECT_FALSE(exact_finish_as_float(integer_finish(1, 0, 0), false, g));  // into f32
    EXPECT_FALSE(exact_finish_as_float(integer_finish(2, 0, 1), true, g));   // odd delta: the planner moves it
}

// Exact plans into f32 over a power of two (Sobel, binomial masks): the GPU kernels' one FMA must store the
// double form's float, for every sum the f32 accumulator holds exactly, offsets and deltas of either sign.
TEST(Finish, ScaledSumIntoFloatIsTheDoubleForm) {
    std::mt19937 rng(11);
    int taken = 0;
    for (int trial = 0; trial < 300000; ++trial) {
        const std::int64_t d = std::int64_t(1) << (rng() % 21);
        const std::int64_t offset = trial % 3 == 0 ? std::int64_t(rng() % 8192) - 4096 : 0;
        const std::int64_t delta = (int(rng() % 2001) - 1000) * (trial % 5 == 0 ? 9973 : 1);
        LinearFinish f = integer_finish(d, offset, delta);
        f.delta = double(delta);  // the double form reads delta, the 32-bit forms delta_int
        const std::int64_t span = (std::int64_t(1) << 24) - 8192;
        const std::int64_t isum = std::int64_t(rng() % (2 * span)) - span;
        if (!finish_is_scaled_sum(f)) continue;
        ++taken;
        const float want = finish_exact<float>(isum, f);
        const float got = finish_scaled_sum(float(isum), f);
        ASSERT_EQ(got, want) << "isum " << isum << " d " << d << " offset " << offset << " delta " << delta;
    }
    EXPECT_GT(taken, 250000);
    EXPECT_FALSE(finish_is_scaled_sum(integer_finish(3, 0, 0)));  // a divisor that is not a power of two
}
