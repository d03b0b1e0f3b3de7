// The run-time compiled direct correlation (src/cuda/runtime_direct.cu) against the CPU backend: exact
// plans bit-identical, float plans within SPEC.md's tolerance, for the masks the compile-time kernels do
// not cover (even, non-square, odd above 31, exact sums beyond 2^24), every border mode, 1-4 channels,
// tiny images, masks larger than the image and ROI views; and its kernel cache. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/overrides.hpp"
#include "apron/pipeline.hpp"
#include "cuda/runtime_direct_api.hpp"
#include "plan/plan.hpp"
#include "gpu_test_support.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

using test::plan_for;

Mask random_mask(int w, int h, bool integer, bool symmetric, std::uint32_t seed, int range = 4) {
    std::mt19937 rng(seed);
    std::vector<double> v(std::size_t(w) * h);
    for (double& x : v)
        x = integer ? std::uniform_int_distribution<int>(-range, range)(rng) : std::uniform_real_distribution<double>(-1, 1)(rng);
    if (symmetric)  // point symmetry about the centre (Gaussian, box, Laplacian...): w(i, j) = w(W-1-i, H-1-j)
        for (std::size_t k = 0; k < v.size(); ++k) v[v.size() - 1 - k] = v[k];
    return Mask(w, h, v);
}

Executor& cpu() {
    static auto ex = make_cpu_executor(0);
    return *ex;
}

Image on_cpu(const LinearPlan& p, ConstImageView in) {
    Image out(in.width(), in.height(), in.channels(), p.out);
    cpu().linear(p, in, out.view());
    return out;
}

std::string describe(const LinearPlan& p, ConstImageView in) {
    return std::to_string(p.step.mask.width) + "x" + std::to_string(p.step.mask.height) + " anchor(" +
           std::to_string(p.step.mask.anchor_x) + "," + std::to_string(p.step.mask.anchor_y) + ") " + to_string(p.in) + "->" +
           to_string(p.out) + (p.exact ? " exact" : " float") + " border " + to_string(p.step.border) + " image " +
           std::to_string(in.width()) + "x" + std::to_string(in.height()) + "x" + std::to_string(in.channels());
}

// The run-time kernel against the CPU backend: identical bits when exact, SPEC.md's tolerance otherwise.
void expect_matches_cpu(const LinearPlan& p, ConstImageView in, int offset = 0) {
    const std::string what = describe(p, in);
    ASSERT_TRUE(cuda::runtime_direct_supports(p)) << what;
    const Image want = on_cpu(p, in);
    Image got;
    try {
        got = cuda::runtime_direct_run_host(p, in, offset);
    } catch (const std::exception& e) {
        FAIL() << what << ": " << e.what();
    }
    if (p.exact) {
        EXPECT_TRUE(test::identical(want.view(), got.view()))
            << what << ": exact path differs by " << test::max_abs_diff(want.view(), got.view());
        return;
    }
    double tol = 1;
    if (p.out == PixelType::f32) {
        const double in_max = std::max(test::max_abs(in), std::fabs(p.step.border_value));
        tol = 1e-5 * p.step.mask.abs_sum() * in_max * std::max(1.0, std::fabs(p.finish.mul)) + 1e-30;
    }
    EXPECT_LE(test::max_abs_diff(want.view(), got.view()), tol) << what;
}

// Every border mode on one image (the border is a kernel argument: one compiled kernel serves them all).
void sweep_borders(const Mask& m, const Image& in, PixelType out, int offset = 0) {
    for (BorderMode b : test::all_borders) {
        const double value = b == BorderMode::constant ? (in.type() == PixelType::f32 ? 0.75 : 7) : 0;
        expect_matches_cpu(plan_for(m, in.shape(), out, b, value), in.view(), offset);
    }
}

} // namespace

TEST(RuntimeDirect, EvenAndNonSquareMasks) {
    REQUIRE_GPU();
    std::uint32_t seed = 10;
    struct Size {
        int w, h;
    };
    for (Size s : {Size{2, 2}, Size{4, 4}, Size{6, 3}, Size{1, 7}, Size{7, 1}, Size{9, 3}, Size{3, 9}, Size{1, 1}}) {
        for (bool integer : {true, false})
            for (bool symmetric : {false, true}) {
                const Mask m = random_mask(s.w, s.h, integer, symmetric, ++seed);
                for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
                    const int channels = 1 + int(seed % 4);
                    const Image in = test::random_image(150, 43, channels, t, seed);
                    sweep_borders(m, in, t);
                }
            }
    }
}

