// The byte dot-product kernel (src/cuda/direct_dp4a.cu) against the CPU backend, bit for bit: exact u8
// plans with weights over the whole signed-byte range, masks 3x3 to 9x9, every border mode, every output
// type, normalisations, scales and deltas, images with interior blocks and images smaller than the mask,
// row bands, and output views whose rows are not 8-byte aligned. Also what it must decline. Skips
// without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <string>
#include <vector>

#include "cuda/direct_dp4a.hpp"
#include "plan/plan.hpp"
#include "gpu_test_support.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

using test::plan_for;

// Integer weights in [lo, hi], with both ends present (the packing of -128 and 127 is the risky part)
// and, when hi > 0, a positive sum: `normalize=sum` over a negative sum turns the integer form's signs
// around, and -128 would become 128, which the kernel declines.
Mask byte_mask(int k, int lo, int hi, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<double> w(std::size_t(k) * k);
    for (double& v : w) v = std::uniform_int_distribution<int>(lo, hi)(rng);
    const std::size_t top = w.size() / 2 + 1 < w.size() ? w.size() / 2 + 1 : 0;
    w[0] = lo;
    w[top] = hi;
    double sum = 0;
    for (double v : w) sum += v;
    for (std::size_t i = 1; i < w.size() && sum <= 0 && hi > 0; ++i)
        if (i != top) sum += hi - w[i], w[i] = hi;
    return Mask(k, k, w);
}

// Runs the plan on the CUDA executor (device buffers; the output a view `out_shift` samples into a wider
// buffer) and on the CPU backend; expects identical bits and that the dp4a kernel took it.
void expect_exact(const LinearPlan& p, const Image& in, int out_shift = 0, int row_begin = 0, int row_end = -1) {
    const std::string what = std::to_string(p.step.mask.width) + "x" + std::to_string(p.step.mask.height) + " " +
                             to_string(p.out) + " border " + to_string(p.step.border) + " image " +
                             std::to_string(in.width()) + "x" + std::to_string(in.height());
    ASSERT_TRUE(p.exact) << what;
    Executor& ex = test::shared_cuda_executor();
    Buffer d_in = ex.allocate(in.shape());
    ex.upload(in.view(), d_in.view);
    ASSERT_TRUE(cuda::direct_dp4a_supports(p, d_in.cview())) << what;
    const ImageShape out_shape{in.width(), in.height(), 1, p.out};
    Buffer d_wide = ex.allocate(ImageShape{in.width() + out_shift, in.height(), 1, p.out});
    // Zeroed, so that the rows a band leaves alone are defined when the whole view comes back.
    ASSERT_EQ(cudaMemset(d_wide.view.data, 0, d_wide.view.pitch * std::size_t(in.height())), cudaSuccess);
    const ImageView d_out = d_wide.view.roi(out_shift, 0, in.width(), in.height());
    if (row_end < 0) {
        ex.linear(p, d_in.cview(), d_out);
    } else {
        cuda::launch_direct_dp4a(p, d_in.cview(), d_out, nullptr, row_begin, row_end);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    Image got(out_shape);
    ex.download(d_out, got.view());
    Image want(out_shape);
    make_cpu_executor(1)->linear(p, in.view(), want.view());
    if (row_end >= 0) {
        EXPECT_TRUE(test::identical(want.view().roi(0, row_begin, in.width(), row_end - row_begin),
                                    got.view().roi(0, row_begin, in.width(), row_end - row_begin)))
            << what << " rows " << row_begin << ".." << row_end;
        return;
    }
    EXPECT_TRUE(test::identical(want.view(), got.view())) << what << ": differs by " << test::max_abs_diff(want.view(), got.view());
}

} // namespace

TEST(CudaDp4a, EveryMaskSizeAndBorderOnLargeAndTinyImages) {
    REQUIRE_GPU();
    std::uint32_t seed = 1;
    // 1031 x 517: interior blocks (256 x 32 outputs) and every kind of edge block; the others are smaller
    // than a block, a row, a column, or smaller than the mask.
    std::vector<Image> images;
    for (auto [w, h] : {std::pair{1031, 517}, {300, 1}, {1, 40}, {5, 3}, {1, 1}})
        images.push_back(test::random_image(w, h, 1, PixelType::u8, std::uint32_t(w + h)));
    for (int k : {3, 5, 7, 9}) {
        const Mask m = byte_mask(k, -128, 127, ++seed);
        for (const Image& in : images)
            for (BorderMode b : test::all_borders) expect_exact(plan_for(m, in.shape(), PixelType::u8, b, 7, Normalise::sum), in);
    }
}

