// The column kernel (src/cuda/column_linear.cu: masks one sample wide, a volume's z steps) against the CPU
// backend: exact plans bit-identical, float plans within SPEC.md's tolerance, on every border mode, 1-4
// channels, each input and output type, anchors off the centre, columns taller than the image, one-row
// images, and views that start at any byte (its scalar form) giving the same bits as aligned ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "apron/pipeline.hpp"
#include "core/overrides.hpp"
#include "cuda/column_linear.hpp"
#include "cuda/launch_record.hpp"
#include "gpu_test_support.hpp"
#include "plan/plan.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

Mask column(int h, bool integer, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<double> v(static_cast<std::size_t>(h));
    for (double& x : v) x = integer ? std::uniform_int_distribution<int>(-3, 4)(rng) : std::uniform_real_distribution<double>(-1, 1)(rng);
    v[std::size_t(h) / 2] = integer ? 0 : v[std::size_t(h) / 2];  // a zero tap inside integer columns
    return Mask(1, h, v);
}

// `in` through the column kernel on device buffers whose rows start `offset` samples into a padded pitch
// (a sample's alignment, not a vector's: the scalar form).
Image on_gpu(const LinearPlan& p, ConstImageView in, std::size_t offset) {
    const ImageShape out_shape{in.width(), in.height(), in.channels(), p.out};
    const std::size_t in_skip = offset * bytes_per_sample(in.shape.type), out_skip = offset * bytes_per_sample(p.out);
    const std::size_t in_pitch = in.shape.row_bytes() + in_skip + 32, out_pitch = out_shape.row_bytes() + out_skip + 32;
    std::byte *din = nullptr, *dout = nullptr;
    EXPECT_EQ(cudaMalloc(&din, in_pitch * std::size_t(in.height()) + in_skip), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&dout, out_pitch * std::size_t(in.height()) + out_skip), cudaSuccess);
    EXPECT_EQ(cudaMemcpy2D(din + in_skip, in_pitch, in.data, in.pitch, in.shape.row_bytes(), std::size_t(in.height()),
                           cudaMemcpyHostToDevice),
              cudaSuccess);
    cuda::launch_column_linear(p, ConstImageView{din + in_skip, in.shape, in_pitch, Memory::device},
                               ImageView{dout + out_skip, out_shape, out_pitch, Memory::device}, nullptr);
    Image got(out_shape);
    EXPECT_EQ(cudaMemcpy2D(got.view().data, got.pitch(), dout + out_skip, out_pitch, out_shape.row_bytes(),
                           std::size_t(in.height()), cudaMemcpyDeviceToHost),
              cudaSuccess);
    cudaFree(din);
    cudaFree(dout);
    return got;
}

Image on_cpu(const LinearPlan& p, ConstImageView in) {
    static auto ex = make_cpu_executor(0);
    Image out(in.width(), in.height(), in.channels(), p.out);
    ex->linear(p, in, out.view());
    return out;
}

void expect_matches_cpu(const LinearPlan& p, const Image& in, const std::string& what) {
    ASSERT_TRUE(cuda::column_linear_supports(p)) << what;
    const Image want = on_cpu(p, in.view());
    const Image aligned = on_gpu(p, in.view(), 0);
    if (p.exact) {
        EXPECT_TRUE(test::identical(want.view(), aligned.view())) << what << " differs by " << test::max_abs_diff(want.view(), aligned.view());
    } else {
        double tol = 1;
        if (p.out == PixelType::f32)
            tol = 1e-5 * p.step.mask.abs_sum() * std::max({test::max_abs(in.view()), std::fabs(p.step.border_value), 1.0}) + 1e-30;
        EXPECT_LE(test::max_abs_diff(want.view(), aligned.view()), tol) << what;
    }
    // Rows that start one sample into the buffer take the scalar form: the same bits.
    const Image odd = on_gpu(p, in.view(), 1);
    EXPECT_TRUE(test::identical(aligned.view(), odd.view())) << what << " (unaligned view)";
}

} // namespace

TEST(CudaColumn, EveryTypeBorderAndChannelCount) {
    REQUIRE_GPU();
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c : {1, 3, 4})
            for (int h : {2, 7, 9, 17}) {
                const Image in = test::random_image(131, 45, c, t, std::uint32_t(7 * h + c));
                for (bool integer : {true, false})
                    for (BorderMode b : test::all_borders) {
                        const double value = b == BorderMode::constant ? (t == PixelType::f32 ? 0.75 : 7) : 0;
                        for (PixelType out : {t, PixelType::f32}) {
                            const LinearPlan p = test::plan_for(column(h, integer, std::uint32_t(h + c)), in.shape(), out, b, value);
                            expect_matches_cpu(p, in, std::string(to_string(t)) + "->" + to_string(out) + " c=" +
                                                          std::to_string(c) + " 1x" + std::to_string(h) +
                                                          (p.exact ? " exact" : " float") + " " + to_string(b));
                        }
                    }
            }
}

TEST(CudaColumn, AnchorsTallColumnsAndOneRow) {
    REQUIRE_GPU();
    Mask low = column(6, false, 5);
    low.anchor_y = 0;
    Mask high = column(5, true, 6);
    high.anchor_y = 4;
    for (const Image& in : {test::random_image(77, 1, 1, PixelType::u16, 8), test::random_image(5, 3, 2, PixelType::u8, 9),
                            test::random_image(1029, 70, 1, PixelType::f32, 10)})
        for (const Mask& m : {low, high, column(64, false, 11), column(33, true, 12)})
            for (BorderMode b : test::all_borders)
                expect_matches_cpu(test::plan_for(m, in.shape(), in.type(), b, 3), in,
                                   std::to_string(in.width()) + "x" + std::to_string(in.height()) + " 1x" +
                                       std::to_string(m.height) + " anchor " + std::to_string(m.anchor_y) + " " + to_string(b));
}

TEST(CudaColumn, TheExecutorRunsZStepsHere) {
    REQUIRE_GPU();
    Image v(ImageShape{40, 24, 1, PixelType::u16, 12});
    std::mt19937 rng(3);
    for (int y = 0; y < int(v.shape().rows()); ++y)
        for (int x = 0; x < 40; ++x) v.row<std::uint16_t>(y)[x] = std::uint16_t(rng() % 65536);
    Overrides o = overrides();
    o.column_on = true;  // opt-in (APRON_COLUMN=1)
    OverrideScope scope(o);
    cuda::clear_launches();
    const Pipeline p({"gaussian:sigma=1,sigma_z=1.5"});
    const Image gpu = p.run(v, {.backend = Backend::cuda});
    bool column_ran = false;
    for (const KernelChoice& k : cuda::launches()) column_ran = column_ran || k.family == "cuda.column";
    EXPECT_TRUE(column_ran);
    EXPECT_LE(test::max_abs_diff(p.run(v, {.backend = Backend::cpu}).view().all_rows(), gpu.view().all_rows()), 1);
}
