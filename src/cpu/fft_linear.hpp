#pragma once
// Correlation through the FFT on the CPU backend (FFTW, overlap-save tiles; double transforms for exact
// plans, single for float ones): the cost per pixel grows with log(tile) instead of the mask's area, so it
// wins for large non-separable masks.
#include "apron/image.hpp"

namespace apron {
struct LinearPlan;
namespace cpu {

class ThreadPool;

// Whether this build has FFTW (the planner picks the FFT only then).
bool fft_available();

// The FFT tile (nx x ny, sizes with factors 2, 3, 5, 7 only) for a W x H mask on a width x height image.
struct FftTile {
    int nx = 0, ny = 0;
};
FftTile choose_fft_tile(int mask_w, int mask_h, int width, int height);

// The largest error of one output of an exact plan's sum computed through a double FFT of this tile
// (double_fft_error_bound in plan/fft_bound.hpp, the rule the CUDA backend applies too): the planner takes
// the FFT for an exact plan only while this stays below 1/4, so rounding recovers the exact integer sum.
double fft_exact_error_bound(const LinearPlan& plan, FftTile tile);

// out = the plan applied to in, every channel, by tiles handed out over the pool.
void run_fft_linear(ThreadPool& pool, const LinearPlan& plan, ConstImageView in, ImageView out);

} // namespace cpu
} // namespace apron
