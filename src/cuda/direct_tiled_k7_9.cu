// Instantiates the tiled direct kernel for mask sizes 7 and 9.
#include "cuda/direct_regs_impl.cuh"

namespace apron::cuda {

template void launch_direct_tiled_k<7>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);
template void launch_direct_tiled_k<9>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t, int, int);

} // namespace apron::cuda
