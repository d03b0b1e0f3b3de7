// Instantiates the direct kernels (register and tiled) for mask sizes 3 and 5.
#include "cuda/direct_regs_impl.cuh"

namespace apron::cuda {

template void launch_direct_tiled_k<3>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);
template void launch_direct_tiled_k<5>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);

} // namespace apron::cuda
