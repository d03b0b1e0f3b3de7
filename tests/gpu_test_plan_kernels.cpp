// The CUDA plan records its kernel from the dispatch table (cuda/dispatch_table.hpp) and the executor runs
// the recorded family: the names for each family's cases (planning needs no GPU), then every recorded
// family, a plan made for the CPU (no CUDA kernel recorded) and hand-made plans that name a family which
// cannot run them, against the reference executor (exact plans and morphology bit for bit, float within
// SPEC's tolerance). Skips the runs where no GPU is found.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "apron/pipeline.hpp"
#include "cuda/dispatch_table.hpp"
#include "plan/backend_caps.hpp"
#include "plan/plan.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

const StepPlan& first_step(const ExecutionPlan& p) { return p.operations.at(0).steps.at(0); }

ExecutionPlan cuda_plan(const std::string& spec, const ImageShape& shape, Algorithm a = Algorithm::automatic) {
    return make_plan({parse_operation(spec)}, shape, shape.type, Backend::cuda, a);
}

std::string kernel_of(const std::string& spec, const ImageShape& shape, Algorithm a = Algorithm::automatic) {
    return std::visit([](const auto& p) { return p.kernel.name(); }, first_step(cuda_plan(spec, shape, a)).what);
}

bool overridden() { return !overrides().describe().empty(); }

TEST(CudaPlanKernels, MorphologyNamesWhatRuns) {
    REQUIRE_GPU();  // the rectangle and chord kernels' reach is the device's shared memory
    if (overridden()) GTEST_SKIP() << "an APRON_* override changes the table: " << overrides().describe();
    const ImageShape u8{997, 613, 1, PixelType::u8};
    EXPECT_EQ(kernel_of("dilate:se=rect:7x7", u8), "cuda.morph_rect fast");
    EXPECT_EQ(kernel_of("dilate:se=rect:31x31", u8), "cuda.morph_rect");
    EXPECT_EQ(kernel_of("erode:se=rect:9x5", {97, 61, 3, PixelType::f32}), "cuda.morph_rect");
    EXPECT_EQ(kernel_of("erode:se=rect:7x5", {97, 61, 3, PixelType::u8}), "cuda.morph_rect fast");
    // W > 7 at 4 channels: a chain of fast passes (7, 7 and 3 wide); past 16, the general kernel.
    EXPECT_EQ(kernel_of("erode:se=rect:15x5", {97, 61, 4, PixelType::u8}), "cuda.morph_rect fast chain");
    EXPECT_EQ(kernel_of("erode:se=rect:17x5", {97, 61, 4, PixelType::u8}), "cuda.morph_rect");
    // Past 64 on a side: the separable passes, still the rectangle family.
    const ExecutionPlan wide = cuda_plan("dilate:se=rect:101x101", u8);
    const auto& m = std::get<MorphPlan>(first_step(wide).what);
    EXPECT_EQ(m.algorithm, MorphAlgorithm::separable_rect);
    EXPECT_EQ(m.kernel.name(), "cuda.morph_rect passes");
    // The chord kernel's schedule by the table's rule: staged_rows, but thread_loads for one channel and 6 or
    // more distinct chord lengths (disk:7: 7, 6, 6, 6, 5, 4, 3 and 0 half-widths: lengths 15, 13, 11, 9, 7, 1).
    EXPECT_EQ(kernel_of("dilate:se=ellipse:9x9", u8), "cuda.morph_chords schedule=staged_rows");
    EXPECT_EQ(kernel_of("dilate:se=disk:7", u8), "cuda.morph_chords schedule=thread_loads");
    EXPECT_EQ(kernel_of("dilate:se=disk:7", {997, 613, 3, PixelType::u8}), "cuda.morph_chords schedule=staged_rows");
}

TEST(CudaPlanKernels, LinearFamiliesAndForms) {
    if (overridden()) GTEST_SKIP() << "an APRON_* override changes the table: " << overrides().describe();
    const ImageShape u8{997, 613, 1, PixelType::u8}, f32{997, 613, 1, PixelType::f32}, f32x3{997, 613, 3, PixelType::f32};
    EXPECT_EQ(kernel_of("sharpen", u8, Algorithm::direct), "cuda.direct_dp4a k=3");
    EXPECT_EQ(kernel_of("sharpen", u8, Algorithm::tensor), "cuda.direct_imma k=3x3");
    EXPECT_EQ(kernel_of("gaussian:sigma=2", f32, Algorithm::separable), "cuda.separable_fused");
    EXPECT_EQ(kernel_of("box:width=5", f32, Algorithm::direct), "cuda.direct_regs k=5 rx=4");
    EXPECT_EQ(kernel_of("box:width=3", u8, Algorithm::direct).rfind("cuda.direct_", 0), 0u);
    // A float mask on u8: the fixed-point form, named with its shift and error bound.
    const std::string fixed = kernel_of("gaussian:sigma=0.6", u8, Algorithm::direct);
    EXPECT_EQ(fixed.rfind("cuda.direct_dp2a k=5 fixed=2^-", 0), 0u) << fixed;
    EXPECT_NE(fixed.find(" error<="), std::string::npos) << fixed;
    EXPECT_EQ(kernel_of("box:width=7", f32, Algorithm::direct), "cuda.direct_tiled k=7 rx=4");
    EXPECT_EQ(kernel_of("box:width=7", f32x3, Algorithm::direct).rfind("cuda.direct_", 0), 0u);
    const std::string even = kernel_of("box:width=8,height=6", f32, Algorithm::direct);
    EXPECT_TRUE(even == "cuda.runtime_direct" || even == "cuda.linear_direct") << even;  // NVRTC may be absent
    EXPECT_EQ(kernel_of("box:width=85", f32, Algorithm::direct), "cuda.linear_direct");
    EXPECT_EQ(kernel_of("box:width=41", f32, Algorithm::fft).rfind("cuda.fft tile=", 0), 0u);
}

