// The CUDA backend against the reference: every operation example (backend_sweep.hpp), pipelines,
// ROI views and large images. Skips where no GPU is found.
#include <gtest/gtest.h>

#include "backend_sweep.hpp"

using namespace apron;

namespace {

bool have_gpu() { return cuda_available(); }

} // namespace

#define REQUIRE_GPU() \
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device"

TEST(Cuda, EveryOperationMatchesTheReference) {
    REQUIRE_GPU();
    test::expect_backend_matches_reference(Backend::cuda);
}

TEST(Cuda, PipelinesAndViews) {
    REQUIRE_GPU();
    const Image big = test::random_image(300, 200, 3, PixelType::u8, 3);
    const ConstImageView roi = big.view().roi(11, 7, 257, 131);
    // Exact operations chained on u8: identical bits on every backend.
    const Pipeline exact({"box:width=3", "sobel:dx=1,delta=128", "dilate:se=ellipse:5x5", "box:width=4,height=2"});
    EXPECT_TRUE(test::identical(exact.run(roi, {.backend = Backend::cpu}), exact.run(roi, {.backend = Backend::cuda})));
    // Float operations chained in f32: within SPEC's tolerance of each other (values reach ~1000).
    const Pipeline floats({"gaussian:sigma=2", "sobel:dx=1", "dilate:se=ellipse:5x5", "unsharp:sigma=1"});
    const RunOptions f32 = {.out_type = PixelType::f32};
    RunOptions on_cpu = f32, on_gpu = f32;
    on_cpu.backend = Backend::cpu;
    on_gpu.backend = Backend::cuda;
    EXPECT_LE(test::max_abs_diff(floats.run(roi, on_cpu), floats.run(roi, on_gpu)), 1e-2);
}

TEST(Cuda, IntegerPathIsBitExactOnALargeImage) {
    REQUIRE_GPU();
    const Image in = test::random_image(1031, 517, 1, PixelType::u16, 4);
    for (const char* op : {"correlate:mask=samples/masks/even4x4.kernel,border=wrap", "sobel:dx=1,ksize=7,border=mirror",
                           "box:width=9,border=nearest", "erode:se=rect:17x5", "tophat:se=ellipse:9x9"}) {
        const Pipeline p({op});
        EXPECT_TRUE(test::identical(p.run(in, {.backend = Backend::cpu}), p.run(in, {.backend = Backend::cuda}))) << op;
    }
}

TEST(Cuda, AutoPicksTheGpu) {
    REQUIRE_GPU();
    EXPECT_NE(Pipeline({"sharpen"}).describe({64, 64, 1, PixelType::u8}).find("backend cuda"), std::string::npos);
}
