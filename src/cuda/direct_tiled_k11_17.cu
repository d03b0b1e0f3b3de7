// Instantiates the tiled direct kernel for mask sizes 11, 13, 15, 17.
#include "cuda/direct_regs_impl.cuh"

namespace apron::cuda {

template void launch_direct_tiled_k<11>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);
template void launch_direct_tiled_k<13>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);
template void launch_direct_tiled_k<15>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);
template void launch_direct_tiled_k<17>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);

} // namespace apron::cuda
