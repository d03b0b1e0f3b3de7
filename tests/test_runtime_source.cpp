// The kernel generator of the run-time compiled direct correlation (src/cuda/rtc_source.cpp), without a
// GPU: what it decides (accumulator, rows per thread, declined masks), what it writes (zero taps gone,
// shared rows, integer grouping), and that NVRTC compiles what it writes (skipped where libnvrtc is
// absent). Built only with the CUDA backend.
#include <gtest/gtest.h>

#if APRON_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "cuda/nvrtc_cache.hpp"
#include "cuda/rtc_source.hpp"
#include "plan_support.hpp"
#include "plan/plan.hpp"

using namespace apron;
using namespace apron::cuda;

namespace {

LinearPlan plan_for(const Mask& m, PixelType in, PixelType out, Normalise normalise = Normalise::none) {
    return test::plan_for(m, ImageShape{64, 64, 1, in}, out, BorderMode::reflect, 0, normalise);
}

Mask random_mask(int w, int h, bool integer, bool symmetric, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<double> v(std::size_t(w) * h);
    for (double& x : v) x = integer ? std::uniform_int_distribution<int>(-4, 4)(rng) : std::uniform_real_distribution<double>(-1, 1)(rng);
    if (symmetric)  // point symmetry about the centre: w(i, j) = w(W-1-i, H-1-j)
        for (std::size_t k = 0; k < v.size(); ++k) v[v.size() - 1 - k] = v[k];
    return Mask(w, h, v);
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// NVRTC for sm_90 (Hopper, the GPUs the project is measured on); empty when it compiled.
std::string compile_error(const std::string& source) {
    try {
        const rtc::Binary b = rtc::compile(source, 90);
        if (b.data.empty()) return "empty binary";
        return "";
    } catch (const std::exception& e) {
        return e.what();
    }
}

#define REQUIRE_NVRTC()                                                  \
    do {                                                                 \
        std::string why;                                                 \
        if (!rtc::nvrtc_available(&why)) GTEST_SKIP() << why;            \
    } while (0)

} // namespace

TEST(RuntimeSource, ChoosesTheAccumulator) {
    rtc::Accumulate a;
    // u8, small integer weights: partial sums below 2^24, f32 is exact.
    ASSERT_TRUE(rtc::choose_accumulate(plan_for(Mask(2, 2, {1, 2, 3, 4}), PixelType::u8, PixelType::u8), &a));
    EXPECT_EQ(a, rtc::Accumulate::f32);
    // u16 with a 9x9 mask of 100s: 81 * 100 * 65535 ~ 5.3e8, beyond 2^24 but below 2^31.
    const LinearPlan mid = plan_for(Mask(9, 9, std::vector<double>(81, 100)), PixelType::u16, PixelType::u16);
    ASSERT_TRUE(mid.exact);
    ASSERT_TRUE(rtc::choose_accumulate(mid, &a));
    EXPECT_EQ(a, rtc::Accumulate::i32);
    // Beyond 2^31: 64-bit integers.
    const LinearPlan big = plan_for(Mask(4, 4, std::vector<double>(16, 100000)), PixelType::u16, PixelType::u16);
    ASSERT_TRUE(big.exact);
    ASSERT_TRUE(rtc::choose_accumulate(big, &a));
    EXPECT_EQ(a, rtc::Accumulate::i64);
    // Float weights on u8: the float path.
    ASSERT_TRUE(rtc::choose_accumulate(plan_for(random_mask(3, 5, false, false, 1), PixelType::u8, PixelType::u8), &a));
    EXPECT_EQ(a, rtc::Accumulate::f32);
}

TEST(RuntimeSource, DeclinesWhatItCannotWrite) {
    EXPECT_FALSE(rtc::choose_accumulate(plan_for(Mask(64, 3, std::vector<double>(192, 1)), PixelType::f32, PixelType::f32), nullptr));
    EXPECT_FALSE(rtc::choose_accumulate(plan_for(Mask(3, 64, std::vector<double>(192, 1)), PixelType::f32, PixelType::f32), nullptr));
    EXPECT_TRUE(rtc::choose_accumulate(plan_for(Mask(63, 63, std::vector<double>(63 * 63, 1)), PixelType::f32, PixelType::f32), nullptr));
    // Integer sums (u16, beyond 2^24) over more than 33x33 taps: declined (slow to compile).
    EXPECT_FALSE(rtc::choose_accumulate(plan_for(Mask(34, 34, std::vector<double>(34 * 34, 1)), PixelType::u16, PixelType::u16), nullptr));
    EXPECT_TRUE(rtc::choose_accumulate(plan_for(Mask(33, 33, std::vector<double>(33 * 33, 1)), PixelType::u16, PixelType::u16), nullptr));
    // Weights past float's range: the planner scales the mask to unit size (its largest weight in [0.5, 1)),
    // so the kernel takes them as floats, and the literal is the scaled weight.
    std::vector<double> huge(9, 1.0);
    huge[4] = 1e300;
    const LinearPlan scaled = plan_for(Mask(3, 3, huge), PixelType::f32, PixelType::f32);
    EXPECT_TRUE(rtc::choose_accumulate(scaled, nullptr));
    EXPECT_GE(std::fabs(scaled.step.mask.at(1, 1)), 0.5);
    EXPECT_LT(std::fabs(scaled.step.mask.at(1, 1)), 1.0);
    EXPECT_THROW(rtc::generate_source(plan_for(Mask(64, 1, std::vector<double>(64, 1)), PixelType::u8, PixelType::u8), 1),
                 std::exception);
}

TEST(RuntimeSource, IsDeterministicAndFollowsTheMask) {
    const LinearPlan a = plan_for(random_mask(6, 3, false, false, 2), PixelType::u8, PixelType::f32);
    const LinearPlan b = plan_for(random_mask(6, 3, false, false, 3), PixelType::u8, PixelType::f32);
    EXPECT_EQ(rtc::generate_source(a, 3).text, rtc::generate_source(a, 3).text);
    EXPECT_NE(rtc::generate_source(a, 3).text, rtc::generate_source(b, 3).text);
    EXPECT_NE(rtc::generate_source(a, 3).text, rtc::generate_source(a, 1).text);
}

TEST(RuntimeSource, ZeroTapsVanish) {
    // 1 x 7 with three zero taps: each input row feeds exactly one output row, so 4 taps per output. The
    // planner scales the weights to unit size (by 2^-2 here): -0.25 is written as -0.0625.
    const LinearPlan p = plan_for(Mask(7, 1, {0.5, 0, -0.25, 0, 0.125, 0, 2}), PixelType::f32, PixelType::f32);
    const rtc::KernelSource ks = rtc::generate_source(p, 1);
    EXPECT_EQ(ks.rows_per_thread, 8);
    EXPECT_EQ(count(ks.text, "fmaf("), std::size_t(ks.rows_per_thread) * rtc::outputs_x * 4);
    EXPECT_NE(ks.text.find("-0.0625f"), std::string::npos);
    EXPECT_EQ(ks.text.find("fmaf(0.0f"), std::string::npos);
    EXPECT_EQ(ks.text.find("fmaf(-0.0f"), std::string::npos);
}

TEST(RuntimeSource, SharesEqualMaskRowsOnlyWhereSumsAreExact) {
    // Symmetric 5x5 in float: rows 0/4 and 1/3 are equal, but a shared dot product would round an output
    // row by where the thread's rows start (the view's first row): every output row takes its own 25 FMAs.
    std::vector<double> v(25);
    for (int j = 0; j < 5; ++j)
        for (int i = 0; i < 5; ++i) v[std::size_t(j * 5 + i)] = 1.0 / (1 + std::abs(i - 2) + 2 * std::abs(j - 2));
    const rtc::KernelSource sym = rtc::generate_source(plan_for(Mask(5, 5, v), PixelType::f32, PixelType::f32), 1);
    EXPECT_EQ(count(sym.text, "fmaf("), std::size_t(sym.rows_per_thread) * rtc::outputs_x * 25);
    // An exact box (integer sums in the f32 accumulator, exact): every row shared, one dot product per input row.
    const LinearPlan exact = plan_for(Mask(9, 9, std::vector<double>(81, 1.0 / 81)), PixelType::u8, PixelType::u8);
    ASSERT_TRUE(exact.exact);
    const rtc::KernelSource box = rtc::generate_source(exact, 1);
    ASSERT_EQ(box.accumulate, rtc::Accumulate::f32);
    EXPECT_EQ(count(box.text, "fmaf("), std::size_t(box.rows_per_thread + 8) * rtc::outputs_x * 9);
}

TEST(RuntimeSource, IntegerAccumulationAddsBeforeMultiplying) {
    // Exact 3x3 of ones (box), forced into integers: no multiplication at all.
    const LinearPlan box = plan_for(Mask(3, 3, std::vector<double>(9, 1.0 / 9)), PixelType::u8, PixelType::u8);
    ASSERT_TRUE(box.exact);
    const rtc::KernelSource ks = rtc::generate_source(box, 1, /*force_integer=*/true);
    EXPECT_EQ(ks.accumulate, rtc::Accumulate::i32);
    EXPECT_EQ(count(ks.text, "fmaf("), 0u);
    EXPECT_EQ(count(ks.text, " * c"), 0u);
    // One row sum of three samples per input row (for output sample 0), shared by the output rows.
    EXPECT_EQ(count(ks.text, "acc_mad(1, c0.x + c0.y + c0.z, "), std::size_t(ks.rows_per_thread + 2));
    EXPECT_NE(ks.text.find("using Acc = int;"), std::string::npos);
    // Symmetric integer mask: the pair sharing a weight is added first (one multiply per distinct weight).
    const LinearPlan sym = plan_for(Mask(5, 1, {3, -2, 7, -2, 3}), PixelType::u16, PixelType::u16);
    const rtc::KernelSource s = rtc::generate_source(sym, 1, true);
    EXPECT_NE(s.text.find("a0_0 = acc_mad(3, c0.x + c1.x, a0_0);"), std::string::npos) << s.text;
    EXPECT_NE(s.text.find("a0_0 = acc_mad(-2, c0.y + c0.w, a0_0);"), std::string::npos);
}

TEST(RuntimeSource, EmbedsTheSharedHeaders) {
    std::vector<std::string> names;
    for (const auto& h : rtc::embedded_headers()) names.push_back(h.name);
    for (const char* n : {"core/linear_finish.hpp", "core/pixel.hpp", "core/hd.hpp", "core/border_index.hpp", "apron/border.hpp"})
        EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    for (const auto& h : rtc::embedded_headers())
        if (std::string(h.name) == "core/linear_finish.hpp") EXPECT_NE(std::string(h.text).find("finish_exact"), std::string::npos);
}

TEST(RuntimeSource, NvrtcCompilesTheGeneratedKernels) {
    REQUIRE_NVRTC();
    struct Case {
        Mask mask;
        PixelType in, out;
        int channels;
        bool force_integer;
    };
    std::vector<Case> cases = {
        {Mask(1, 1, {2.5}), PixelType::f32, PixelType::f32, 1, false},
        {Mask(2, 2, {1, 2, 3, 4}), PixelType::u8, PixelType::u8, 1, false},                        // exact, f32 acc
        {Mask(2, 2, {1, 2, 3, 4}), PixelType::u8, PixelType::u16, 3, true},                        // exact, i32
        {random_mask(4, 4, false, true, 5), PixelType::u16, PixelType::f32, 4, false},             // float
        {random_mask(6, 3, true, false, 6), PixelType::u16, PixelType::u8, 2, false},              // exact
        {random_mask(1, 7, false, false, 7), PixelType::f32, PixelType::u8, 1, false},
        {random_mask(9, 3, true, true, 8), PixelType::u8, PixelType::f32, 3, true},
        {Mask(4, 4, std::vector<double>(16, 100000)), PixelType::u16, PixelType::u16, 1, false},   // exact, i64
        {random_mask(33, 33, false, true, 9), PixelType::f32, PixelType::f32, 1, false},
    };
    for (const Case& c : cases) {
        const LinearPlan p = plan_for(c.mask, c.in, c.out);
        const rtc::KernelSource ks = rtc::generate_source(p, c.channels, c.force_integer);
        const std::string err = compile_error(ks.text);
        EXPECT_EQ(err, "") << c.mask.width << "x" << c.mask.height << " " << to_string(c.in) << "->" << to_string(c.out)
                           << " C=" << c.channels << "\n"
                           << ks.text;
    }
}

TEST(RuntimeSource, CompileErrorsBecomeOneLineErrors) {
    REQUIRE_NVRTC();
    try {
        rtc::compile("extern \"C\" __global__ void k() { undefined_thing(); }\n", 90);
        FAIL() << "compiled";
    } catch (const std::exception& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("undefined_thing"), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
}

#endif // APRON_HAVE_CUDA
