// The fused separable CUDA kernel (and its two-pass form beyond radius 32) against the CPU backend:
// exact plans bit for bit, float plans within SPEC's tolerance; every border mode, 1-4 channels, tiny,
// odd and large sizes, masks larger than the image, ROI views in device memory, even-length factors.
// Skips where no GPU is found.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#if APRON_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "apron/pipeline.hpp"
#include "plan/plan.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

// The first step's linear plan for this spec on this shape.
LinearPlan plan_of(const std::string& spec, const ImageShape& shape, PixelType out) {
    const ExecutionPlan plan = make_plan({parse_operation(spec)}, shape, out, Backend::cuda);
    return std::get<LinearPlan>(plan.operations.at(0).steps.at(0).what);
}

// Compares the CUDA backend with the CPU backend on `in`; checks first that the plan is separable (so
// the fused kernel, not a direct one, runs) and whether it is exact.
void expect_matches_cpu(const std::string& spec, ConstImageView in, PixelType out, bool want_exact) {
    SCOPED_TRACE(spec + " " + to_string(in.type()) + "->" + to_string(out) + " " + std::to_string(in.width()) + "x" +
                 std::to_string(in.height()) + "x" + std::to_string(in.channels()));
    // The planner may take the direct kernel or the FFT where the calibration table measured them faster;
    // these tests are of the fused separable kernel, so they force it (the mask must have the form).
    const LinearPlan lp = plan_of(spec, in.shape, out);
    ASSERT_TRUE(lp.exact ? bool(lp.integer_separable) : bool(lp.separable));
    ASSERT_EQ(lp.exact, want_exact);
    const Pipeline p({spec});
    const Image ref = p.run(in, {.backend = Backend::cpu, .out_type = out});
    const Image got = p.run(in, {.backend = Backend::cuda, .out_type = out, .algorithm = Algorithm::separable});
    ASSERT_EQ(got.shape(), ref.shape());
    if (lp.exact) {
        EXPECT_TRUE(test::identical(got, ref)) << "max diff " << test::max_abs_diff(got, ref);
    } else if (out == PixelType::f32) {
        // Each backend lies within 1e-5 * sum|m| * max|in| of float64 (SPEC), so within twice that of each other.
        const double scale = std::max({1.0, test::max_abs(in), std::fabs(lp.step.border_value)});
        EXPECT_LE(test::max_abs_diff(got, ref), 2e-5 * std::max(1.0, lp.step.mask.abs_sum()) * scale + 1e-6);
    } else {
        EXPECT_LE(test::max_abs_diff(got, ref), 1.0);
    }
}

const char* const modes[] = {"reflect", "nearest", "mirror", "wrap", "constant"};

std::string with_border(const std::string& spec, const std::string& mode) {
    return spec + ",border=" + mode + (mode == "constant" ? ",value=7" : "");
}

} // namespace

TEST(CudaSeparable, GaussianFloatEveryBorderAndChannelCount) {
    REQUIRE_GPU();
    std::uint32_t seed = 100;
    for (int sigma : {1, 2, 3, 8})
        for (int channels = 1; channels <= 4; ++channels)
            for (const char* mode : modes) {
                const Image in = test::random_image(203, 141, channels, PixelType::f32, seed++);
                expect_matches_cpu(with_border("gaussian:sigma=" + std::to_string(sigma), mode), in, PixelType::f32, false);
            }
}

TEST(CudaSeparable, GaussianOnALargeOddImage) {
    REQUIRE_GPU();
    // Big enough for interior blocks (the vector-load path) at every radius.
    const Image f = test::random_image(1031, 517, 1, PixelType::f32, 7);
    const Image u = test::random_image(1031, 517, 1, PixelType::u8, 8);
    for (int sigma : {1, 2, 3, 5, 8}) {
        const std::string spec = "gaussian:sigma=" + std::to_string(sigma);
        expect_matches_cpu(spec, f, PixelType::f32, false);
        expect_matches_cpu(spec, u, PixelType::u8, false);
        expect_matches_cpu(spec, u, PixelType::f32, false);
        expect_matches_cpu(spec, f, PixelType::u16, false);
    }
    const Image rgb = test::random_image(1031, 517, 3, PixelType::u16, 9);
    expect_matches_cpu("gaussian:sigma=2,border=wrap", rgb, PixelType::u16, false);
    expect_matches_cpu("gaussian:sigma=1,sigma_y=3,border=constant,value=100", rgb, PixelType::f32, false);
}

