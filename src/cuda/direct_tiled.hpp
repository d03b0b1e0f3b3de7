#pragma once
// The tiled direct kernel for odd square masks up to 31x31 (see direct_tiled.cu).
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Whether the tiled kernel handles this plan (mask shape, accumulator); the executor falls back otherwise.
bool direct_tiled_supports(const LinearPlan& plan);
// Computes output rows [row_begin, row_end) (row_end < 0: to the bottom) of the whole image `in`, so a
// band's border rows are exact.
void launch_direct_tiled(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream,
                         int row_begin = 0, int row_end = -1);

} // namespace apron::cuda
