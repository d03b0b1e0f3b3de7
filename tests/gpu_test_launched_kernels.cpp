// The plan names the kernel that runs: for every case of the GPU benchmark (bench/user_cases.hpp's full set:
// 1, 3 and 4 channels, u8/u16/f32, every element shape; and the square masks of every size on one channel),
// the kernels the launchers record (cuda/launch_record.hpp) are the ones the plan's steps name, in order. The
// plan chooses on the executor's own aligned buffers; the launchers choose again on the real view, so a rule
// that drifts between the dispatch table and a launcher fails here. Skips without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../bench/user_cases.hpp"
#include "apron/pipeline.hpp"
#include "core/overrides.hpp"
#include "cuda/launch_record.hpp"
#include "plan/plan.hpp"
#include "plan/step_kind.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

std::string kernel_of(const StepPlan& s) {
    return on_kind(s, [](auto, const auto& p) { return p.kernel.name(); });
}

// The plan's kernels and the launched ones, for one case on an image of `shape`.
void expect_plan_runs(const std::string& name, const OpProgram& program, const ImageShape& shape, PixelType out) {
    const ExecutionPlan plan = make_plan({program}, shape, out, Backend::cuda);
    auto ex = make_cuda_executor();
    const Image host = test::random_image(shape.width, shape.height, shape.channels, shape.type, 5);
    Buffer in = ex->allocate(shape);
    ex->upload(host.view(), in.view);
    const std::vector<StepPlan>& steps = plan.operations.at(0).steps;
    std::vector<Buffer> results;
    std::vector<std::string> planned, launched;
    cuda::clear_launches();
    for (const StepPlan& s : steps) {
        auto view_of = [&](int i) -> ConstImageView {
            if (i == no_operand) return {};
            return i == op_input ? in.cview() : results.at(std::size_t(i)).cview();
        };
        results.push_back(ex->allocate(s.out_shape));
        run_step_kind(*ex, s, view_of(s.input), view_of(s.second), results.back().view);
        planned.push_back(kernel_of(s));
    }
    ex->synchronize();
    for (const KernelChoice& k : cuda::launches()) launched.push_back(k.name());
    EXPECT_EQ(launched, planned) << name << " on " << shape.width << "x" << shape.height << "x" << shape.channels << " "
                                 << to_string(shape.type) << "\n" << plan.describe();
}

TEST(CudaLaunchedKernels, EveryBenchCaseRunsThePlannedKernel) {
    REQUIRE_GPU();
    if (!overrides().describe().empty()) GTEST_SKIP() << "an APRON_* override is set: " << overrides().describe();
    for (const bench::UserCase& c : bench::user_cases(true)) {
        const ImageShape shape{1031, 517, c.channels, c.type};
        expect_plan_runs(c.op + " " + c.shape, c.program, shape, c.out.value_or(c.type));
    }
    // The square masks of the classic sweep on one channel, float and integer weights, up to the FFT's sizes.
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int k : {3, 5, 7, 9, 11, 15, 21, 31, 41, 63}) {
            const ImageShape shape{2053, 1029, 1, t};
            expect_plan_runs("correlate " + std::to_string(k), bench::user_correlation(k, false), shape, t);
            if (t != PixelType::f32)
                expect_plan_runs("correlate_int " + std::to_string(k), bench::user_correlation(k, true), shape, t);
        }
}

} // namespace
