#pragma once
// The value rule of flat dilate and erode (SPEC.md, Morphology), defined once for every backend.
//
// Integers: max (min) over the element's samples, starting from the type's lowest (highest).
// f32: NaN is a missing sample. The output is the max (min) over the samples that are not NaN, and NaN
// when there are none (an element over a NaN hole, or over ignored outside pixels only), never a finite
// stand-in. -inf and +inf are samples like any other and come out as they are.
//
// fmaxf / fminf (IEEE maxNum / minNum) are that rule when the identity is NaN: fmaxf(NaN, x) = x and
// fmaxf(NaN, NaN) = NaN, so "ignored" outside pixels and NaN samples fall out alike, and any window
// decomposition (doubling, van Herk, chords, merged passes) gives the same value. On the GPU each is one
// FMNMX, as fast as the old clamped form. The integer paths are unchanged.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/hd.hpp"

namespace apron {

// The NaN that stands for "no sample" where a backend has to write one (CUDA's canonical NaN, what FMNMX
// returns for two NaN operands). Which NaN comes out is not part of the result.
inline constexpr std::uint32_t morph_missing_bits = 0x7FFFFFFFu;

template <class T>
APRON_HD T morph_identity(bool dilate) {
    if constexpr (std::is_same_v<T, float>) {
#if defined(__CUDA_ARCH__)
        return __uint_as_float(morph_missing_bits);
#else
        float f;
        std::memcpy(&f, &morph_missing_bits, sizeof f);
        return f;
#endif
    } else {
        static_assert(std::is_unsigned_v<T>);
        return dilate ? T(0) : T(~T(0));
    }
}

// One step of the extremum; a and b may be NaN (f32, or double in the reference).
template <class T>
APRON_HD T morph_pick(bool dilate, T a, T b) {
    if constexpr (std::is_same_v<T, float>) return dilate ? fmaxf(a, b) : fminf(a, b);
    else if constexpr (std::is_same_v<T, double>) return dilate ? fmax(a, b) : fmin(a, b);
    else return dilate ? (b > a ? b : a) : (b < a ? b : a);
}

// The CPU's SIMD kernels take f32 extrema on signed 32-bit order keys instead, where one integer max / min
// instruction is exact and NaN-safe: a finite or infinite v maps to its bits with the magnitude bits flipped
// when negative (signed order of keys = order of values), and NaN to the key below -inf (dilate) or above
// +inf (erode), so it loses to every sample and wins only where there is none. morph_key_value undoes the
// map, and turns those two keys into NaN (0xFFFFFFFF and 0x7FFFFFFF), so no check is needed at the end.
// (-0 and +0 get distinct keys; either is a right answer, as with fmaxf.)
inline std::int32_t morph_key(float v, bool dilate) {
    if (v != v) return dilate ? std::int32_t(INT32_MIN) : std::int32_t(INT32_MAX);
    std::int32_t b;
    std::memcpy(&b, &v, sizeof b);
    return b ^ ((b >> 31) & 0x7FFFFFFF);
}

inline float morph_key_value(std::int32_t k) {
    const std::int32_t b = k ^ ((k >> 31) & 0x7FFFFFFF);
    float v;
    std::memcpy(&v, &b, sizeof v);
    return v;
}

} // namespace apron