TEST(CudaSeparable, IntegerMasksAreBitExact) {
    REQUIRE_GPU();
    std::uint32_t seed = 200;
    const char* specs[] = {"box:width=5", "box:width=4,height=6", "box:width=15", "separable:row=1:2:1,column=-1:0:1",
                           "separable:row=1:4:6:4:1,column=1:4:6:4:1,normalize=sum",
                           "separable:row=1:3,column=1:2:1:2,normalize=sum",        // even lengths, different
                           "separable:row=2:-1:0:0:0:0:1,column=1:1,delta=40"};     // off-centre weights
    for (const char* spec : specs)
        for (PixelType t : {PixelType::u8, PixelType::u16})
            for (int channels = 1; channels <= 4; ++channels)
                for (const char* mode : modes) {
                    const Image in = test::random_image(97, 61, channels, t, seed++);
                    expect_matches_cpu(with_border(spec, mode), in, t, true);
                }
    const Image big = test::random_image(1031, 517, 1, PixelType::u8, 17);
    for (const char* spec : specs) expect_matches_cpu(spec, big, PixelType::u8, true);
    expect_matches_cpu("box:width=9", big, PixelType::f32, true);
    expect_matches_cpu("box:width=33,height=65,border=mirror", big, PixelType::u8, true);  // radius 32
}

TEST(CudaSeparable, Int32Accumulation) {
    REQUIRE_GPU();
    // u16 x sum|m| = 65535 x 4096 is past 2^24 (the f32 accumulator) but below 2^31: the int32 kernel.
    const std::string spec = "separable:row=1:6:15:20:15:6:1,column=1:6:15:20:15:6:1,normalize=sum";
    const Image in = test::random_image(517, 203, 1, PixelType::u16, 31);
    EXPECT_EQ(plan_of(spec, in.shape(), PixelType::u16).accumulator, Accumulator::f64);
    for (const char* mode : modes) expect_matches_cpu(with_border(spec, mode), in, PixelType::u16, true);
    const Image rgba = test::random_image(77, 45, 4, PixelType::u16, 32);
    expect_matches_cpu(spec + ",border=wrap", rgba, PixelType::u8, true);
}

TEST(CudaSeparable, TinyImagesAndMasksLargerThanTheImage) {
    REQUIRE_GPU();
    const std::pair<int, int> sizes[] = {{1, 1}, {1, 37}, {53, 1}, {7, 5}, {2, 3}};
    std::uint32_t seed = 300;
    for (auto [w, h] : sizes)
        for (int channels : {1, 3})
            for (const char* mode : modes) {
                const Image f = test::random_image(w, h, channels, PixelType::f32, seed++);
                const Image u = test::random_image(w, h, channels, PixelType::u8, seed++);
                expect_matches_cpu(with_border("gaussian:sigma=8", mode), f, PixelType::f32, false);
                expect_matches_cpu(with_border("gaussian:sigma=1", mode), u, PixelType::u8, false);
                expect_matches_cpu(with_border("box:width=9,height=4", mode), u, PixelType::u8, true);
                expect_matches_cpu(with_border("gaussian:sigma=10,radius=40", mode), f, PixelType::f32, false);
            }
}

