// Fused separable filter: row pass into shared memory, column pass out: not written yet (the executor falls back to the other kernels).
#include "cuda/separable_fused.hpp"

#include "apron/errors.hpp"

namespace apron::cuda {

bool separable_fused_supports(const LinearPlan&) { return false; }
void launch_separable_fused(const LinearPlan&, ConstImageView, ImageView, cudaStream_t) { throw Error("separable_fused: not available"); }

} // namespace apron::cuda
