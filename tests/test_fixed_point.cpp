// Fixed-point weights for float masks on u8 (core/fixed_point.hpp, the GPU's IDP.2A form): the bound holds
// for random and adversarial inputs, the rounded fixed value stays within one unit of the correctly rounded
// float value (SPEC.md's tolerance for float plans), and masks whose bound cannot be met are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/fixed_point.hpp"

using namespace apron;

namespace {

// The kernel's arithmetic: floor((sum q_i x_i + bias) / 2^shift), clamped to [0, hi].
int fixed_result(const FixedPointMask& f, const std::vector<int>& x, int hi) {
    std::int64_t acc = f.bias;
    for (std::size_t i = 0; i < x.size(); ++i) acc += std::int64_t(f.q[i]) * x[i];
    EXPECT_LT(std::llabs(acc), std::int64_t(1) << 31) << "the int32 accumulator overflows";
    const std::int64_t v = acc >> f.shift;  // arithmetic: floor
    return int(v < 0 ? 0 : v > hi ? hi : v);
}

double exact_value(const std::vector<double>& w, double scale, double offset, const std::vector<int>& x) {
    double v = 0;
    for (std::size_t i = 0; i < x.size(); ++i) v += w[i] * scale * x[i];
    return v + offset;
}

double fixed_value(const FixedPointMask& f, const std::vector<int>& x) {
    std::int64_t acc = f.bias - (std::int64_t(1) << (f.shift - 1));
    for (std::size_t i = 0; i < x.size(); ++i) acc += std::int64_t(f.q[i]) * x[i];
    return std::ldexp(double(acc), -f.shift);
}

} // namespace

TEST(FixedPointWeights, RandomMasksStayWithinTheBoundAndOneUnit) {
    std::mt19937 rng(2028);
    std::uniform_real_distribution<double> weight(-1.0, 1.0);
    int taken = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        const int k = trial % 2 ? 3 : 5;
        std::vector<double> w(std::size_t(k) * k);
        for (double& v : w) v = weight(rng);
        const double scale = std::ldexp(1.0, int(rng() % 5)) / double(k);
        const double offset = trial % 3 == 0 ? double(int(rng() % 200)) - 100.0 + weight(rng) : 0.0;
        const auto f = fixed_point_mask(w, scale, offset, 255, 0.25);
        if (!f) continue;
        ++taken;
        ASSERT_LE(f->error_bound, 0.25);
        for (int sample = 0; sample < 40; ++sample) {
            std::vector<int> x(w.size());
            for (std::size_t i = 0; i < x.size(); ++i) {
                // Random pixels, and the adversarial ones: 255 where the weight rounded down, 0 where up.
                if (sample % 2) x[i] = int(rng() % 256);
                else x[i] = (double(f->q[i]) > w[i] * scale * std::ldexp(1.0, f->shift)) == (sample % 4 == 0) ? 255 : 0;
            }
            const double v = exact_value(w, scale, offset, x);
            ASSERT_LE(std::fabs(fixed_value(*f, x) - v), f->error_bound + 1e-9);
            const double clamped = std::min(255.0, std::max(0.0, v));
            ASSERT_LE(std::fabs(fixed_result(*f, x, 255) - std::nearbyint(clamped)), 1.0)
                << "trial " << trial << " value " << v;
        }
    }
    EXPECT_GT(taken, 2900);  // normalised masks of this range are all taken
}

TEST(FixedPointWeights, GaussianAndBoxMasksTakeFineShifts) {
    const std::vector<double> gauss = {1, 2, 1, 2, 4, 2, 1, 2, 1};
    const auto g = fixed_point_mask(gauss, 1.0 / 16, 0.0, 255, 0.25);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->shift, 16);  // 4/16 * 2^16 = 16384; 2^17 would make 32768, past 16 bits
    EXPECT_EQ(g->error_bound, 0.0);  // sixteenths are exact at any shift past 4
    const auto box = fixed_point_mask(std::vector<double>(9, 1.0), 1.0 / 9, 0.0, 255, 0.25);
    ASSERT_TRUE(box);
    EXPECT_GT(box->error_bound, 0.0);
    EXPECT_LT(box->error_bound, 0.01);
    // Every sample and every all-equal image: the box of a constant is that constant.
    for (int c = 0; c < 256; ++c) EXPECT_NEAR(fixed_result(*box, std::vector<int>(9, c), 255), c, 1) << c;
}

TEST(FixedPointWeights, RefusesWhatItCannotBound) {
    // A weight 2^20 times another: 16 bits cannot hold both finely enough.
    std::vector<double> wide = {1.0, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6};
    EXPECT_FALSE(fixed_point_mask(wide, 300.0, 0.0, 255, 0.25));
    EXPECT_FALSE(fixed_point_mask({1.0, NAN, 1.0}, 1.0, 0.0, 255, 0.25));
    EXPECT_FALSE(fixed_point_mask({1.0, 1.0, 1.0}, INFINITY, 0.0, 255, 0.25));
    EXPECT_FALSE(fixed_point_mask({1.0, 1.0, 1.0}, 1.0, NAN, 255, 0.25));
    // Large weights: sums past int32 make the shift smaller, never wrong.
    const auto big = fixed_point_mask(std::vector<double>(25, 1.0), 100.0, 0.0, 255, 0.25);
    ASSERT_TRUE(big);
    EXPECT_LT(255.0 * 25 * std::fabs(double(big->q[0])) + double(big->bias), 2147483647.0);
    // A zero mask plus an offset is the offset.
    const auto zero = fixed_point_mask(std::vector<double>(9, 0.0), 1.0, 7.25, 255, 0.25);
    ASSERT_TRUE(zero);
    EXPECT_EQ(fixed_result(*zero, std::vector<int>(9, 200), 255), 7);
}
