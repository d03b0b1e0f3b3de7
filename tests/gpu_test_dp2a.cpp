// The fixed-point byte dot-product form (IDP.2A, src/cuda/direct_dp4a.cu, core/fixed_point.hpp) for float
// masks on u8: against the CPU backend within SPEC's one unit for float plans and against the fixed-point
// arithmetic computed here exactly, on 3x3 and 5x5 random float masks, every border mode, u8 and u16
// outputs, scales and deltas, images with interior blocks and images smaller than the mask, row bands
// (identical bits to the whole image) and input views whose rows are not 4-byte aligned (identical bits to
// aligned ones). Also what it must decline (the plan's name for it: gpu_test_plan_kernels.cpp). Skips
// without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/border_index.hpp"
#include "cuda/direct_dp4a.hpp"
#include "plan/plan.hpp"
#include "gpu_test_support.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

using test::plan_for;

Mask float_mask(int k, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> d(-0.4, 1.0);
    std::vector<double> w(std::size_t(k) * k);
    for (double& v : w) v = d(rng);
    return Mask(k, k, w);
}

// The fixed-point result computed on the host from the same FixedPointMask: what the kernel must store.
Image fixed_reference(const LinearPlan& p, const FixedPointMask& f, const Image& in) {
    const int k = p.step.mask.width, r = k / 2, hi = p.out == PixelType::u8 ? 255 : 65535;
    const int outside = int(store_pixel<std::uint8_t>(p.step.border_value));
    Image out(ImageShape{in.width(), in.height(), 1, p.out});
    for (int y = 0; y < in.height(); ++y)
        for (int x = 0; x < in.width(); ++x) {
            std::int64_t acc = f.bias;
            for (int j = 0; j < k; ++j)
                for (int i = 0; i < k; ++i) {
                    const int sy = map_index(y + j - r, in.height(), p.step.border);
                    const int sx = map_index(x + i - r, in.width(), p.step.border);
                    const int v = sx < 0 || sy < 0 ? outside : in.row<std::uint8_t>(sy)[sx];
                    acc += std::int64_t(f.q[std::size_t(j) * k + i]) * v;
                }
            const std::int64_t v = std::min<std::int64_t>(std::max<std::int64_t>(acc >> f.shift, 0), hi);
            if (p.out == PixelType::u8) out.row<std::uint8_t>(y)[x] = std::uint8_t(v);
            else out.row<std::uint16_t>(y)[x] = std::uint16_t(v);
        }
    return out;
}

// Runs the plan on the CUDA executor from an input view `in_shift` bytes into a wider buffer (0: aligned),
// rows [row_begin, row_end) (-1: the whole image through the executor), and checks the fixed-point form
// took it, stored the host's fixed-point bits, and stays within one unit of the CPU backend.
void expect_fixed(const LinearPlan& p, const Image& in, int in_shift = 0, int row_begin = 0, int row_end = -1) {
    const std::string what = std::to_string(p.step.mask.width) + "x" + std::to_string(p.step.mask.height) + " " +
                             to_string(p.out) + " border " + to_string(p.step.border) + " image " +
                             std::to_string(in.width()) + "x" + std::to_string(in.height()) + " shift " +
                             std::to_string(in_shift);
    ASSERT_FALSE(p.exact) << what;
    Executor& ex = test::shared_cuda_executor();
    Buffer d_wide = ex.allocate(ImageShape{in.width() + in_shift, in.height(), 1, PixelType::u8});
    const ImageView d_in = d_wide.view.roi(in_shift, 0, in.width(), in.height());
    ex.upload(in.view(), d_in);
    const auto f = cuda::direct_dp2a_form(p, d_in);
    ASSERT_TRUE(f) << what;
    ASSERT_LE(f->error_bound, 0.25) << what;
    const ImageShape out_shape{in.width(), in.height(), 1, p.out};
    Buffer d_out = ex.allocate(out_shape);
    ASSERT_EQ(cudaMemset(d_out.view.data, 0, d_out.view.pitch * std::size_t(in.height())), cudaSuccess);
    if (row_end < 0) {
        ex.linear(p, d_in, d_out.view);
    } else {
        cuda::launch_direct_dp2a(p, *f, d_in, d_out.view, nullptr, row_begin, row_end);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    Image got(out_shape);
    ex.download(d_out.cview(), got.view());
    const Image want = fixed_reference(p, *f, in);
    const int y0 = row_end < 0 ? 0 : row_begin, y1 = row_end < 0 ? in.height() : row_end;
    EXPECT_TRUE(test::identical(want.view().roi(0, y0, in.width(), y1 - y0), got.view().roi(0, y0, in.width(), y1 - y0)))
        << what << ": differs from the fixed-point arithmetic by "
        << test::max_abs_diff(want.view().roi(0, y0, in.width(), y1 - y0), got.view().roi(0, y0, in.width(), y1 - y0));
    Image cpu(out_shape);
    make_cpu_executor(1)->linear(p, in.view(), cpu.view());
    EXPECT_LE(test::max_abs_diff(cpu.view().roi(0, y0, in.width(), y1 - y0), got.view().roi(0, y0, in.width(), y1 - y0)), 1.0)
        << what << " against the CPU backend";
}

} // namespace

