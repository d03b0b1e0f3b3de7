#pragma once
// The value rule of rank filters (SPEC.md, Rank), defined once for every backend (host and device).
//
// Samples are ordered by a key: u8 and u16 samples are their own keys; f32 samples are ordered as IEEE
// totalOrder over the numbers (-inf < ... < -0 < +0 < ... < +inf), through their bits with the magnitude
// flipped when negative and the sign bit set when positive, so an unsigned compare of keys is the order
// and a rank picks one sample's exact bits whatever the algorithm. NaN is a missing sample: it has the key
// above every number (rank_missing_key) and is not counted among the valid ones.
//
// Of the v valid samples of a window of n cells, a step of rank r takes the sample of rank
// rank_among(r, v, n) = floor(r * v / n) (0-based); r itself when nothing is missing. No valid sample: NaN.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/hd.hpp"

namespace apron {

inline constexpr std::uint32_t rank_missing_key = 0xFFFFFFFFu;

APRON_HD int rank_among(int rank, int valid, int count) {
    return valid == count ? rank : int((long long)rank * valid / count);
}

APRON_HD std::uint32_t float_bits(float v) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(v);
#else
    std::uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
#endif
}

APRON_HD float bits_float(std::uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(b);
#else
    float v;
    std::memcpy(&v, &b, sizeof v);
    return v;
#endif
}

template <class T>
APRON_HD std::uint32_t rank_key(T v) {
    if constexpr (std::is_same_v<T, float>) {
        if (v != v) return rank_missing_key;
        const std::uint32_t b = float_bits(v);
        return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    } else {
        static_assert(std::is_unsigned_v<T>);
        return std::uint32_t(v);
    }
}

template <class T>
APRON_HD T rank_value(std::uint32_t key) {
    if constexpr (std::is_same_v<T, float>) {
        return bits_float((key & 0x80000000u) ? (key ^ 0x80000000u) : ~key);
    } else {
        return T(key);
    }
}

// Bits of a key of T: what a radix select walks.
template <class T>
inline constexpr int rank_key_bits = std::is_same_v<T, float> ? 32 : int(8 * sizeof(T));

} // namespace apron
