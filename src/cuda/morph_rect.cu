// Rectangle morphology by van Herk/Gil-Werman running extrema: not written yet (the executor falls back to the other kernels).
#include "cuda/morph_rect.hpp"

#include "apron/errors.hpp"

namespace apron::cuda {

bool morph_rect_supports(const MorphPlan&) { return false; }
void launch_morph_rect(const MorphPlan&, ConstImageView, ImageView, cudaStream_t) { throw Error("morph_rect: not available"); }

} // namespace apron::cuda
