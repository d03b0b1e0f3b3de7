#pragma once
// Exact direct correlation of u8 images with byte-weight masks on the tensor cores (see direct_imma.cu).
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Whether the INT8 tensor-core kernel takes this plan on this input: an exact plan with the f32 accumulator
// (|sum| < 2^24), u8 input, one channel, a mask 1..31 wide and 1..31 tall (odd or even, any anchor), every
// integer weight in [-128, 127]. Any output type, border, image size and input view (rows that are not
// 4-byte aligned take the slower byte-wise staging). APRON_IMMA=0 keeps it out, for A/B measurement.
bool direct_imma_supports(const LinearPlan& plan, ConstImageView in);
// Output rows [row_begin, row_end) (row_end < 0: to the bottom) of the whole image `in`.
void launch_direct_imma(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream,
                        int row_begin = 0, int row_end = -1);

} // namespace apron::cuda