// One step of `plan` on the executor, host in, host out.
Image run_step(Executor& ex, const StepPlan& step, ConstImageView host) {
    Buffer in = ex.allocate(host.shape), out = ex.allocate(step.out_shape);
    ex.upload(host, in.view);
    if (const auto* l = std::get_if<LinearPlan>(&step.what)) ex.linear(*l, in.cview(), out.view);
    else ex.morph(std::get<MorphPlan>(step.what), in.cview(), out.view);
    Image result(step.out_shape);
    ex.download(out.cview(), result.view());
    ex.synchronize();
    return result;
}

void expect_like_reference(const StepPlan& step, ConstImageView in, const std::string& what) {
    auto gpu_ex = make_cuda_executor();
    auto ref_ex = make_reference_executor();
    const Image gpu = run_step(*gpu_ex, step, in), ref = run_step(*ref_ex, step, in);
    const auto* l = std::get_if<LinearPlan>(&step.what);
    if (!l || l->exact) {
        EXPECT_TRUE(test::identical(gpu, ref)) << what;
    } else if (l->out == PixelType::f32) {
        // Each backend lies within 1e-5 * sum|m| * max|in| of float64 (SPEC), so within twice that of each other.
        const double scale = std::max({1.0, test::max_abs(in), std::fabs(l->step.border_value)});
        EXPECT_LE(test::max_abs_diff(gpu, ref), 2e-5 * std::max(1.0, l->step.mask.abs_sum()) * scale + 1e-6) << what;
    } else {
        EXPECT_LE(test::max_abs_diff(gpu, ref), 1.0) << what;  // a float sum rounded to an integer type
    }
}

TEST(CudaPlanKernels, EveryRecordedFamilyRunsLikeTheReference) {
    REQUIRE_GPU();
    struct Case {
        const char* spec;
        PixelType type;
        int channels;
        Algorithm algo;
    };
    const Case cases[] = {
        {"sharpen", PixelType::u8, 1, Algorithm::direct},          {"sharpen", PixelType::u8, 1, Algorithm::tensor},
        {"gaussian:sigma=2", PixelType::u8, 3, Algorithm::separable}, {"box:width=5", PixelType::f32, 1, Algorithm::direct},
        {"box:width=7", PixelType::u16, 4, Algorithm::direct},     {"box:width=8,height=6", PixelType::u8, 2, Algorithm::direct},
        {"box:width=41", PixelType::f32, 1, Algorithm::fft},       {"dilate:se=rect:7x7", PixelType::u8, 1, Algorithm::automatic},
        {"erode:se=rect:65x3", PixelType::u16, 3, Algorithm::automatic},
        {"dilate:se=ellipse:9x9", PixelType::f32, 1, Algorithm::automatic},
    };
    std::uint32_t seed = 40;
    for (const Case& c : cases)
        for (auto [w, h] : {std::pair{1, 1}, std::pair{67, 45}, std::pair{300, 129}}) {
            const Image in = test::random_image(w, h, c.channels, c.type, seed++);
            const ExecutionPlan plan = cuda_plan(c.spec, in.shape(), c.algo);
            const StepPlan& step = first_step(plan);
            expect_like_reference(step, in, std::string(c.spec) + " " + step.label);
        }
}

TEST(CudaPlanKernels, PlansWithoutACudaKernelOrWithAWrongOneStillRun) {
    REQUIRE_GPU();
    const Image in = test::random_image(131, 77, 1, PixelType::u8, 9);
    // Made for the CPU: the executor asks the table itself.
    const ExecutionPlan cpu = make_plan({parse_operation("sharpen")}, in.shape(), PixelType::u8, Backend::cpu);
    expect_like_reference(first_step(cpu), in, "cpu plan");
    // A bound family that cannot run the plan (not separable, not an FFT plan, no tensor form), or no family at
    // all: the direct families run.
    using cuda::LinearFamily;
    for (const int family : {int(LinearFamily::separable_fused), int(LinearFamily::fft), int(LinearFamily::tensor),
                             int(LinearFamily::runtime_direct), 99}) {
        ExecutionPlan p = make_plan({parse_operation("box:width=9,height=4")}, in.shape(), PixelType::u8, Backend::cuda,
                                    Algorithm::direct);
        StepPlan step = first_step(p);
        std::get<LinearPlan>(step.what).kernel = {"cuda.hand-made", "", Backend::cuda, family};
        expect_like_reference(step, in, "bound family " + std::to_string(family));
    }
    ExecutionPlan rect = make_plan({parse_operation("dilate:se=ellipse:5x5")}, in.shape(), PixelType::u8, Backend::cuda);
    StepPlan step = first_step(rect);
    // The rectangle kernel bound to an ellipse: it declines, and the direct kernel runs.
    std::get<MorphPlan>(step.what).kernel = {"cuda.morph_rect", "", Backend::cuda, int(cuda::MorphFamily::morph_rect)};
    expect_like_reference(step, in, "ellipse named morph_rect");
}

} // namespace
