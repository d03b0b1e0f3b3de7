// The chord kernels for u8 images (morph_chords_kernel.cuh).
#include "cuda/morph_chords_kernel.cuh"

namespace apron::cuda::chords {

template void launch<std::uint8_t>(bool, bool, int, Params&, std::size_t, int, cudaStream_t);

} // namespace apron::cuda::chords
