#pragma once
// Correlation through cuFFT, overlap-save tiles in batches (see fft_linear.cu). What the planner asks
// (cuda_fft_supports, the tiling) is in plan/plan.hpp and cuda/fft_support.hpp, free of CUDA headers.
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Enqueues out = plan applied to in (device views, every channel) on `stream`, and returns true; or
// returns false, having left `out` undefined, when the caller must compute the plan with the direct
// kernels instead:
//   - cuda_fft_supports(plan, in.shape) is false (an exact plan the double transform cannot keep exact);
//   - an f32 image holds NaN, an infinity or a magnitude past 2^64 (or the constant border value does):
//     a transform would spread it over its whole tile, where the direct sum keeps it to the windows that
//     hold it. The gather kernel flags such samples, and only for f32 images the call then waits for the
//     stream to read the flag; u8/u16 images never wait.
// Exact plans give the shared finish of the exact integer sum (bits identical to every backend); float
// plans are within SPEC.md's tolerance of the float64 result, and identical from run to run.
bool launch_fft_linear(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);

} // namespace apron::cuda
