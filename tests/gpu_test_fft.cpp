// The CUDA backend's FFT path (src/cuda/fft_linear.cu) against the reference executor: exact plans bit for
// bit, float plans within SPEC.md's tolerance, for masks 15x15 to 129x129 (odd, even, non-square,
// off-centre anchors), every border mode, 1-4 channels, every type, images from 1x1 to several batches of
// tiles and smaller than the mask. Also its tiling, what it declines (exact plans past the error bound,
// f32 images with NaN or infinities, which then take the direct kernels), and determinism. The tiling
// checks need no device; the rest skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/overrides.hpp"
#include "cuda/fft_linear.hpp"
#include "cuda/fft_support.hpp"
#include "plan/fft_bound.hpp"
#include "plan/plan.hpp"
#include "gpu_test_support.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

using test::random_mask;

// The FFT's tile side and tiles per batch forced for one scope (APRON_FFT_SIDE, APRON_FFT_BATCH; 0: the
// planner's).
struct ForcedFft {
    static Overrides with(int side, int batch) {
        Overrides o = overrides();
        o.fft_side = side;
        o.fft_batch = batch;
        return o;
    }
    OverrideScope scope;
    explicit ForcedFft(int side, int batch = 0) : scope(with(side, batch)) {}
};

Executor& gpu() {
    static std::unique_ptr<Executor> ex = make_cuda_executor();
    return *ex;
}

std::string describe(const LinearPlan& p, const Image& in) {
    return std::to_string(p.step.mask.width) + "x" + std::to_string(p.step.mask.height) + " " + to_string(p.in) + "->" +
           to_string(p.out) + (p.exact ? " exact" : " float") + " border " + to_string(p.step.border) + " image " +
           std::to_string(in.width()) + "x" + std::to_string(in.height()) + "x" + std::to_string(in.channels());
}

// The plan through launch_fft_linear itself (so a silent fall-back to the direct kernels cannot pass for
// the FFT); *took says whether it computed the result.
Image run_fft(const LinearPlan& p, const Image& in, bool* took) {
    Executor& ex = gpu();
    Buffer d_in = ex.allocate(in.shape());
    const ImageShape out_shape{in.width(), in.height(), in.channels(), p.out};
    Buffer d_out = ex.allocate(out_shape);
    ex.upload(in.view(), d_in.view);
    ex.synchronize();  // the legacy default stream below then sees the buffers and the upload
    *took = cuda::launch_fft_linear(p, d_in.cview(), d_out.view, nullptr);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    Image got(out_shape);
    ex.download(d_out.cview(), got.view());
    return got;
}

// The plan through the executor's linear() (its dispatch and fall-back).
Image run_executor(const LinearPlan& p, const Image& in) {
    Executor& ex = gpu();
    Buffer d_in = ex.allocate(in.shape());
    const ImageShape out_shape{in.width(), in.height(), in.channels(), p.out};
    Buffer d_out = ex.allocate(out_shape);
    ex.upload(in.view(), d_in.view);
    ex.linear(p, d_in.cview(), d_out.view);
    Image got(out_shape);
    ex.download(d_out.cview(), got.view());
    return got;
}

// SPEC.md's tolerance of a float plan: 1e-5 of sum |m| x max |in| for f32 outputs (times the finish's
// scale), within 1 of the correctly rounded value for integer outputs.
double tolerance(const LinearPlan& p, const Image& in) {
    if (p.out != PixelType::f32) return 1;
    const double in_max = std::max(test::max_abs(in.view()), std::fabs(p.step.border_value));
    return 1e-5 * p.step.mask.abs_sum() * in_max * std::max(1.0, std::fabs(p.finish.mul)) + 1e-30;
}

void expect_fft_matches_reference(LinearPlan p, const Image& in) {
    p.algorithm = LinearAlgorithm::fft;
    const std::string what = describe(p, in);
    ASSERT_TRUE(cuda_fft_supports(p, in.shape())) << what;
    bool took = false;
    const Image got = run_fft(p, in, &took);
    ASSERT_TRUE(took) << what;
    Image want(got.shape());
    make_reference_executor()->linear(p, in.view(), want.view());
    if (p.exact) {
        EXPECT_TRUE(test::identical(want.view(), got.view())) << what << ": differs by " << test::max_abs_diff(want.view(), got.view());
        return;
    }
    EXPECT_LE(test::max_abs_diff(want.view(), got.view()), tolerance(p, in)) << what;
}

