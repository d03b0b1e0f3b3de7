// The fast rectangle-morphology kernel's host side (morph_rect_fast.cuh) for u8 and u16 images; its kernels
// are instantiated in morph_rect_fast_{u8,u16}_{dilate,erode}.cu.
#include "cuda/morph_rect_fast.cuh"

namespace apron::cuda {

template MorphRectFastRegion launch_morph_rect_fast<std::uint8_t>(const MorphPlan&, ConstImageView, ImageView, int,
                                                                  std::uint32_t, cudaStream_t, bool);
template MorphRectFastRegion launch_morph_rect_fast<std::uint16_t>(const MorphPlan&, ConstImageView, ImageView, int,
                                                                   std::uint32_t, cudaStream_t, bool);

} // namespace apron::cuda
