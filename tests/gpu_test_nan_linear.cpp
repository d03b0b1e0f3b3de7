// NaN and nodata in linear filters on the CUDA backend (SPEC.md "NaN and nodata in linear filters"): the
// pointwise forms of the combine step (fill, valid, ratio, mark) store the reference's bits; whole operations
// with nan=ignore|fill|propagate, preserve_nan and nodata match the restatement (nan_linear_support.hpp) and
// the reference within SPEC's tolerance, on the direct, separable and FFT paths; streamed bands give the
// whole image's bits; exact fills equal the reference bit for bit. Skips where no GPU is found.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "core/dispatch.hpp"
#include "gpu_test_support.hpp"
#include "nan_linear_support.hpp"
#include "plan/plan.hpp"
#include "test_support.hpp"

namespace apron {
namespace {

using namespace nantest;

// One combine plan on the device: inputs uploaded, the step run, the result downloaded.
Image on_device(const CombinePlan& p, const Image& a, const Image* b) {
    Executor& ex = test::shared_cuda_executor();
    Buffer da = ex.allocate(a.shape()), db;
    ex.upload(a.view(), da.view);
    if (b) {
        db = ex.allocate(b->shape());
        ex.upload(b->view(), db.view);
    }
    ImageShape shape = a.shape();
    shape.type = p.out;
    Buffer dout = ex.allocate(shape);
    ex.combine(p, da.cview(), b ? db.cview() : ConstImageView{}, dout.view);
    Image out(shape);
    ex.download(dout.cview(), out.view());
    ex.synchronize();
    return out;
}

TEST(GpuNanLinear, PointwiseFormsGiveTheReferencesBits) {
    REQUIRE_GPU();
    expect_pointwise_forms_give_reference_bits(on_device);
}

// Images of 61..63 x 45, with the planner's path and the forced direct and FFT paths.
void sweep(const std::string& mode, double fill) {
    sweep_restatement(mode, fill, 61, 45, 70, {Backend::cuda}, {Algorithm::automatic, Algorithm::direct, Algorithm::fft});
}

TEST(GpuNanLinear, IgnoreIsTheNormalisedSumOverValidSamples) {
    REQUIRE_GPU();
    sweep("ignore", 0);
}

TEST(GpuNanLinear, FillReadsMissingSamplesAsTheValue) {
    REQUIRE_GPU();
    sweep("fill", 2.5);
}

TEST(GpuNanLinear, PropagateWithNodataMakesNodataMissing) {
    REQUIRE_GPU();
    sweep("propagate", 0);
}

// The registry's operations on CUDA and on the reference against the restatement, with the op's own weights,
// whatever path the planner picks on each backend.
TEST(GpuNanLinear, OperationsMatchTheRestatement) {
    REQUIRE_GPU();
    expect_operations_match_restatement(Backend::cuda);
}

TEST(GpuNanLinear, FillOnIntegersIsExactAndEqualsTheReference) {
    REQUIRE_GPU();
    for (PixelType t : {PixelType::u8, PixelType::u16})
        for (const char* op : {"box:width=5,height=3", "sobel:dx=1,delta=100", "xf-gaussian:border=wrap"}) {
            const double nodata = t == PixelType::u8 ? 7 : 1000;
            const Image in = holed(70, 41, 3, t, nodata, 11);
            const std::string spec = std::string(op) + ",nan=fill:40,nodata=" + std::to_string(int(nodata)) + ",preserve_nan=1";
            EXPECT_TRUE(test::identical(run(parse_operation(spec), in, Backend::reference), run(parse_operation(spec), in, Backend::cuda)))
                << spec << " " << to_string(t);
        }
}

TEST(GpuNanLinear, AllMissingImagesGiveAllMissingOutputs) {
    REQUIRE_GPU();
    Image nan_image(90, 70, 2, PixelType::f32);
    for (int y = 0; y < 70; ++y) std::fill(nan_image.row<float>(y), nan_image.row<float>(y) + 180, nan_v);
    for (Algorithm a : {Algorithm::automatic, Algorithm::direct, Algorithm::fft})
        for (const char* spec : {"gaussian:sigma=4,nan=ignore", "box:width=7,nan=ignore,border=wrap"}) {
            const Image g = run(parse_operation(spec), nan_image, Backend::cuda, {}, a);
            for (int y = 0; y < 70; ++y)
                for (int k = 0; k < 180; ++k) ASSERT_TRUE(std::isnan(g.row<float>(y)[k])) << spec << " algo " << to_string(a);
        }
}

TEST(GpuNanLinear, StreamedBandsGiveTheWholeImagesBits) {
    REQUIRE_GPU();
    expect_streamed_bands_give_whole_images_bits(Backend::cuda,
                                                 {"gaussian:sigma=2,nan=ignore,preserve_nan=1",
                                                  "box:width=7,nan=ignore,nodata=1,border=wrap",
                                                  "gaussian:sigma=1,nan=propagate,nodata=1",
                                                  "unsharp:sigma=1.5,nan=ignore,nodata=1,border=mirror"},
                                                 {Algorithm::automatic});
}

} // namespace
} // namespace apron