void sweep_borders(const Mask& m, const Image& in, PixelType out, Normalise n = Normalise::none) {
    for (BorderMode b : test::all_borders) {
        const double value = b == BorderMode::constant ? (in.type() == PixelType::f32 ? 0.75 : 7) : 0;
        expect_fft_matches_reference(test::plan_for(m, in.shape(), out, b, value, n), in);
    }
}

} // namespace

TEST(CudaFft, MaskShapesBordersChannelsAndTypes) {
    REQUIRE_GPU();
    std::uint32_t seed = 1;
    for (auto [w, h] : {std::pair{15, 15}, {16, 9}, {31, 31}, {4, 40}, {1, 17}, {33, 20}}) {
        for (bool integer : {true, false}) {
            const Mask m = random_mask(w, h, integer, ++seed);
            for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
                const Image in = test::random_image(157, 83, 1 + int(seed % 4), t, seed);
                sweep_borders(m, in, t);
                ++seed;
            }
        }
    }
}

TEST(CudaFft, LargeMasksOnSmallImages) {
    REQUIRE_GPU();
    const Mask m63 = random_mask(63, 63, true, 21, 2), m129 = random_mask(129, 129, false, 22),
               m64 = random_mask(64, 48, false, 23), m128 = random_mask(128, 127, true, 24, 1);
    for (auto [w, h] : {std::pair{1, 1}, {7, 5}, {64, 33}, {1, 200}, {131, 3}}) {
        const Image u8 = test::random_image(w, h, 1, PixelType::u8, std::uint32_t(w * 7 + h));
        const Image u16 = test::random_image(w, h, 3, PixelType::u16, std::uint32_t(w * 3 + h));
        const Image f = test::random_image(w, h, 2, PixelType::f32, std::uint32_t(w * 5 + h));
        sweep_borders(m63, u8, PixelType::u8, Normalise::sum);
        sweep_borders(m129, f, PixelType::f32);
        sweep_borders(m64, u8, PixelType::f32);
        sweep_borders(m128, u16, PixelType::u16);
    }
}

