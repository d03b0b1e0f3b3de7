#pragma once
// Rectangle morphology by van Herk/Gil-Werman running extrema (see morph_rect.cu).
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Whether this kernel family handles the plan; the executor tries the next one otherwise.
bool morph_rect_supports(const MorphPlan& plan);
void launch_morph_rect(const MorphPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);

} // namespace apron::cuda
