// The planner meets the backends here: a backend by name gives its capabilities, and the plan for a
// backend is the planner's plan with those capabilities (plan/backend_caps.hpp).
#include "core/host_memory.hpp"
#include "plan/backend_caps.hpp"
#include "plan/plan.hpp"

namespace apron {
namespace {

// Image(shape, HostMemory::pinned) takes the CUDA backend's page-locked memory through the core's hooks,
// installed when the program starts (the core calls no layer above it).
[[maybe_unused]] const bool pinned_memory_installed = (install_pinned_memory({&cuda_allocate_pinned, &cuda_free_pinned}), true);

const BackendCaps& backend_caps(Backend b) {
    switch (b) {
    case Backend::reference: return reference_caps();
    case Backend::cuda: return cuda_caps();
    case Backend::cpu: return cpu_caps();
    case Backend::automatic: break;
    }
    return cuda_available() ? cuda_caps() : cpu_caps();  // what Pipeline::run picks for auto
}

} // namespace

ExecutionPlan make_plan(const std::vector<OpProgram>& pipeline, const ImageShape& input, PixelType out_type,
                        Backend backend, Algorithm algorithm) {
    return make_plan(pipeline, input, out_type, backend_caps(backend), algorithm);
}

} // namespace apron
