// The GPU compute slot when apron is built without the CUDA toolkit (cuda_slot.cu has the real one).
#include "apron/errors.hpp"
#include "batch/compute_slot.hpp"

namespace apron::batch {

std::unique_ptr<ComputeSlot> make_cuda_slot(int, SlotJpeg) { throw Error("--backend cuda: this build has no CUDA backend"); }
int cuda_device_count() { return 0; }
bool gpu_jpeg_available() { return false; }

} // namespace apron::batch
