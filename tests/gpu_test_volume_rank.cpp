// 3-D rank filters on the CUDA backend (src/cuda/rank_volume.cu, `cuda.rank_volume_bits`) against the reference
// backend, bit for bit (SPEC.md "Rank": a selection, identical on every backend): every type, 1 and 3 channels,
// every border mode, balls, boxes larger than the volume, one plane and one voxel, f32 NaN; the plan names the
// kernel that runs; a device volume whose rows are pitched gives the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include <cuda_runtime.h>

#include "apron/pipeline.hpp"
#include "core/dispatch.hpp"
#include "cuda/launch_record.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

namespace apron::test {
namespace {

Image volume(int w, int h, int d, int c, PixelType t, std::uint32_t seed, double nan_fraction = 0) {
    Image v(ImageShape{w, h, c, t, d});
    std::mt19937 rng(seed);
    with_type(t, [&]<class T>() {
        for (int y = 0; y < int(v.shape().rows()); ++y)
            for (int k = 0; k < w * c; ++k) {
                if constexpr (std::is_same_v<T, float>) {
                    float s = float(int(rng() % 41) - 20) * 0.25f;  // ties, and -0 beside +0
                    if (s == 0 && rng() % 2) s = -0.0f;
                    if (std::uniform_real_distribution<double>(0, 1)(rng) < nan_fraction) s = NAN;
                    v.row<T>(y)[k] = s;
                } else {
                    v.row<T>(y)[k] = T(std::uniform_int_distribution<int>(0, int(highest_value<T>()))(rng));
                }
            }
    });
    return v;
}

const BorderMode all_modes[] = {BorderMode::constant, BorderMode::nearest, BorderMode::reflect, BorderMode::mirror, BorderMode::wrap};

TEST(CudaVolumeRank, EveryTypeModeAndElementIsTheReferencesBits) {
    REQUIRE_GPU();
    for (const PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (const int c : {1, 3})
            for (const BorderMode mode : all_modes)
                for (const std::string se : {"ball:1", "ball:2", "rect:3x3x3", "rect:4x2x3", "cross:3x5x3", "ellipsoid:5x3x3"}) {
                    const std::string spec = "percentile:p=40,se=" + se + ",border=" + to_string(mode) + ",value=1";
                    const Image v = volume(29, 17, 9, c, t, 7 + c, t == PixelType::f32 ? 0.1 : 0);
                    const Image want = Pipeline({spec}).run(v, {.backend = Backend::reference});
                    cuda::clear_launches();
                    const Image got = Pipeline({spec}).run(v, {.backend = Backend::cuda});
                    EXPECT_TRUE(same_samples(got.view().all_rows(), want.view().all_rows())) << spec << " " << to_string(t) << " c=" << c;
                    bool ran = false;
                    for (const KernelChoice& k : cuda::launches()) ran = ran || k.family == "cuda.rank_volume_bits";
                    EXPECT_TRUE(ran) << spec;
                }
}

TEST(CudaVolumeRank, SmallVolumesLargeWindowsAndAllNan) {
    REQUIRE_GPU();
    for (const BorderMode mode : all_modes)
        for (const auto& [shape, spec] : {std::pair{ImageShape{1, 1, 1, PixelType::u8, 1}, "median:se=rect:5x5x5"},
                                          std::pair{ImageShape{9, 7, 1, PixelType::u16, 1}, "median:se=ball:2"},
                                          std::pair{ImageShape{3, 2, 1, PixelType::f32, 2}, "rank:r=-1,se=ball:3"}}) {
            const std::string s = std::string(spec) + ",border=" + to_string(mode);
            const Image v = volume(shape.width, shape.height, shape.depth, shape.channels, shape.type, 3, 0.3);
            EXPECT_TRUE(same_samples(Pipeline({s}).run(v, {.backend = Backend::cuda}).view().all_rows(),
                                     Pipeline({s}).run(v, {.backend = Backend::reference}).view().all_rows()))
                << s;
        }
    const Image nan = volume(4, 4, 4, 1, PixelType::f32, 5, 1.0);
    const Image out = Pipeline({"median:se=rect:3x3x3"}).run(nan, {.backend = Backend::cuda});
    for (int y = 0; y < int(out.shape().rows()); ++y)
        for (int x = 0; x < 4; ++x) EXPECT_TRUE(std::isnan(out.row<float>(y)[x]));
}

TEST(CudaVolumeRank, ThePlanNamesTheKernelAndDeviceVolumesGiveTheSameBits) {
    REQUIRE_GPU();
    const Image v = volume(40, 23, 12, 1, PixelType::u16, 11);
    const Pipeline p({"median:se=ball:2,border=wrap"});
    const std::string plan = p.describe(v.shape(), {.backend = Backend::cuda});
    EXPECT_NE(plan.find("x, y and z: "), std::string::npos) << plan;
    EXPECT_NE(plan.find("cuda.rank_volume_bits"), std::string::npos) << plan;
    const Image want = p.run(v, {.backend = Backend::reference});
    // The volume in device memory with a pitch wider than its rows.
    const ImageShape s = v.shape();
    const std::size_t pitch = s.row_bytes() + 96;
    void *din = nullptr, *dout = nullptr;
    ASSERT_EQ(cudaMalloc(&din, pitch * std::size_t(s.rows())), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dout, pitch * std::size_t(s.rows())), cudaSuccess);
    ASSERT_EQ(cudaMemcpy2D(din, pitch, v.view().data, v.pitch(), s.row_bytes(), std::size_t(s.rows()), cudaMemcpyHostToDevice), cudaSuccess);
    const ConstImageView in{static_cast<const std::byte*>(din), s, pitch, Memory::device};
    const ImageView out{static_cast<std::byte*>(dout), s, pitch, Memory::device};
    p.run(in, out, {.backend = Backend::cuda});
    Image got(s);
    ASSERT_EQ(cudaMemcpy2D(got.view().data, got.pitch(), dout, pitch, s.row_bytes(), std::size_t(s.rows()), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(din);
    cudaFree(dout);
    EXPECT_TRUE(identical(got.view().all_rows(), want.view().all_rows()));
}

} // namespace
} // namespace apron::test
