#pragma once
// What the CUDA FFT path keeps between calls (fft_cache.cu): cuFFT plans per transform size and batch, and
// each mask's spectrum per transform size, both per device and shared by every executor and stream.
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstddef>
#include <memory>
#include <mutex>

#include "cuda/fft_support.hpp"

namespace apron {
struct LinearPlan;
namespace cuda {

// A batch of `transforms` in-place 2D transforms of nx x ny reals (rows padded to 2 (nx/2 + 1) reals, the
// half spectrum in the same memory), float (R2C/C2R) or double (D2Z/Z2D). The plans own no work area:
// each call passes one of work_bytes(), so plans are shared without sharing scratch.
class FftPlans {
public:
    FftPlans(int nx, int ny, int transforms, bool f64);
    ~FftPlans();
    FftPlans(const FftPlans&) = delete;
    FftPlans& operator=(const FftPlans&) = delete;

    std::size_t work_bytes() const { return work_bytes_; }
    void forward(void* data, void* work, cudaStream_t stream);  // reals to half spectrum, unscaled
    void inverse(void* data, void* work, cudaStream_t stream);  // half spectrum to reals, unscaled

private:
    cufftHandle forward_ = 0, inverse_ = 0;
    bool f64_ = false;
    std::size_t work_bytes_ = 0;
    std::mutex mutex_;  // a cuFFT plan's stream and work area are state: set and enqueue under one lock
};

// The plans for this tiling and channel count on the current device (made on first use).
std::shared_ptr<FftPlans> fft_plans(const FftTiling& t, int transforms);

// The spectrum of the plan's mask for this tiling on the current device: ny x (nx/2 + 1) complex values
// (float2 or double2 as t.f64), of g(W-1-i, H-1-j) = weight(i, j) / (nx ny) (flipped for correlation, the
// inverse transform's scale folded in), computed in double. Exact plans use the integer weights. Made on
// first use on `stream` (which is then synchronised once), kept for later calls.
std::shared_ptr<const void> mask_spectrum(const LinearPlan& plan, const FftTiling& t, cudaStream_t stream);

} // namespace cuda
} // namespace apron
