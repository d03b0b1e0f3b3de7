#pragma once
// Correlation with a mask one sample wide (a column of K taps): a volume's steps along z, run on its z view
// (a row per plane), and vertical 1-D masks on images. See column_linear.cu.
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Taps the kernel holds (its weights travel in the launch's parameters).
constexpr int column_max_taps = 64;

// Whether the column kernel runs this plan: a mask of width 1 and 2 .. column_max_taps rows.
bool column_linear_supports(const LinearPlan& plan);
void launch_column_linear(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);

} // namespace apron::cuda
