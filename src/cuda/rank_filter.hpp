#pragma once
// Rank filters on the GPU (SPEC.md "Rank"): median, percentile and rank over any flat element, u8 / u16 /
// f32, 1-4 interleaved channels. Every kernel gives the rank-th sample of the window in the order of
// core/rank_value.hpp, so each is bit-identical to the reference.
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// The kernel that runs a planned rank step on images of this shape (plain C++: plans without a GPU).
KernelChoice choose_rank(const RankPlan& plan, const ImageShape& shape);
// Runs it on `stream` (in and out in device memory, not aliased).
void launch_rank(const RankPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);
// A volume's window (RankStep::depth > 1) over the whole volume `in` (rank_volume.cu): "cuda.rank_volume_bits".
void launch_rank_volume(const RankPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);

} // namespace apron::cuda