TEST(CudaDp4a, OutputTypesAndFinishes) {
    REQUIRE_GPU();
    const Image in = test::random_image(777, 131, 1, PixelType::u8, 21);
    const Mask m3 = byte_mask(3, -3, 3, 22), m5 = byte_mask(5, -20, 100, 23), pos = byte_mask(5, 0, 9, 24);
    for (PixelType out : {PixelType::u8, PixelType::u16, PixelType::f32}) {
        expect_exact(plan_for(m3, in.shape(), out, BorderMode::nearest, 0, Normalise::none, 0.125), in);
        expect_exact(plan_for(m5, in.shape(), out, BorderMode::reflect, 0, Normalise::book, 1, 3), in);
        expect_exact(plan_for(pos, in.shape(), out, BorderMode::wrap, 0, Normalise::sum, 0.3, -2.5), in);
        expect_exact(plan_for(m5, in.shape(), out, BorderMode::mirror, 0, Normalise::none, 1, 1000), in);
    }
}

TEST(CudaDp4a, RowBandsAndUnalignedOutputRows) {
    REQUIRE_GPU();
    const Image in = test::random_image(1029, 300, 1, PixelType::u8, 31);
    const Mask m = byte_mask(5, -128, 127, 32);
    const LinearPlan p = plan_for(m, in.shape(), PixelType::u8, BorderMode::wrap, 0, Normalise::sum);
    expect_exact(p, in, 0, 37, 101);
    expect_exact(p, in, 0, 250, 300);
    // Output rows starting 4 and 3 bytes past an 8-byte boundary: scalar stores, same bits.
    expect_exact(p, in, 4);
    expect_exact(p, in, 3);
}

TEST(CudaDp4a, DeclinesWhatItCannotDo) {
    REQUIRE_GPU();
    const ImageShape shape{64, 64, 1, PixelType::u8};
    Image img(shape);
    const ConstImageView v = img.view();
    // A weight outside the signed byte range.
    EXPECT_FALSE(cuda::direct_dp4a_supports(plan_for(byte_mask(3, -128, 128, 41), shape, PixelType::u8, BorderMode::reflect), v));
    EXPECT_FALSE(cuda::direct_dp4a_supports(plan_for(byte_mask(3, -129, 0, 42), shape, PixelType::u8, BorderMode::reflect), v));
    // Float weights, u16 images, several channels, 11x11, rows not 4-byte aligned.
    EXPECT_FALSE(cuda::direct_dp4a_supports(plan_for(Mask(3, 3, std::vector<double>(9, 1 / 3.14159)), shape, PixelType::u8, BorderMode::reflect), v));
    const ImageShape u16{64, 64, 1, PixelType::u16};
    Image img16(u16);
    EXPECT_FALSE(cuda::direct_dp4a_supports(plan_for(byte_mask(3, -3, 3, 43), u16, PixelType::u16, BorderMode::reflect), img16.view()));
    const ImageShape rgb{64, 64, 3, PixelType::u8};
    Image img3(rgb);
    EXPECT_FALSE(cuda::direct_dp4a_supports(plan_for(byte_mask(3, -3, 3, 44), rgb, PixelType::u8, BorderMode::reflect), img3.view()));
    EXPECT_FALSE(cuda::direct_dp4a_supports(plan_for(byte_mask(11, -3, 3, 45), shape, PixelType::u8, BorderMode::reflect), v));
    EXPECT_FALSE(cuda::direct_dp4a_supports(plan_for(byte_mask(3, -3, 3, 46), shape, PixelType::u8, BorderMode::reflect),
                                            img.view().roi(1, 0, 63, 64)));
    // And takes the ones it should.
    EXPECT_TRUE(cuda::direct_dp4a_supports(plan_for(byte_mask(9, -128, 127, 47), shape, PixelType::u8, BorderMode::reflect), v));
}
