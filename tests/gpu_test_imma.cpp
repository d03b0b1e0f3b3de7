// The tensor-core kernel (src/cuda/direct_imma.cu) against the CPU backend, bit for bit: exact u8 plans
// with weights over the whole signed-byte range, masks 1x1 to 31x31 (odd, even, non-square, off-centre
// anchors, each width class: up to 9, 10..25, 26..31 columns), every border mode, every output type,
// normalisations, scales and deltas, images with interior blocks and images smaller than the mask, row
// bands, and input and output views that are not aligned. Also what it must decline. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cuda/direct_imma.hpp"
#include "plan/plan.hpp"
#include "gpu_test_support.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

using test::plan_for;

// A w x h mask with the anchor at (ax, ay) (< 0: centred). Weights uniform in [lo, hi] and, so that the
// byte packing of both ends is always exercised, -128 and 127 at two cells; then raised until the sum is
// positive (`normalize=sum` over a negative sum negates the weights, and -128 would become 128, which
// the kernel declines). Large masks take a narrower [lo, hi] so that the plan keeps the f32 accumulator
// (sum |w| * 255 < 2^24), which the kernel needs.
Mask byte_mask(int w, int h, int lo, int hi, std::uint32_t seed, int ax = -1, int ay = -1) {
    std::mt19937 rng(seed);
    std::vector<double> v(std::size_t(w) * h);
    for (double& x : v) x = std::uniform_int_distribution<int>(lo, hi)(rng);
    const std::size_t top = v.size() > 1 ? v.size() / 2 : 0;
    if (v.size() > 1) v[v.size() - 1] = -128;
    v[top] = 127;
    double sum = 0;
    for (double x : v) sum += x;
    for (std::size_t i = 0; i + 1 < v.size() && sum <= 0; ++i)
        if (i != top) sum += hi - v[i], v[i] = hi;
    Mask m(w, h, v);
    if (ax >= 0) m.anchor_x = ax;
    if (ay >= 0) m.anchor_y = ay;
    return m;
}

// Mostly small non-negative weights (and the two byte ends): `normalize=sum` gives local averages, so u8
// and u16 outputs spread over their range instead of saturating.
Mask smooth_mask(int w, int h, std::uint32_t seed, int ax = -1, int ay = -1) { return byte_mask(w, h, 0, 20, seed, ax, ay); }

struct Gpu {
    std::unique_ptr<Executor> ex = make_cuda_executor();
    std::unique_ptr<Executor> cpu = make_cpu_executor(0);
};
Gpu& gpu() {
    static Gpu g;
    return g;
}

// Runs the plan as `tensor` on the CUDA executor (device buffers: the input a view `in_shift` bytes into a
// wider buffer, the output `out_shift` samples into one) and as planned on the CPU backend; expects
// identical bits and that the tensor-core kernel took it. row_end >= 0: only rows [row_begin, row_end),
// through launch_direct_imma.
void expect_exact(const LinearPlan& planned, const Image& in, int out_shift = 0, int in_shift = 0, int row_begin = 0,
                  int row_end = -1) {
    const Mask& m = planned.step.mask;
    const std::string what = std::to_string(m.width) + "x" + std::to_string(m.height) + " anchor " +
                             std::to_string(m.anchor_x) + "," + std::to_string(m.anchor_y) + " " + to_string(planned.out) +
                             " border " + to_string(planned.step.border) + " image " + std::to_string(in.width()) + "x" +
                             std::to_string(in.height()) + " shifts " + std::to_string(in_shift) + "/" +
                             std::to_string(out_shift);
    ASSERT_TRUE(planned.exact) << what;
    ASSERT_EQ(planned.accumulator, Accumulator::f32) << what;
    LinearPlan p = planned;
    p.algorithm = LinearAlgorithm::tensor;
    Executor& ex = *gpu().ex;
    Buffer d_in_wide = ex.allocate(ImageShape{in.width() + in_shift, in.height(), 1, PixelType::u8});
    const ImageView d_in = d_in_wide.view.roi(in_shift, 0, in.width(), in.height());
    ex.upload(in.view(), d_in);
    ASSERT_TRUE(cuda::direct_imma_supports(p, as_const(d_in))) << what;
    const ImageShape out_shape{in.width(), in.height(), 1, p.out};
    Buffer d_wide = ex.allocate(ImageShape{in.width() + out_shift, in.height(), 1, p.out});
    // Zeroed, so that the rows a band leaves alone are defined when the whole view comes back.
    ASSERT_EQ(cudaMemset(d_wide.view.data, 0, d_wide.view.pitch * std::size_t(in.height())), cudaSuccess);
    const ImageView d_out = d_wide.view.roi(out_shift, 0, in.width(), in.height());
    if (row_end < 0) {
        ex.linear(p, as_const(d_in), d_out);
    } else {
        ex.synchronize();
        cuda::launch_direct_imma(p, as_const(d_in), d_out, nullptr, row_begin, row_end);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    Image got(out_shape);
    ex.download(d_out, got.view());
    Image want(out_shape);
    gpu().cpu->linear(planned, in.view(), want.view());
    if (row_end >= 0) {
        EXPECT_TRUE(test::identical(want.view().roi(0, row_begin, in.width(), row_end - row_begin),
                                    got.view().roi(0, row_begin, in.width(), row_end - row_begin)))
            << what << " rows " << row_begin << ".." << row_end;
        return;
    }
    EXPECT_TRUE(test::identical(want.view(), got.view()))
        << what << ": differs by " << test::max_abs_diff(want.view(), got.view());
}

std::vector<Image> test_images() {
    // 1031 x 517: interior blocks (64 x 128 outputs) and every kind of edge block; 67 x 131 just over one
    // block each way, odd; the others are smaller than a block, a row, a column, or smaller than the mask.
    std::vector<Image> images;
    for (auto [w, h] : {std::pair{1031, 517}, {67, 131}, {300, 1}, {1, 40}, {5, 3}, {1, 1}})
        images.push_back(test::random_image(w, h, 1, PixelType::u8, std::uint32_t(w * 7 + h)));
    return images;
}

} // namespace

