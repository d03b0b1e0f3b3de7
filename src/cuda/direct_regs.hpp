#pragma once
// Which images the register kernel (direct_regs_impl.cuh) takes: host code only, so tests can assert that
// the kernel they mean to cover is the one that runs.
#include <cstdint>
#include <type_traits>

#include "apron/image.hpp"
#include "cuda/dispatch_table.hpp"
#include "plan/plan.hpp"

namespace apron::cuda::regs {

// Outputs per thread along x for the register kernel on this input type and mask size; 0: the tiles take
// it. The values are the dispatch table's (cuda/dispatch_table.cpp, with their measurements): f32 with 4,
// u8/u16 at 3x3 with 8, at 5x5 the tiles; APRON_DIRECT_REGS=4 or 8 forces that width on integer images,
// =0 keeps every type on the tiles (read once, by overrides()).
template <int K, class In>
int outputs_per_thread() {
    const int forced = overrides().direct_regs;
    const ArchPolicy& policy = policy_for(cuda_device_arch());
    if (forced == 0 || K > policy.regs_max_k) return 0;
    if (std::is_same_v<In, float>) return policy.regs_rx_float;
    if (forced == 4 || forced == 8) return forced;
    return K == 3 ? policy.regs_rx_int_3x3 : 0;
}

// Outputs per thread the register kernel takes this image with, 0 where it declines. The word loads need
// 4-sample alignment of the data and the pitch, whatever the channel count (a 4-sample word of an RGB
// row may start mid-pixel: the taps are at stride C within the window, not per word).
template <int K, class In>
int usable(ConstImageView in) {
    const int rx = outputs_per_thread<K, In>();
    const std::size_t quad = 4 * sizeof(In);
    const bool ok = K <= 5 && rx && in.channels() >= 1 && in.channels() <= max_channels &&
                    reinterpret_cast<std::uintptr_t>(in.data) % quad == 0 && in.pitch % quad == 0;
    return ok ? rx : 0;
}

} // namespace apron::cuda::regs
