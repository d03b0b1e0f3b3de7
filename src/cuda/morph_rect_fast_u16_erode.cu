// The fast rectangle-morphology kernels (morph_rect_fast.cuh) that erode u16 images, 1-4 channels.
#include "cuda/morph_rect_fast.cuh"

namespace apron::cuda::rect_fast {

template void launch_fast_c<std::uint16_t, false>(int, int, const FastParams&, dim3, cudaStream_t);

} // namespace apron::cuda::rect_fast