TEST(CudaImma, OddSquareMasksEveryBorderOnLargeAndTinyImages) {
    REQUIRE_GPU();
    const std::vector<Image> images = test_images();
    std::uint32_t seed = 100;
    for (int k : {11, 13, 15, 19, 25, 27, 31}) {
        // The full byte range up to 25x25; beyond it sum |w| * 255 must stay below 2^24 (f32 accumulator).
        const Mask m = k <= 25 ? byte_mask(k, k, -128, 127, ++seed) : byte_mask(k, k, -40, 60, ++seed);
        const Mask avg = smooth_mask(k, k, ++seed);
        for (const Image& in : images)
            for (BorderMode b : test::all_borders) {
                expect_exact(plan_for(m, in.shape(), PixelType::f32, b, 7), in);  // the raw sums, exactly
                expect_exact(plan_for(avg, in.shape(), PixelType::u8, b, 7, Normalise::sum), in);
            }
    }
}

TEST(CudaImma, EvenNonSquareAndOffCentreMasks) {
    REQUIRE_GPU();
    const std::vector<Image> images = test_images();
    struct Shape {
        int w, h, ax, ay;
    };
    // Each width class (<= 9, 10..25, 26..31 columns), its edges, mask heights around the groups of 8
    // rows (1, 7, 8, 9, 16, 17, 24, 31), anchors at corners and edges.
    const Shape shapes[] = {{1, 1, -1, -1},  {3, 3, -1, -1},  {9, 9, 0, 8},    {1, 31, -1, -1}, {31, 1, -1, -1},
                            {12, 12, -1, -1}, {16, 9, 15, 0}, {10, 30, 3, 27}, {25, 8, 24, 7},  {26, 26, -1, -1},
                            {24, 31, 0, 0},  {27, 13, 26, 12}, {31, 17, 5, 16}, {30, 24, -1, -1}, {17, 7, 8, 6},
                            {2, 16, 1, 0}};
    std::uint32_t seed = 200;
    for (const Shape& s : shapes) {
        const Mask m = s.w * s.h <= 625 ? byte_mask(s.w, s.h, -128, 127, ++seed, s.ax, s.ay)
                                        : byte_mask(s.w, s.h, -40, 60, ++seed, s.ax, s.ay);
        for (const Image& in : images)
            for (BorderMode b : test::all_borders)
                expect_exact(plan_for(m, in.shape(), PixelType::f32, b, 200, Normalise::none, 1, 0.5), in);
    }
}

TEST(CudaImma, OutputTypesAndFinishes) {
    REQUIRE_GPU();
    const Image in = test::random_image(777, 300, 1, PixelType::u8, 21);
    const Mask m15 = byte_mask(15, 15, -128, 127, 22), m25 = byte_mask(25, 25, -20, 100, 23);
    const Mask m31 = byte_mask(31, 31, -40, 60, 24), avg21 = smooth_mask(21, 21, 25, 3, 17);
    const Mask avg31 = smooth_mask(31, 31, 26), avg9 = smooth_mask(9, 9, 27);
    // Zero sum (book adds the mid value): antisymmetric weights.
    std::vector<double> zs(17 * 17, 0.0);
    std::mt19937 rng(28);
    for (std::size_t i = 0; i < zs.size() / 2; ++i)
        zs[i] = std::uniform_int_distribution<int>(-127, 127)(rng), zs[zs.size() - 1 - i] = -zs[i];
    const Mask zero_sum(17, 17, zs);
    for (PixelType out : {PixelType::u8, PixelType::u16, PixelType::f32}) {
        expect_exact(plan_for(m15, in.shape(), out, BorderMode::nearest, 0, Normalise::none, 0.125), in);
        expect_exact(plan_for(m25, in.shape(), out, BorderMode::reflect, 0, Normalise::book, 1, 3), in);
        expect_exact(plan_for(avg21, in.shape(), out, BorderMode::wrap, 0, Normalise::sum, 0.3, -2.5), in);
        expect_exact(plan_for(m31, in.shape(), out, BorderMode::mirror, 0, Normalise::none, 1, 1000), in);
        expect_exact(plan_for(avg31, in.shape(), out, BorderMode::constant, 255, Normalise::sum, 2, -7), in);
        expect_exact(plan_for(avg31, in.shape(), out, BorderMode::reflect, 0, Normalise::sum, 0.25), in);
        expect_exact(plan_for(avg9, in.shape(), out, BorderMode::nearest, 0, Normalise::sum, 1, 1), in);
        expect_exact(plan_for(zero_sum, in.shape(), out, BorderMode::reflect, 0, Normalise::book), in);
    }
}

