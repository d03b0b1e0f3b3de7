#pragma once
// Conversions between accumulated values and stored pixels (SPEC.md, "Types, rounding, saturation"):
// round half to even, then saturate. Shared by host and device so every backend stores the same bits.
#include <cmath>
#include <cstdint>

#include "core/hd.hpp"

namespace apron {

template <class T> struct PixelTraits;
template <> struct PixelTraits<std::uint8_t> { static constexpr double max = 255.0; static constexpr bool integer = true; };
template <> struct PixelTraits<std::uint16_t> { static constexpr double max = 65535.0; static constexpr bool integer = true; };
template <> struct PixelTraits<float> { static constexpr double max = 1.0; static constexpr bool integer = false; };

// NaN stores as 0 in integer types (saturation has no better answer); rint rounds half to even in the
// default rounding mode, which apron never changes.
template <class T>
APRON_HD T store_pixel(double v) {
    if constexpr (PixelTraits<T>::integer) {
        if (!(v > 0.0)) return T(0);
        if (v >= PixelTraits<T>::max) return T(PixelTraits<T>::max);
        return T(rint(v));
    } else {
        return T(v);
    }
}

template <class T>
APRON_HD T store_pixel(float v) {
#if defined(__CUDA_ARCH__)
    // The same result without the slow conversion unit: clamp (fmaxf turns NaN into 0), then adding
    // 2^23 rounds half to even in the FADD and leaves the integer in the low mantissa bits.
    if constexpr (PixelTraits<T>::integer) {
        const float c = fminf(fmaxf(v, 0.0f), float(PixelTraits<T>::max));
        return T(__float_as_uint(c + 8388608.0f) & 0xFFFFu);
    }
#endif
    if constexpr (PixelTraits<T>::integer) {
        if (!(v > 0.0f)) return T(0);
        if (v >= float(PixelTraits<T>::max)) return T(PixelTraits<T>::max);
        return T(rintf(v));
    } else {
        return T(v);
    }
}

} // namespace apron

namespace apron {

// A sample as float. On the device, u8/u16 avoid the conversion unit: 2^23 + n has n in its low mantissa
// bits, so subtracting 2^23 is exact.
template <class T>
APRON_HD float sample_to_float(T v) {
#if defined(__CUDA_ARCH__)
    if constexpr (PixelTraits<T>::integer) return __uint_as_float(0x4B000000u | unsigned(v)) - 8388608.0f;
#endif
    return float(v);
}

} // namespace apron
