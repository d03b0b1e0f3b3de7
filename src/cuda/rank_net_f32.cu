// The small-window rank kernels (rank_net.cuh) for f32 images.
#include "cuda/rank_net.cuh"

namespace apron::cuda::rank {

template void launch_tile<float>(int, const NetParams&, dim3, std::size_t, cudaStream_t);
template void launch_sort<float>(int, const NetParams&, dim3, std::size_t, cudaStream_t);

} // namespace apron::cuda::rank
