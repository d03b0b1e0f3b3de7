#pragma once
// The fast rectangle-morphology kernel (morph_rect_fast.cuh): u8 / u16, 1-4 interleaved channels, narrow
// elements, interior tiles. morph_rect.cu launches it first and makes the rest with the general kernel.
#include <cstdint>

#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Samples a window may span in the fast kernel, (W - 1) * C + 1: its vertical pass stages 64 + 8 columns of
// 4 samples per tile row (288 threads), so a tile of 256 output samples reads at most 288 - 3 (the 4-sample
// rounding of the window start) - 255 = 30 halo samples; 27 keeps the horizontal pass's V words (<= 22)
// and its registers within the launch bounds (ptxas: see morph_rect_fast.cuh).
constexpr int morph_fast_max_span = 27;
constexpr int morph_fast_max_side = 16;  // W (compile-time) and the vertical pass's tested H
constexpr int morph_fast_max_height = 64;

// Largest W the fast kernel is instantiated for with C channels: 16, 14, 9, 7 for C = 1..4.
constexpr int morph_fast_max_width(int channels) {
    const int by_span = (morph_fast_max_span - 1) / channels + 1;
    return by_span < morph_fast_max_side ? by_span : morph_fast_max_side;
}

// Output rectangle the fast kernel made: samples [x0, x1) x rows [y0, y1); empty when it declined.
struct MorphRectFastRegion {
    int x0 = 0, x1 = 0, y0 = 0, y1 = 0;
};

// Launches the fast kernel on its whole interior tiles (u8 / u16 only; T = float declines) and returns the
// rectangle it made. `mode` -1: outside pixels read `outside` (its sample bits), else a BorderMode.
template <class T>
MorphRectFastRegion launch_morph_rect_fast(const MorphPlan& plan, ConstImageView in, ImageView out, int mode,
                                           std::uint32_t outside, cudaStream_t stream, bool reads_inside = false);

extern template MorphRectFastRegion launch_morph_rect_fast<std::uint8_t>(const MorphPlan&, ConstImageView, ImageView,
                                                                         int, std::uint32_t, cudaStream_t, bool);
extern template MorphRectFastRegion launch_morph_rect_fast<std::uint16_t>(const MorphPlan&, ConstImageView,
                                                                          ImageView, int, std::uint32_t, cudaStream_t, bool);

} // namespace apron::cuda
