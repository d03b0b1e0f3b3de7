// The small-window rank kernels (rank_net.cuh) for u16 images.
#include "cuda/rank_net.cuh"

namespace apron::cuda::rank {

template void launch_tile<std::uint16_t>(int, const NetParams&, dim3, std::size_t, cudaStream_t);
template void launch_sort<std::uint16_t>(int, const NetParams&, dim3, std::size_t, cudaStream_t);

} // namespace apron::cuda::rank