TEST(CudaDp2a, EveryMaskSizeAndBorderOnLargeAndTinyImages) {
    REQUIRE_GPU();
    std::uint32_t seed = 100;
    std::vector<Image> images;
    for (auto [w, h] : {std::pair{1031, 517}, {300, 1}, {1, 40}, {5, 3}, {1, 1}})
        images.push_back(test::random_image(w, h, 1, PixelType::u8, std::uint32_t(w * 3 + h)));
    for (int k : {3, 5}) {
        const Mask m = float_mask(k, ++seed);
        for (const Image& in : images)
            for (BorderMode b : test::all_borders) expect_fixed(plan_for(m, in.shape(), PixelType::u8, b, 7), in);
    }
}

TEST(CudaDp2a, OutputTypesScalesAndDeltas) {
    REQUIRE_GPU();
    const Image in = test::random_image(777, 131, 1, PixelType::u8, 121);
    const Mask m3 = float_mask(3, 122), m5 = float_mask(5, 123);
    for (PixelType out : {PixelType::u8, PixelType::u16}) {
        expect_fixed(plan_for(m3, in.shape(), out, BorderMode::nearest, 0, Normalise::none, 0.5), in);
        expect_fixed(plan_for(m5, in.shape(), out, BorderMode::reflect, 0, Normalise::sum, 1, 3.25), in);
        expect_fixed(plan_for(m5, in.shape(), out, BorderMode::wrap, 0, Normalise::none, 0.3, -20.5), in);
    }
}

TEST(CudaDp2a, RowBandsAndUnalignedInputRowsGiveTheSameBits) {
    REQUIRE_GPU();
    const Image in = test::random_image(1029, 300, 1, PixelType::u8, 131);
    const LinearPlan p = plan_for(float_mask(5, 132), in.shape(), PixelType::u8, BorderMode::mirror);
    expect_fixed(p, in, 0, 37, 101);
    expect_fixed(p, in, 0, 250, 300);
    for (int shift : {1, 2, 3}) expect_fixed(p, in, shift);
}

TEST(CudaDp2a, DeclinesWhatItCannotBound) {
    REQUIRE_GPU();
    const ImageShape shape{64, 64, 1, PixelType::u8};
    Image img(shape);
    const ConstImageView v = img.view();
    // Exact plans (the IDP.4A form), f32 outputs, u16 and colour images, 7x7, a weight range 16 bits cannot
    // hold within the bound.
    EXPECT_FALSE(cuda::direct_dp2a_form(plan_for(Mask(3, 3, std::vector<double>(9, 1.0)), shape, PixelType::u8), v));
    EXPECT_FALSE(cuda::direct_dp2a_form(plan_for(float_mask(3, 141), shape, PixelType::f32), v));
    Image img16(ImageShape{64, 64, 1, PixelType::u16}), img3(ImageShape{64, 64, 3, PixelType::u8});
    EXPECT_FALSE(cuda::direct_dp2a_form(plan_for(float_mask(3, 142), img16.shape(), PixelType::u16), img16.view()));
    EXPECT_FALSE(cuda::direct_dp2a_form(plan_for(float_mask(3, 143), img3.shape(), PixelType::u8), img3.view()));
    EXPECT_FALSE(cuda::direct_dp2a_form(plan_for(float_mask(7, 144), shape, PixelType::u8), v));
    std::vector<double> wide(9, 1e-6);
    wide[4] = 1.0;
    EXPECT_FALSE(cuda::direct_dp2a_form(plan_for(Mask(3, 3, wide), shape, PixelType::u8, BorderMode::reflect, 0,
                                                 Normalise::none, 200.0), v));
}
