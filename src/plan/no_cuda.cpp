// Device discovery when apron is built without the CUDA toolkit.
#include "apron/devices.hpp"
#include "apron/errors.hpp"
#include "batch/compute_slot.hpp"
#include "core/host_memory.hpp"
#include "plan/plan.hpp"

namespace apron {

std::vector<std::string> cuda_devices() { return {}; }
std::string cuda_status() { return "not built (no CUDA toolkit at configure time)"; }
std::unique_ptr<Executor> make_cuda_executor(void*) { return nullptr; }
bool cuda_available() { return false; }
int cuda_device_arch() { return 0; }
bool cuda_fft_supports(const LinearPlan&, const ImageShape&) { return false; }
void* allocate_pinned(std::size_t) { return nullptr; }
void free_pinned(void*) {}
bool is_pinned(const void*) { return false; }

} // namespace apron

namespace apron::batch {

std::unique_ptr<ComputeSlot> make_cuda_slot(int) { throw Error("--backend cuda: this build has no CUDA backend"); }
int cuda_device_count() { return 0; }

} // namespace apron::batch
