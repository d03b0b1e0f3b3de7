// Fused separable kernel: radius buckets 4,5,6 (f32 accumulation) and 4,6 (int32).
#include "cuda/separable_fused_impl.cuh"

namespace apron::cuda {

template void launch_separable_fused_f32<4>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_f32<5>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_f32<6>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_i32<4>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_i32<6>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);

} // namespace apron::cuda
