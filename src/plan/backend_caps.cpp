// The reference backend's capabilities and the rules of the tensor-core path (see backend_caps.hpp).
#include "plan/backend_caps.hpp"

#include "plan/cost_model.hpp"

namespace apron {
namespace {

// The reference executor is the specification: one straightforward loop per step, whatever the plan.
class ReferenceCaps final : public BackendCaps {
public:
    Backend backend() const override { return Backend::reference; }
    std::string fft_unavailable(const LinearPlan&, const ImageShape&) const override {
        return "the reference backend computes every sum directly";
    }
    std::string tensor_unavailable(const LinearPlan&, const ImageShape&) const override {
        return "tensor cores are a CUDA path";
    }
    bool morph_rect_supported(const MorphPlan&, const ImageShape&) const override { return true; }
    KernelChoice linear_kernel(const LinearPlan&, const ImageShape&) const override { return {"reference.direct", ""}; }
    KernelChoice morph_kernel(const MorphPlan&, const ImageShape&) const override { return {"reference.morph", ""}; }
    KernelChoice combine_kernel(const CombinePlan&, const ImageShape&) const override {
        return {"reference.combine", ""};
    }
    KernelChoice rank_kernel(const RankPlan&, const ImageShape&) const override { return {"reference.rank", ""}; }
};

} // namespace

const BackendCaps& reference_caps() {
    static const ReferenceCaps caps;
    return caps;
}

std::string tensor_plan_unavailable(const LinearPlan& p, const ImageShape& shape) {
    const Mask& m = p.step.mask;
    if (cost_class(p) != "u8-int") return "needs a u8 image and integer weights in -128..127";
    if (shape.channels != 1) return "one channel only";
    if (m.width > 31 || m.height > 31) return "masks up to 31x31";
    if (p.accumulator != Accumulator::f32) return "the sum could exceed 2^24";
    return "";
}

} // namespace apron
