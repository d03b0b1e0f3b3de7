// The fused volume pass: which plans it takes, and the dispatch by input type (separable_volume_impl.cuh:
// the kernel; separable_volume_<type>.cu: its instantiations).
#include "cuda/separable_volume.hpp"

#include <algorithm>

#include "apron/errors.hpp"
#include "core/dispatch.hpp"
#include "core/overrides.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/separable_volume_impl.cuh"

namespace apron::cuda {

namespace vol {
int multiprocessors() {
    static const int count = [] {
        int device = 0, n = 0;
        if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
            cudaGetLastError(), n = 132;
        return std::max(1, n);
    }();
    return count;
}
} // namespace vol

bool separable_volume_supports(const LinearPlan& plane, const LinearPlan& along_z, const ImageShape& volume) {
    if (!overrides().volume_fused || volume.channels != 1 || volume.type != plane.in) return false;
    if (plane.algorithm != LinearAlgorithm::separable || plane.exact || !plane.separable || plane.out != PixelType::f32)
        return false;
    if (vol::plane_reach(plane.step.mask) > vol::max_plane_reach) return false;
    const Mask& z = along_z.step.mask;
    if (along_z.exact || along_z.in != PixelType::f32 || z.width != 1 || vol::z_reach(z) > vol::max_z_reach) return false;
    return (volume.height + 31) / 32 <= 65535;  // block rows of 32 (RY = 2) or 64
}

void launch_separable_volume(const LinearPlan& plane, const LinearPlan& along_z, ConstImageView in, ImageView out,
                             cudaStream_t stream) {
    if (!separable_volume_supports(plane, along_z, in.shape)) throw Error("separable_volume: unsupported plans");
    if (in.empty()) return;
    with_type(plane.in, [&]<class In>() { launch_separable_volume_for<In>(plane, along_z, in, out, stream); });
}

} // namespace apron::cuda
