#pragma once
// Direct correlation compiled at run time through NVRTC with the mask's weights in the code (see runtime_direct.cu).
#include <cuda_runtime.h>

#include "cuda/runtime_direct_api.hpp"
#include "plan/plan.hpp"

namespace apron::cuda {

// Computes output rows [row_begin, row_end) (row_end < 0: to the bottom) of the whole image `in`.
void launch_runtime_direct(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream,
                           int row_begin = 0, int row_end = -1);

} // namespace apron::cuda
