#pragma once
// Rectangle morphology (full W x H elements, any size): the fused tiled kernel with its fast interior path
// for sides up to 64 (morph_rect.cu, morph_rect_fast.cuh), two separable passes beyond
// (morph_rect_passes.cu). Every kernel works on samples: 1-4 interleaved channels, u8 / u16 / f32.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Whether this kernel family handles the plan (any full rectangle whose wide-element pass fits the
// device's shared memory: widths up to apron's mask limit on sm_90); the executor tries the next one otherwise.
bool morph_rect_supports(const MorphPlan& plan);
void launch_morph_rect(const MorphPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);
// Whether a volume's planes run in one launch (as blockIdx.z) for this plan on `channels` channels: the tiled
// kernels; the separable passes and the wide colour chain launch once per plane (launch_morph_rect does both).
bool morph_rect_batches_planes(const MorphPlan& plan, int channels);

// Whether the fast interior kernel takes this pixel type, channel count and element size (views aligned
// to 4 / 8 bytes in and 16 bytes out are its other condition): u8 / u16, C = 1..4, W up to 16, 14, 9, 7
// for C = 1..4, H up to 64. Lets tests assert that a case runs the fast path.
bool morph_rect_fast_path_takes(PixelType type, int channels, int se_width, int se_height);

// What launch_morph_rect runs for this plan on images of `channels` channels, for the plan's kernel name:
// "fast" (the fast interior kernel where the views are aligned, the tiled kernel on the ring), "passes"
// (the separable passes), "" (the tiled kernel).
const char* morph_rect_form(const MorphPlan& plan, int channels);

// The separable passes for elements of any size (vertical, then horizontal, through a stream-ordered
// device temporary of one image). `mode` -1: outside pixels read `outside` (sample bits), else a BorderMode.
void launch_morph_rect_passes(const MorphPlan& plan, ConstImageView in, ImageView out, int mode,
                              std::uint32_t outside, cudaStream_t stream);
// Shared memory of the horizontal pass's block for this channel count and element width.
std::size_t morph_rect_passes_smem(int channels, int se_width);

} // namespace apron::cuda
