// The fused volume pass for u8 volumes (one file per input type, so the three compile side by side).
#include <cstdint>

#include "core/overrides.hpp"
#include "cuda/separable_volume_impl.cuh"

namespace apron::cuda {

template <>
void launch_separable_volume_for<std::uint8_t>(const LinearPlan& plane, const LinearPlan& along_z, ConstImageView in,
                                      ImageView out, cudaStream_t stream) {
    vol::launch_bucketed<std::uint8_t>(plane, along_z, in, out, stream, overrides().volume_rows);
}

} // namespace apron::cuda