TEST(RuntimeDirect, ChannelsAndOutputTypes) {
    REQUIRE_GPU();
    const Mask even = random_mask(4, 2, true, false, 31);
    const Mask flt = random_mask(5, 4, false, true, 32);
    for (int c = 1; c <= 4; ++c)
        for (PixelType in_t : {PixelType::u8, PixelType::u16, PixelType::f32})
            for (PixelType out_t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
                const Image in = test::random_image(67, 29, c, in_t, std::uint32_t(40 + c));
                expect_matches_cpu(plan_for(even, in.shape(), out_t, BorderMode::mirror), in.view());
                expect_matches_cpu(plan_for(flt, in.shape(), out_t, BorderMode::wrap), in.view());
            }
}

TEST(RuntimeDirect, LargeOddMasks) {
    REQUIRE_GPU();
    // 33x33 and 41x41 are beyond the compile-time kernels (odd squares to 31).
    const Mask sym33 = random_mask(33, 33, false, true, 51);
    const Mask asym41 = random_mask(41, 41, true, false, 52, 2);
    const Image f = test::random_image(203, 97, 1, PixelType::f32, 53);
    const Image u8 = test::random_image(190, 75, 3, PixelType::u8, 54);
    sweep_borders(sym33, f, PixelType::f32);
    sweep_borders(asym41, u8, PixelType::u8);
    expect_matches_cpu(plan_for(asym41, f.shape(), PixelType::f32, BorderMode::reflect), f.view());
    // The largest the generator writes (f32 sums: exact on u8 with small weights).
    const Mask m63 = random_mask(63, 63, true, true, 55, 1);
    const Image u8one = test::random_image(150, 90, 1, PixelType::u8, 56);
    expect_matches_cpu(plan_for(m63, u8one.shape(), PixelType::u8, BorderMode::nearest), u8one.view());
    // Integer sums that large are declined (slow to compile): the baseline kernel runs them.
    EXPECT_FALSE(cuda::runtime_direct_supports(plan_for(m63, ImageShape{150, 90, 1, PixelType::u16}, PixelType::u16)));
}

TEST(RuntimeDirect, ExactSumsBeyondTwoToThe24InIntegers) {
    REQUIRE_GPU();
    const Image in = test::random_image(131, 37, 2, PixelType::u16, 61);
    // 5x5 odd square with weights to 300: 2^24 < bound < 2^31, an f64 plan the tiled kernel declines.
    const Mask mid = random_mask(5, 5, true, false, 62, 300);
    const LinearPlan p = plan_for(mid, in.shape(), PixelType::u16, BorderMode::reflect, 0, Normalise::sum);
    ASSERT_TRUE(p.exact);
    ASSERT_EQ(p.accumulator, Accumulator::f64);
    sweep_borders(mid, in, PixelType::u16);
    expect_matches_cpu(p, in.view());
    // Beyond 2^31: 64-bit integer sums.
    const Mask big = random_mask(4, 3, true, true, 63, 200000);
    sweep_borders(big, in, PixelType::u16);
    expect_matches_cpu(plan_for(big, in.shape(), PixelType::f32, BorderMode::wrap, 0, Normalise::none, 1e-6), in.view());
    // Scales, deltas and normalisations go through the shared finish.
    const Mask even = random_mask(6, 4, true, false, 64);
    const Image u8 = test::random_image(77, 41, 1, PixelType::u8, 65);
    for (Normalise n : {Normalise::none, Normalise::sum, Normalise::book})
        for (double scale : {1.0, 0.25, 0.3})
            expect_matches_cpu(plan_for(even, u8.shape(), PixelType::u8, BorderMode::reflect, 0, n, scale, 3), u8.view());
}

TEST(RuntimeDirect, IntegerAccumulationWhereF32WouldDo) {
    REQUIRE_GPU();
    // APRON_RTC_INTEGER=1 makes exact plans accumulate in int32 (IADD3/IMAD) instead of f32: same bits.
    Overrides integer = overrides();
    integer.rtc_integer = true;
    const OverrideScope scope(integer);
    const Image in = test::random_image(140, 50, 1, PixelType::u8, 71);
    for (const Mask& m : {random_mask(4, 4, true, true, 72), random_mask(9, 3, true, false, 73), Mask(6, 6, std::vector<double>(36, 1.0 / 36))})
        sweep_borders(m, in, PixelType::u8);
}

TEST(RuntimeDirect, TinyImagesAndMasksLargerThanTheImage) {
    REQUIRE_GPU();
    for (PixelType t : {PixelType::u8, PixelType::f32}) {
        const Image one = test::random_image(1, 1, 1, t, 81);
        const Image small = test::random_image(5, 3, 3, t, 82);
        const Image row = test::random_image(40, 1, 2, t, 83);
        for (const Mask& m : {random_mask(2, 2, true, false, 84), random_mask(33, 33, true, true, 85, 1),
                              random_mask(1, 7, false, false, 86), random_mask(12, 5, false, false, 87)}) {
            sweep_borders(m, one, t);
            sweep_borders(m, small, t);
            sweep_borders(m, row, t);
        }
    }
}

