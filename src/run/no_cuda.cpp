// The CUDA backend's entry points when apron is built without it: no devices, no executor.
#include "apron/devices.hpp"
#include "apron/errors.hpp"
#include "core/host_memory.hpp"
#include "plan/backend_caps.hpp"
#include "plan/plan.hpp"

namespace apron {

std::vector<std::string> cuda_devices() { return {}; }
#ifndef APRON_CUDA_WHY
#define APRON_CUDA_WHY "configured without the CUDA backend"
#endif
std::string cuda_status() { return "not built (" APRON_CUDA_WHY ")"; }
std::unique_ptr<Executor> make_cuda_executor(void*) { return nullptr; }
bool cuda_available() { return false; }
std::shared_ptr<void> use_cuda_device(int device) {
    if (device >= 0) throw Error("cuda device " + std::to_string(device) + ": this build has no CUDA backend");
    return nullptr;
}
int cuda_device_arch() { return 0; }
std::string cuda_device_name() { return ""; }
bool cuda_fft_supports(const LinearPlan&, const ImageShape&) { return false; }
void* cuda_allocate_pinned(std::size_t) { return nullptr; }
void cuda_free_pinned(void*) {}
void release_kept_pinned() {}
std::size_t kept_pinned_bytes() { return 0; }
bool is_pinned(const void*) { return false; }

namespace {

// `apron plan --backend cuda` still plans in a build without CUDA (what the GPU would be asked to do),
// with the tensor-core rules of the plan alone and no FFT; no kernel can be named.
class NoCudaCaps final : public BackendCaps {
public:
    Backend backend() const override { return Backend::cuda; }
    std::string fft_unavailable(const LinearPlan&, const ImageShape&) const override {
        return "this build has no CUDA FFT path";
    }
    std::string tensor_unavailable(const LinearPlan& p, const ImageShape& shape) const override {
        return tensor_plan_unavailable(p, shape);
    }
    bool morph_rect_supported(const MorphPlan&, const ImageShape&) const override { return true; }
    KernelChoice linear_kernel(const LinearPlan&, const ImageShape&) const override { return {"cuda", "(not built)"}; }
    KernelChoice morph_kernel(const MorphPlan&, const ImageShape&) const override { return {"cuda", "(not built)"}; }
    KernelChoice combine_kernel(const CombinePlan&, const ImageShape&) const override { return {"cuda", "(not built)"}; }
    KernelChoice rank_kernel(const RankPlan&, const ImageShape&) const override { return {"cuda", "(not built)"}; }
};

} // namespace

const BackendCaps& cuda_caps() {
    static const NoCudaCaps caps;
    return caps;
}

} // namespace apron
