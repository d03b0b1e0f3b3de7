// Instantiates the tiled direct kernel for mask sizes 19, 21, 23.
#include "cuda/direct_regs_impl.cuh"

namespace apron::cuda {

template void launch_direct_tiled_k<19>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);
template void launch_direct_tiled_k<21>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);
template void launch_direct_tiled_k<23>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);

} // namespace apron::cuda
