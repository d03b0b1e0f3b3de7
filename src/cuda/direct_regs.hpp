#pragma once
// Which images the register kernel (direct_regs_impl.cuh) takes: host code only, so tests can assert that
// the kernel they mean to cover is the one that runs.
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "apron/image.hpp"

namespace apron::cuda::regs {

// Outputs per thread along x for the register kernel on this input type and mask size; 0: the tiles take
// it. f32 takes it with 4 outputs. Integer images at 3x3 with 8 (one PRMT + FADD per sample converts it;
// measured on the H100, u8 3x3: 493 Gpix/s against 445 tiled and 435 with 4 outputs), at 5x5 the tiles,
// which convert each sample once (393 against 340 with 8 outputs, 342 with 4). APRON_DIRECT_REGS=4 or 8
// forces that width on integer images, =0 keeps every type on the tiles (to measure one against another).
template <int K, class In>
int outputs_per_thread() {
    static const int forced = [] {
        const char* v = std::getenv("APRON_DIRECT_REGS");
        return v ? std::atoi(v) : -1;
    }();
    if (forced == 0) return 0;
    if (std::is_same_v<In, float>) return 4;
    if (forced == 4 || forced == 8) return forced;
    return K == 3 ? 8 : 0;
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
