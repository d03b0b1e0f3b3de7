// The plan names the kernel of every step (KernelChoice), from the chosen backend's capabilities, and
// `describe` prints it; the planner takes those capabilities as a parameter (plan/backend_caps.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "plan/backend_caps.hpp"
#include "plan/plan.hpp"

namespace apron {
namespace {

ExecutionPlan plan_of(const std::string& spec, const ImageShape& shape, Backend b) {
    return make_plan({parse_operation(spec)}, shape, shape.type, b);
}

std::vector<std::string> kernels_of(const ExecutionPlan& plan) {
    std::vector<std::string> names;
    for (const auto& op : plan.operations)
        for (const auto& s : op.steps)
            std::visit([&](const auto& p) { names.push_back(p.kernel.name()); }, s.what);
    return names;
}

const ImageShape u8_gray{257, 131, 1, PixelType::u8};

TEST(PlanKernels, EveryStepOfEveryBackendNamesItsKernel) {
    const char* specs[] = {"gaussian:sigma=2", "dilate:se=rect:7x7", "dilate:se=rect:101x101", "open:se=ellipse:5x5",
                           "emboss", "sobel", "unsharp:sigma=1.5"};
    for (Backend b : {Backend::reference, Backend::cpu, Backend::cuda})
        for (const char* spec : specs)
            for (int channels : {1, 3}) {
                const ImageShape shape{61, 37, channels, PixelType::u8};
                const ExecutionPlan plan = plan_of(spec, shape, b);
                const std::string text = plan.describe();
                std::size_t steps = 0;
                for (const auto& op : plan.operations) steps += op.steps.size();
                ASSERT_GT(steps, 0u) << spec;
                for (const std::string& k : kernels_of(plan)) {
                    EXPECT_FALSE(k.empty()) << spec << ' ' << to_string(b);
                    EXPECT_TRUE(k.rfind(std::string(to_string(b)) + ".", 0) == 0 || k.rfind("cuda ", 0) == 0)
                        << spec << ": " << k;
                    EXPECT_NE(text.find("kernel=" + k), std::string::npos) << text;
                }
                std::size_t lines = 0;
                for (std::size_t at = text.find("kernel="); at != std::string::npos; at = text.find("kernel=", at + 1)) ++lines;
                EXPECT_EQ(lines, steps) << text;
            }
}

TEST(PlanKernels, CpuNamesTheFastExecutorsChoice) {
    auto first = [](const std::string& spec, const ImageShape& shape) {
        return kernels_of(plan_of(spec, shape, Backend::cpu)).at(0);
    };
    EXPECT_EQ(first("gaussian:sigma=2", u8_gray), "cpu.separable lanes=q15");  // bound 0.28 of a pixel
    EXPECT_EQ(first("gaussian:sigma=12", u8_gray), "cpu.separable");         // bound too large: f32
    EXPECT_EQ(first("box:width=5", u8_gray), "cpu.separable lanes=int16");
    EXPECT_EQ(first("gaussian:sigma=2", {301, 199, 1, PixelType::f32}), "cpu.separable");
    EXPECT_EQ(first("dilate:se=rect:7x7", u8_gray), "cpu.morph_rect");
    EXPECT_EQ(first("dilate:se=rect:101x101", u8_gray), "cpu.morph_rect");  // van Herk takes any rectangle
    EXPECT_EQ(first("dilate:se=ellipse:5x5", u8_gray), "cpu.morph_runs");
    EXPECT_EQ(first("sharpen", u8_gray), "cpu.direct");
    const ExecutionPlan reference = plan_of("dilate:se=rect:7x7", u8_gray, Backend::reference);
    EXPECT_EQ(kernels_of(reference).at(0), "reference.morph");
}

TEST(PlanKernels, CpuFftNamesItsTile) {
    const ExecutionPlan plan = make_plan({parse_operation("box:width=41")}, {300, 200, 1, PixelType::f32},
                                         PixelType::f32, Backend::cpu, Algorithm::fft);
    const std::string k = kernels_of(plan).at(0);
    if (plan.describe(true).find("this build has no FFTW") != std::string::npos) GTEST_SKIP() << "built without FFTW";
    EXPECT_EQ(k.rfind("cpu.fft tile=", 0), 0u) << k;
}

// A backend's capabilities are all the planner knows of it: a fabricated backend that offers the tensor
// path and refuses the rectangle kernel gets plans that say so.
class FakeCaps final : public BackendCaps {
public:
    Backend backend() const override { return Backend::cuda; }
    std::string fft_unavailable(const LinearPlan&, const ImageShape&) const override { return "fake: no FFT"; }
    std::string tensor_unavailable(const LinearPlan& p, const ImageShape& s) const override {
        return tensor_plan_unavailable(p, s);
    }
    bool morph_rect_supported(const MorphPlan& p, const ImageShape&) const override {
        return p.step.element.width <= 64 && p.step.element.height <= 64;
    }
    KernelChoice linear_kernel(const LinearPlan& p, const ImageShape&) const override {
        return {"fake.linear", p.algorithm == LinearAlgorithm::tensor ? "tensor" : "other"};
    }
    KernelChoice morph_kernel(const MorphPlan& p, const ImageShape&) const override {
        return {p.algorithm == MorphAlgorithm::separable_rect ? "fake.rect" : "fake.direct", ""};
    }
    KernelChoice combine_kernel(const CombinePlan&, const ImageShape&) const override { return {"fake.combine", ""}; }
    KernelChoice rank_kernel(const RankPlan&, const ImageShape&) const override { return {"fake.rank", ""}; }
};

TEST(PlanKernels, ThePlannerAsksOnlyTheCapabilitiesItIsGiven) {
    const FakeCaps caps;
    const ExecutionPlan wide = make_plan({parse_operation("dilate:se=rect:101x101")}, u8_gray, PixelType::u8, caps);
    const auto& morph = std::get<MorphPlan>(wide.operations.at(0).steps.at(0).what);
    EXPECT_EQ(morph.algorithm, MorphAlgorithm::direct);  // the plan says what runs
    EXPECT_EQ(morph.kernel.family, "fake.direct");
    EXPECT_NE(wide.describe().find("dilate 101x101 direct u8 border=ignore kernel=fake.direct"), std::string::npos)
        << wide.describe();
    const ExecutionPlan narrow = make_plan({parse_operation("dilate:se=rect:64x3")}, u8_gray, PixelType::u8, caps);
    EXPECT_EQ(std::get<MorphPlan>(narrow.operations.at(0).steps.at(0).what).kernel.family, "fake.rect");

    const ExecutionPlan tensor = make_plan({parse_operation("sharpen")}, u8_gray, PixelType::u8,
                                           caps, Algorithm::tensor);
    EXPECT_EQ(kernels_of(tensor).at(0), "fake.linear tensor");
    EXPECT_THROW(make_plan({parse_operation("box:width=41")}, u8_gray, PixelType::u8, caps, Algorithm::fft), Error);
}

TEST(PlanKernels, BackendsByNameUseTheirCapabilities) {
    EXPECT_EQ(reference_caps().backend(), Backend::reference);
    EXPECT_EQ(cpu_caps().backend(), Backend::cpu);
    EXPECT_EQ(cuda_caps().backend(), Backend::cuda);
    const LinearPlan any;
    EXPECT_EQ(cpu_caps().tensor_unavailable(any, u8_gray), "tensor cores are a CUDA path");
    EXPECT_EQ(reference_caps().fft_unavailable(any, u8_gray), "the reference backend computes every sum directly");
}

} // namespace
} // namespace apron
