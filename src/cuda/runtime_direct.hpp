#pragma once
// Direct correlation compiled at run time through NVRTC with the mask's weights in the code (see runtime_direct.cu).
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Whether this kernel family handles the plan; the executor tries the next one otherwise.
bool runtime_direct_supports(const LinearPlan& plan);
void launch_runtime_direct(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);

} // namespace apron::cuda
