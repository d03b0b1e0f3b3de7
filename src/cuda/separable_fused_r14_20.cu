// Fused separable kernel: radius buckets 14,16,18,20 (f32 accumulation) and 16 (int32).
#include "cuda/separable_fused_impl.cuh"

namespace apron::cuda {

template void launch_separable_fused_f32<14>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_f32<16>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_f32<18>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_f32<20>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_i32<16>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);

} // namespace apron::cuda
