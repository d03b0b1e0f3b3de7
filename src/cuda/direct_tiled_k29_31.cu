// Instantiates the tiled direct kernel for mask sizes 29, 31.
#include "cuda/direct_regs_impl.cuh"

namespace apron::cuda {

template void launch_direct_tiled_k<29>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);
template void launch_direct_tiled_k<31>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);

} // namespace apron::cuda
