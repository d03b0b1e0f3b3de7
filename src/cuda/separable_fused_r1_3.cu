// Fused separable kernel: radius buckets 1,2,3 (f32 accumulation and int32); one file per few buckets,
// so the GPU machine's 16 cores compile them side by side.
#include "cuda/separable_fused_impl.cuh"

namespace apron::cuda {

template void launch_separable_fused_f32<1>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_f32<2>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_f32<3>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_i32<1>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_i32<2>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_i32<3>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);

} // namespace apron::cuda
