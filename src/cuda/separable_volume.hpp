#pragma once
// A volume's separable filter in one pass: the plane step (a separable float filter of each plane) and the
// step along z that alone reads its result (a float column of at most 7 taps), fused, so the float
// intermediate never leaves the SM. Two passes read and write 12 bytes a u16 voxel (u16 in, f32 between,
// u16 out); the fused pass 4, but its arithmetic and barriers make it slower so far: it runs only where
// APRON_VOLUME_FUSED=1 asks (a measured path, core/overrides.hpp). Design notes in separable_volume_impl.cuh.
#include <cuda_runtime.h>

#include "apron/image.hpp"
#include "plan/plan.hpp"

namespace apron::cuda {

// Whether the fused pass computes these two steps on a volume of this shape (one channel, float plans,
// the plane's factors within 8 of their anchor, z's column within 3 of its anchor), with the bits of the
// two steps run apart on the GPU.
bool separable_volume_supports(const LinearPlan& plane, const LinearPlan& along_z, const ImageShape& volume);

// out = along_z(plane(in)); in and out volumes of the same shape in device memory (planes of height rows,
// one pitch, one after another).
void launch_separable_volume(const LinearPlan& plane, const LinearPlan& along_z, ConstImageView in, ImageView out,
                             cudaStream_t stream);

// The launch for one input type (separable_volume_<type>.cu instantiate it, so they compile side by side).
template <class In>
void launch_separable_volume_for(const LinearPlan& plane, const LinearPlan& along_z, ConstImageView in, ImageView out,
                                 cudaStream_t stream);

} // namespace apron::cuda
