// The large-window rank kernels (rank_hist.cuh): sliding histograms, u8 / u16 / f32.
#include "cuda/rank_hist.cuh"

namespace apron::cuda::rank {

template void launch_hist<std::uint8_t>(const HistParams&, dim3, std::size_t, cudaStream_t);
template void launch_hist<std::uint16_t>(const HistParams&, dim3, std::size_t, cudaStream_t);
template void launch_hist<float>(const HistParams&, dim3, std::size_t, cudaStream_t);

} // namespace apron::cuda::rank
