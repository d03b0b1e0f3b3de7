// The fast rectangle-morphology kernels (morph_rect_fast.cuh) that dilate u8 images, 1-4 channels.
#include "cuda/morph_rect_fast.cuh"

namespace apron::cuda::rect_fast {

template void launch_fast_c<std::uint8_t, true>(int, int, const FastParams&, dim3, cudaStream_t);

} // namespace apron::cuda::rect_fast
