// Fused separable kernel: radius buckets 28,32 (f32 accumulation) and 32 (int32).
#include "cuda/separable_fused_impl.cuh"

namespace apron::cuda {

template void launch_separable_fused_f32<28>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_f32<32>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_i32<32>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);

} // namespace apron::cuda