TEST(CudaSeparable, TwoPassesBeyondRadius32) {
    REQUIRE_GPU();
    std::uint32_t seed = 400;
    for (int channels = 1; channels <= 4; ++channels)
        for (const char* mode : modes) {
            const Image f = test::random_image(301, 157, channels, PixelType::f32, seed++);
            expect_matches_cpu(with_border("gaussian:sigma=10,radius=40", mode), f, PixelType::f32, false);
            const Image u = test::random_image(131, 97, channels, PixelType::u8, seed++);
            expect_matches_cpu(with_border("box:width=81,height=5", mode), u, PixelType::u8, true);
        }
    const Image u16 = test::random_image(200, 150, 1, PixelType::u16, 499);
    expect_matches_cpu("separable:row=1:6:15:20:15:6:1,column=1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:"
                       "1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1,border=mirror",
                       u16, PixelType::u16, true);  // column of 69 taps, int32 accumulation
    const Image big = test::random_image(1031, 517, 1, PixelType::f32, 498);
    expect_matches_cpu("gaussian:sigma=12", big, PixelType::f32, false);  // radius 36
}

TEST(CudaSeparable, HostRoiViews) {
    REQUIRE_GPU();
    const Image big = test::random_image(300, 200, 3, PixelType::u8, 500);
    const ConstImageView roi = big.view().roi(11, 7, 257, 131);
    expect_matches_cpu("gaussian:sigma=2", roi, PixelType::u8, false);
    expect_matches_cpu("box:width=5,border=wrap", roi, PixelType::u8, true);
}

#if APRON_HAVE_CUDA
// Device views that start at unaligned addresses and have unaligned pitches: the scalar load and store
// paths of interior blocks.
TEST(CudaSeparable, UnalignedDeviceRoiViews) {
    REQUIRE_GPU();
    for (PixelType t : {PixelType::u8, PixelType::f32})
        for (int channels : {1, 2}) {
            const Image host = test::random_image(613, 311, channels, t, 600 + channels);
            const ConstImageView host_roi = host.view().roi(3, 5, 601, 299);
            for (const char* spec : {"gaussian:sigma=2", "box:width=7,height=3,border=mirror", "gaussian:sigma=6"}) {
                SCOPED_TRACE(std::string(spec) + " " + to_string(t) + " x" + std::to_string(channels));
                const Pipeline p({spec});
                const Image ref = p.run(host_roi, {.backend = Backend::cpu});
                // Device copy of the whole image with an odd pitch, viewed through the same ROI.
                const std::size_t pitch = host.shape().row_bytes() + 3 * bytes_per_sample(t);
                void* d_in = nullptr;
                void* d_out = nullptr;
                ASSERT_EQ(cudaMalloc(&d_in, pitch * std::size_t(host.height())), cudaSuccess);
                ASSERT_EQ(cudaMemcpy2D(d_in, pitch, host.view().data, host.pitch(), host.shape().row_bytes(),
                                       std::size_t(host.height()), cudaMemcpyHostToDevice),
                          cudaSuccess);
                const ConstImageView dev_roi =
                    ConstImageView{static_cast<const std::byte*>(d_in), host.shape(), pitch, Memory::device}.roi(3, 5, 601, 299);
                // Output: an odd offset into a buffer with an odd pitch as well.
                const std::size_t out_pitch = ref.shape().row_bytes() + bytes_per_sample(t);
                ASSERT_EQ(cudaMalloc(&d_out, out_pitch * std::size_t(ref.height()) + 16), cudaSuccess);
                const ImageView dev_out{static_cast<std::byte*>(d_out) + bytes_per_sample(t), ref.shape(), out_pitch,
                                        Memory::device};
                p.run(dev_roi, dev_out, {.backend = Backend::cuda});
                Image got(ref.shape());
                ASSERT_EQ(cudaMemcpy2D(got.view().data, got.pitch(), dev_out.data, out_pitch, ref.shape().row_bytes(),
                                       std::size_t(ref.height()), cudaMemcpyDeviceToHost),
                          cudaSuccess);
                cudaFree(d_in);
                cudaFree(d_out);
                if (plan_of(spec, host_roi.shape, t).exact) EXPECT_TRUE(test::identical(got, ref));
                else EXPECT_LE(test::max_abs_diff(got, ref), t == PixelType::f32 ? 1e-4 : 1.0);
            }
        }
}
#endif
