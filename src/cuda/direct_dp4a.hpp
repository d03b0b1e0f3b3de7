#pragma once
// Exact direct correlation of u8 images with small integer masks through IDP.4A (see direct_dp4a.cu).
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Whether the byte dot-product kernel takes this plan on this input: an exact plan, u8, one channel, an
// odd square mask 3x3 to 9x9 centred, every integer weight in [-128, 127], rows 4-byte aligned.
// APRON_DP4A=0 keeps it out (to measure the float kernels on the same cases).
bool direct_dp4a_supports(const LinearPlan& plan, ConstImageView in);
// Output rows [row_begin, row_end) (row_end < 0: to the bottom) of the whole image `in`.
void launch_direct_dp4a(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream,
                        int row_begin = 0, int row_end = -1);

} // namespace apron::cuda
