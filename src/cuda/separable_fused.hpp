#pragma once
// Fused separable filter: row pass into shared memory, column pass out (see separable_fused.cu).
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Whether this kernel family handles the plan; the executor tries the next one otherwise.
bool separable_fused_supports(const LinearPlan& plan);
void launch_separable_fused(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);

} // namespace apron::cuda
