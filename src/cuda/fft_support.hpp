#pragma once
// The CUDA backend's FFT path as the planner and the tests see it, without CUDA headers: the overlap-save
// tiling it would use for a plan on an image (see fft_tiling.cpp). Whether it can compute a plan at all is
// apron::cuda_fft_supports (plan/plan.hpp).
#include <cstddef>

#include "apron/image.hpp"

namespace apron {
struct LinearPlan;
namespace cuda {

// Tiles of nx x ny region samples, each channel of each tile one transform, of which the first vx x vy
// outputs are kept (v = n - mask side + 1); batch_tiles tiles go through the transforms at a time.
struct FftTiling {
    int nx = 0, ny = 0;  // 0: no transform size serves this plan
    bool f64 = false;    // double transforms (exact plans), else float
    int vx = 0, vy = 0;
    int tiles_x = 0, tiles_y = 0;
    int batch_tiles = 0, batches = 0;
    long long tiles() const { return (long long)tiles_x * tiles_y; }
    // Reals of one transform in the in-place layout: ny rows of 2 (nx/2 + 1) (room for the half spectrum).
    std::size_t transform_reals() const { return std::size_t(ny) * std::size_t(2 * (nx / 2 + 1)); }
};

// The tiling for this plan on an image of this shape: transform sides are powers of two (cuFFT's fastest)
// chosen by an estimate of the memory traffic per output; exact plans only sides whose double transform
// keeps the rounded sum exact (double_fft_error_bound). APRON_FFT_SIDE=N forces N x N transforms where the
// mask fits (and, exact, the bound holds); APRON_FFT_BATCH=B forces B tiles per batch (for measurement).
FftTiling choose_fft_tiling(const LinearPlan& plan, const ImageShape& shape);

} // namespace cuda
} // namespace apron
