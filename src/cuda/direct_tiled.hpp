#pragma once
// The tiled direct kernel for odd square masks up to 31x31 (see direct_tiled.cu).
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Whether the tiled kernel handles this plan (mask shape, accumulator); the executor falls back otherwise.
bool direct_tiled_supports(const LinearPlan& plan);
void launch_direct_tiled(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);

} // namespace apron::cuda
