// The fast rectangle-morphology kernel for u8 images (morph_rect_fast.cuh), 1-4 channels.
#include "cuda/morph_rect_fast.cuh"

namespace apron::cuda {

template MorphRectFastRegion launch_morph_rect_fast<std::uint8_t>(const MorphPlan&, ConstImageView, ImageView, int,
                                                          std::uint32_t, cudaStream_t);

} // namespace apron::cuda