TEST(RuntimeDirect, RoiViewsAndAnchors) {
    REQUIRE_GPU();
    // Views inside larger device buffers (rows start anywhere: scalar stores), nothing written outside.
    for (int c : {1, 3}) {
        const Image in = test::random_image(97, 33, c, PixelType::u8, std::uint32_t(90 + c));
        sweep_borders(random_mask(4, 4, true, false, 91), in, PixelType::u8, 1);
        sweep_borders(random_mask(3, 8, false, false, 92), in, PixelType::f32, 3);
    }
    // A host ROI as the input.
    const Image big = test::random_image(300, 120, 2, PixelType::u16, 93);
    const ConstImageView roi = big.view().roi(13, 7, 211, 97);
    expect_matches_cpu(plan_for(random_mask(6, 3, true, false, 94), roi.shape, PixelType::u16), roi);
    // Any anchor: convolve flips even masks and moves the anchor off the centre.
    Mask shifted = random_mask(5, 4, true, false, 95);
    shifted.anchor_x = 0, shifted.anchor_y = 3;
    const Image in = test::random_image(64, 31, 1, PixelType::u16, 96);
    sweep_borders(shifted, in, PixelType::u16);
    Mask corner = random_mask(4, 6, false, false, 97);
    corner.anchor_x = 3, corner.anchor_y = 0;
    sweep_borders(corner, in, PixelType::f32);
}

TEST(RuntimeDirect, TallImagesRunInSeveralLaunches) {
    REQUIRE_GPU();
    // gridDim.y stops at 65535 blocks of 8 rows x rows-per-thread (1 for 41x41).
    const Image in = test::random_image(2, 530000, 1, PixelType::u8, 101);
    expect_matches_cpu(plan_for(random_mask(41, 41, true, true, 102, 1), in.shape(), PixelType::u8, BorderMode::wrap),
                       in.view());
}

TEST(RuntimeDirect, CacheReturnsTheSameKernel) {
    REQUIRE_GPU();
    const ImageShape shape{64, 64, 1, PixelType::u8};
    const Mask m = random_mask(6, 5, true, false, 111);
    const LinearPlan a = plan_for(m, shape, PixelType::u8, BorderMode::reflect);
    const cuda::RuntimeDirectStats s0 = cuda::runtime_direct_stats();
    void* first = cuda::runtime_direct_kernel(a, 1);
    const cuda::RuntimeDirectStats s1 = cuda::runtime_direct_stats();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(s1.sources, s0.sources + 1);
    // The same plan again: found by plan, nothing generated or compiled.
    EXPECT_EQ(cuda::runtime_direct_kernel(a, 1), first);
    const cuda::RuntimeDirectStats s2 = cuda::runtime_direct_stats();
    EXPECT_EQ(s2.plan_hits, s1.plan_hits + 1);
    EXPECT_EQ(s2.compiles, s1.compiles);
    EXPECT_EQ(s2.modules, s1.modules);
    // Another border and finish: arguments of the same kernel, so the plan key (which leaves them out)
    // finds it: no source is generated.
    const LinearPlan b = plan_for(m, shape, PixelType::u8, BorderMode::constant, 9, Normalise::book, 1, 2);
    EXPECT_EQ(cuda::runtime_direct_kernel(b, 1), first);
    const cuda::RuntimeDirectStats s3 = cuda::runtime_direct_stats();
    EXPECT_EQ(s3.plan_hits, s2.plan_hits + 1);
    EXPECT_EQ(s3.sources, s2.sources);
    EXPECT_EQ(s3.compiles, s2.compiles);
    EXPECT_EQ(s3.modules, s2.modules);
    // Another channel count is another kernel.
    EXPECT_NE(cuda::runtime_direct_kernel(a, 2), first);
}

TEST(RuntimeDirect, TheExecutorRoutesOtherMasksHere) {
    REQUIRE_GPU();
    // Through the public API: even and non-square masks on the CUDA backend match the CPU backend.
    const Image in = test::random_image(301, 157, 3, PixelType::u8, 121);
    const cuda::RuntimeDirectStats before = cuda::runtime_direct_stats();
    for (const char* op : {"correlate:mask=samples/masks/even4x4.kernel,border=wrap",
                           "convolve:mask=samples/masks/even4x4.kernel,border=constant,value=3",
                           "box:width=4,height=2,border=mirror"}) {
        const Pipeline p({op});
        EXPECT_TRUE(test::identical(p.run(in, {.backend = Backend::cpu}), p.run(in, {.backend = Backend::cuda}))) << op;
    }
    const Pipeline f({"correlate:mask=samples/masks/random7x5.kernel,border=reflect"});
    EXPECT_LE(test::max_abs_diff(f.run(in, {.backend = Backend::cpu}), f.run(in, {.backend = Backend::cuda})), 1.0);
    const cuda::RuntimeDirectStats after = cuda::runtime_direct_stats();
    EXPECT_GT(after.plan_hits + after.sources, before.plan_hits + before.sources) << "no plan reached the run-time kernels";
}
