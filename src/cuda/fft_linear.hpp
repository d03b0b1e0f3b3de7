#pragma once
// Correlation through cuFFT, overlap-save tiles in batches (see fft_linear.cu). What the planner asks
// (cuda_fft_supports, the tiling) is in plan/plan.hpp and cuda/fft_support.hpp, free of CUDA headers.
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Enqueues out = plan applied to in (device views, every channel) on `stream`, and returns true; or
// returns false, having left `out` undefined, when the caller must compute the plan with the direct
// kernels instead: cuda_fft_supports is false for the plan on the whole image (an exact plan the double
// transform cannot keep exact), or a weight (or an f32 image's constant border value) is not finite or
// past 2^64. The call never waits for the stream: a tile of an f32 image holding a NaN, an infinity or a
// magnitude past 2^64 is summed directly on the device (a transform would spread it over its whole tile).
// `in` may be a band of a larger image (plan.fft): the band's bits are then the whole image's.
// Exact plans give the shared finish of the exact integer sum (bits identical to every backend); float
// plans are within SPEC.md's tolerance of the float64 result, and identical from run to run.
bool launch_fft_linear(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);

} // namespace apron::cuda
