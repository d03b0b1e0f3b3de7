// Direct correlation compiled at run time through NVRTC with the mask's weights in the code: not written yet (the executor falls back to the other kernels).
#include "cuda/runtime_direct.hpp"

#include "apron/errors.hpp"

namespace apron::cuda {

bool runtime_direct_supports(const LinearPlan&) { return false; }
void launch_runtime_direct(const LinearPlan&, ConstImageView, ImageView, cudaStream_t) { throw Error("runtime_direct: not available"); }

} // namespace apron::cuda
