// The chord kernels for f32 images (morph_chords_kernel.cuh).
#include "cuda/morph_chords_kernel.cuh"

namespace apron::cuda::chords {

template void launch<float>(bool, bool, int, Params&, std::size_t, int, cudaStream_t);

} // namespace apron::cuda::chords
