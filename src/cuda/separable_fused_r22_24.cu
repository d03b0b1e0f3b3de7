// Fused separable kernel: radius buckets 22,24 (f32 accumulation) and 24 (int32).
#include "cuda/separable_fused_impl.cuh"

namespace apron::cuda {

template void launch_separable_fused_f32<22>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_f32<24>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);
template void launch_separable_fused_i32<24>(const LinearPlan&, ConstImageView, ImageView, cudaStream_t);

} // namespace apron::cuda