TEST(CudaImma, RowBandsAndUnalignedViews) {
    REQUIRE_GPU();
    const Image in = test::random_image(1029, 300, 1, PixelType::u8, 31);
    const Mask m = smooth_mask(23, 19, 32, 4, 15);
    const LinearPlan p = plan_for(m, in.shape(), PixelType::u8, BorderMode::wrap, 0, Normalise::sum);
    expect_exact(p, in, 0, 0, 37, 101);
    expect_exact(p, in, 0, 0, 250, 300);
    expect_exact(p, in, 0, 0, 0, 1);
    expect_exact(p, in, 0, 3, 128, 257);  // a band on an unaligned input view
    // Output rows starting 1, 2 and 3 bytes past an aligned boundary: scalar stores, same bits.
    for (int shift : {1, 2, 3}) expect_exact(p, in, shift);
    for (PixelType out : {PixelType::u16, PixelType::f32})
        expect_exact(plan_for(m, in.shape(), out, BorderMode::reflect, 0, Normalise::sum, 0.5, 1), in, 1);
    // Input views 1..3 bytes past a word boundary: every block stages byte by byte.
    const Mask wide = smooth_mask(31, 29, 33);
    for (int shift : {1, 2, 3}) {
        expect_exact(p, in, 0, shift);
        expect_exact(plan_for(wide, in.shape(), PixelType::u8, BorderMode::mirror, 0, Normalise::sum), in, 0, shift);
    }
}

TEST(CudaImma, DeclinesWhatItCannotDo) {
    REQUIRE_GPU();
    const ImageShape shape{64, 64, 1, PixelType::u8};
    Image img(shape);
    const ConstImageView v = img.view();
    auto supports = [&](const Mask& m, const ImageShape& s, ConstImageView view) {
        LinearPlan p = plan_for(m, s, s.type, BorderMode::reflect);
        p.algorithm = LinearAlgorithm::tensor;
        return cuda::direct_imma_supports(p, view);
    };
    // A weight outside the signed byte range.
    std::vector<double> w(15 * 15, 1.0);
    w[3] = 128;
    EXPECT_FALSE(supports(Mask(15, 15, w), shape, v));
    w[3] = -129;
    EXPECT_FALSE(supports(Mask(15, 15, w), shape, v));
    // Float weights, u16 images, several channels, masks over 31 either way.
    EXPECT_FALSE(supports(Mask(15, 15, std::vector<double>(225, 1 / 3.14159)), shape, v));
    const ImageShape u16{64, 64, 1, PixelType::u16};
    Image img16(u16);
    EXPECT_FALSE(supports(byte_mask(15, 15, -3, 3, 43), u16, img16.view()));
    const ImageShape rgb{64, 64, 3, PixelType::u8};
    Image img3(rgb);
    EXPECT_FALSE(supports(byte_mask(15, 15, -3, 3, 44), rgb, img3.view()));
    EXPECT_FALSE(supports(byte_mask(32, 32, -3, 3, 45), shape, v));
    EXPECT_FALSE(supports(byte_mask(33, 1, -3, 3, 46), shape, v));
    EXPECT_FALSE(supports(byte_mask(1, 33, -3, 3, 47), shape, v));
    // Sums that need the f64 accumulator: 31x31 weights of 127 (sum |w| * 255 > 2^24).
    EXPECT_FALSE(supports(Mask(31, 31, std::vector<double>(961, 127)), shape, v));
    // And takes the ones it should.
    EXPECT_TRUE(supports(byte_mask(31, 31, -40, 60, 48), shape, v));
    EXPECT_TRUE(supports(byte_mask(9, 9, -128, 127, 49), shape, v));
    EXPECT_TRUE(supports(byte_mask(1, 1, 0, 0, 50), shape, v));
    EXPECT_TRUE(supports(byte_mask(2, 31, -128, 127, 51, 0, 30), shape, v));
    EXPECT_TRUE(supports(byte_mask(15, 15, -128, 127, 52), shape, img.view().roi(1, 0, 63, 64)));
}