TEST(CudaFft, OutputTypesFinishesAndAnchors) {
    REQUIRE_GPU();
    const Image in = test::random_image(211, 97, 3, PixelType::u8, 31);
    const Mask m = random_mask(17, 17, true, 32);
    const Mask mf = random_mask(17, 17, false, 35);
    for (PixelType out : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (Normalise n : {Normalise::none, Normalise::sum, Normalise::book})
            for (double scale : {1.0, 0.125, 0.3}) {
                expect_fft_matches_reference(test::plan_for(m, in.shape(), out, BorderMode::mirror, 0, n, scale, 3), in);
                expect_fft_matches_reference(test::plan_for(mf, in.shape(), out, BorderMode::reflect, 0, n, scale, -2), in);
            }
    // Off-centre anchors (what convolve and explicit anchors give).
    Mask shifted = random_mask(20, 18, false, 33);
    shifted.anchor_x = 0, shifted.anchor_y = 17;
    sweep_borders(shifted, test::random_image(90, 70, 1, PixelType::f32, 34), PixelType::f32);
    Mask corner = random_mask(9, 25, true, 36);
    corner.anchor_x = 8, corner.anchor_y = 0;
    sweep_borders(corner, test::random_image(45, 61, 2, PixelType::u16, 37), PixelType::u16);
}

TEST(CudaFft, ExactSumsPast2To24AreBitIdentical) {
    REQUIRE_GPU();
    // Weights up to 300 on u16: sums reach 2^34 (the f64 accumulator and the 64-bit finish), and the tiling
    // must stay within the error bound.
    const Image in = test::random_image(300, 200, 1, PixelType::u16, 41);
    const LinearPlan p = test::plan_for(random_mask(31, 31, true, 42, 300), in.shape(), PixelType::u16, BorderMode::wrap, 0,
                                        Normalise::sum);
    ASSERT_TRUE(p.exact);
    EXPECT_EQ(p.accumulator, Accumulator::f64);
    const cuda::FftTiling t = cuda::choose_fft_tiling(p, in.shape());
    ASSERT_NE(t.nx, 0);
    EXPECT_LT(double_fft_error_bound(p, t.nx, t.ny), fft_exact_error_limit);
    expect_fft_matches_reference(p, in);
    expect_fft_matches_reference(test::plan_for(random_mask(31, 31, true, 43, 300), in.shape(), PixelType::f32), in);
}

TEST(CudaFft, DeclinesExactPlansPastTheErrorBound) {
    REQUIRE_GPU();
    const Image in = test::random_image(300, 300, 1, PixelType::u16, 51);
    LinearPlan huge = test::plan_for(random_mask(31, 31, true, 52, 100000000), in.shape(), PixelType::u16);
    ASSERT_TRUE(huge.exact);
    EXPECT_FALSE(cuda_fft_supports(huge, in.shape()));
    EXPECT_EQ(cuda::choose_fft_tiling(huge, in.shape()).nx, 0);
    huge.algorithm = LinearAlgorithm::fft;
    bool took = true;
    run_fft(huge, in, &took);
    EXPECT_FALSE(took);
    // Through the executor the direct kernels compute it: the exact result still.
    Image want(in.shape());
    make_reference_executor()->linear(huge, in.view(), want.view());
    EXPECT_TRUE(test::identical(want.view(), run_executor(huge, in).view()));
}

TEST(CudaFft, NonFiniteSamplesAreSummedDirectlyInTheirTiles) {
    REQUIRE_GPU();
    // A transform would spread a NaN or an infinity over its whole tile: the tiles that hold one are summed
    // directly on the device (tile by tile, so a band of a streamed image decides as the whole image does),
    // every other tile goes through the transforms. NaN reaches exactly the windows the reference's does.
    Image in = test::random_image(120, 90, 2, PixelType::f32, 61);
    in.view().row<float>(10)[41] = std::numeric_limits<float>::quiet_NaN();
    in.view().row<float>(70)[200] = std::numeric_limits<float>::infinity();
    const Mask m = random_mask(31, 31, false, 62);
    const ForcedFft side(64);  // several tiles, of which only some hold the samples
    LinearPlan p = test::plan_for(m, in.shape(), PixelType::f32, BorderMode::reflect);
    p.algorithm = LinearAlgorithm::fft;
    bool took = false;
    const Image got = run_fft(p, in, &took);
    EXPECT_TRUE(took);
    Image want(in.shape());
    make_reference_executor()->linear(p, in.view(), want.view());
    int nan_want = 0, nan_got = 0, differ = 0;
    const double tol = tolerance(p, test::random_image(120, 90, 2, PixelType::f32, 61));
    for (int y = 0; y < 90; ++y)
        for (int k = 0; k < 240; ++k) {
            const float a = want.view().row<float>(y)[k], b = got.view().row<float>(y)[k];
            nan_want += std::isnan(a), nan_got += std::isnan(b);
            if (std::isfinite(a) != std::isfinite(b) || (std::isfinite(a) && std::fabs(a - b) > tol)) ++differ;
        }
    EXPECT_EQ(nan_got, nan_want);
    EXPECT_GT(nan_want, 0);
    EXPECT_LT(nan_want, 120 * 90 * 2);  // the windows only
    EXPECT_EQ(differ, 0);
    // A finite sample too large for a float transform's sums is summed directly too: its tile is exact to
    // the reference's tolerance of that sample, where a transform's float sums would lose the small ones.
    Image large = test::random_image(50, 40, 1, PixelType::f32, 63);
    large.view().row<float>(5)[5] = 1e30f;
    p = test::plan_for(m, large.shape(), PixelType::f32, BorderMode::nearest);
    expect_fft_matches_reference(p, large);
    // And a clean image after those goes through the transforms (the flags are per call).
    expect_fft_matches_reference(p, test::random_image(50, 40, 1, PixelType::f32, 64));
}

TEST(CudaFft, ManyTilesInManyBatches) {
    REQUIRE_GPU();
    // Small forced tiles and batches: 13 x 12 tiles of 48 x 48 outputs, 3 tiles per batch, every seam.
    const Image in = test::random_image(600, 550, 3, PixelType::u8, 71);
    const Mask m = random_mask(17, 17, true, 72);
    {
        const ForcedFft small(64, 3);
        const LinearPlan p = test::plan_for(m, in.shape(), PixelType::u8, BorderMode::reflect, 0, Normalise::sum);
        const cuda::FftTiling t = cuda::choose_fft_tiling(p, in.shape());
        EXPECT_EQ(t.nx, 64);
        EXPECT_EQ(t.batch_tiles, 3);
        EXPECT_EQ(t.batches, 52);
        expect_fft_matches_reference(p, in);
        const Image f = test::random_image(600, 550, 1, PixelType::f32, 73);
        expect_fft_matches_reference(test::plan_for(random_mask(17, 17, false, 74), f.shape(), PixelType::f32,
                                                    BorderMode::constant, 0.5),
                                     f);
    }
    // The default tile side on an image of several batches (5 tiles each: default batches are ~256 MB),
    // against the direct kernels (the reference would take minutes): within twice the tolerance, each being
    // within it of the float64 result.
    const Image big = test::random_image(2500, 1900, 4, PixelType::f32, 75);
    const ForcedFft batch(0, 5);
    LinearPlan p = test::plan_for(random_mask(41, 41, false, 76), big.shape(), PixelType::f32, BorderMode::mirror);
    const cuda::FftTiling t = cuda::choose_fft_tiling(p, big.shape());
    EXPECT_GT(t.batches, 1) << t.nx << "x" << t.ny << ", " << t.tiles() << " tiles";
    p.algorithm = LinearAlgorithm::fft;
    bool took = false;
    const Image got = run_fft(p, big, &took);
    ASSERT_TRUE(took);
    LinearPlan direct = p;
    direct.algorithm = LinearAlgorithm::direct;
    EXPECT_LE(test::max_abs_diff(run_executor(direct, big).view(), got.view()), 2 * tolerance(p, big));
}

TEST(CudaFft, DeterministicAndDispatchedByTheExecutor) {
    REQUIRE_GPU();
    const Image in = test::random_image(700, 500, 3, PixelType::f32, 81);
    LinearPlan p = test::plan_for(random_mask(45, 37, false, 82), in.shape(), PixelType::f32, BorderMode::wrap);
    p.algorithm = LinearAlgorithm::fft;
    bool took = false;
    const Image a = run_fft(p, in, &took);
    ASSERT_TRUE(took);
    const Image b = run_fft(p, in, &took);
    EXPECT_TRUE(test::identical(a.view(), b.view()));
    // The executor's linear() takes the FFT for an FFT plan: the same bits as the call itself.
    EXPECT_TRUE(test::identical(a.view(), run_executor(p, in).view()));
}

TEST(CudaFft, TilingChoices) {
    // Plain host code: runs without a device.
    const ImageShape big{8192, 8192, 1, PixelType::f32};
    for (int k : {31, 63, 127}) {
        const LinearPlan p = test::plan_for(random_mask(k, k, false, std::uint32_t(90 + k)), big, PixelType::f32);
        const cuda::FftTiling t = cuda::choose_fft_tiling(p, big);
        ASSERT_NE(t.nx, 0) << k;
        EXPECT_FALSE(t.f64);
        auto smooth = [](int n) { return (n & (n - 1)) == 0 || (n % 3 == 0 && ((n / 3) & (n / 3 - 1)) == 0); };
        EXPECT_TRUE(smooth(t.nx) && smooth(t.ny)) << "2^a or 3 x 2^a: " << t.nx << "x" << t.ny;
        EXPECT_GE(t.nx, 4 * k) << "the overlap would waste most of each tile";
        EXPECT_LE(t.nx, 4096);
        EXPECT_EQ(t.vx, t.nx - k + 1);
        EXPECT_GE(t.tiles_x * t.vx, 8192);
        EXPECT_LT((t.tiles_x - 1) * t.vx, 8192);
        EXPECT_GE(t.batches * t.batch_tiles, t.tiles());
        EXPECT_LT((t.batches - 1) * t.batch_tiles, t.tiles());
    }
    // A small image: no more transform samples than one tile over the whole image (256 >= 100 + 62,
    // 128 >= 20 + 62).
    const ImageShape small{100, 20, 1, PixelType::u8};
    const LinearPlan q = test::plan_for(random_mask(63, 63, false, 95), small, PixelType::u8);
    const cuda::FftTiling s = cuda::choose_fft_tiling(q, small);
    EXPECT_LE(double(s.tiles()) * s.nx * s.ny, 256.0 * 128);
    EXPECT_EQ(s.batches, 1);
    // Exact plans: double transforms within the bound; the largest mask apron accepts still has a float tile.
    const LinearPlan e = test::plan_for(random_mask(63, 63, true, 96), {4096, 4096, 1, PixelType::u16}, PixelType::u16);
    const cuda::FftTiling te = cuda::choose_fft_tiling(e, {4096, 4096, 1, PixelType::u16});
    ASSERT_NE(te.nx, 0);
    EXPECT_TRUE(te.f64);
    EXPECT_LT(double_fft_error_bound(e, te.nx, te.ny), fft_exact_error_limit);
    const LinearPlan widest = test::plan_for(random_mask(4097, 3, false, 97), {5000, 10, 1, PixelType::f32}, PixelType::f32);
    EXPECT_TRUE(cuda_fft_supports(widest, {5000, 10, 1, PixelType::f32}));
    // APRON_FFT_SIDE forces the side where the mask fits, and is ignored where it does not.
    {
        const ForcedFft side(128);
        EXPECT_EQ(cuda::choose_fft_tiling(q, small).nx, 128);
        const LinearPlan wide = test::plan_for(random_mask(129, 5, false, 98), small, PixelType::u8);
        EXPECT_GE(cuda::choose_fft_tiling(wide, small).nx, 256);
    }
}
