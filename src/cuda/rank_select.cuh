#pragma once
// The rank-th of a window's n samples by a radix select over their order keys (core/rank_value.hpp), for the
// generic rank kernels of images (rank_filter.cu: rank_bits) and volumes (rank_volume.cu): at each bit, most
// significant first, count the keys below the trial prefix; keep the bit where at most `want` lie below.
// `key(t)` gives the key of cell t (read through the border, or kept); f32 first counts the valid (non-NaN)
// samples and takes the rank among them (SPEC.md "Rank"), NaN where none is.
#include <cstdint>
#include <type_traits>

#include "core/rank_value.hpp"

namespace apron::cuda {

template <class T, class Key>
__device__ __forceinline__ T select_rank(int n, int rank, Key key) {
    int valid = n;
    if constexpr (std::is_same_v<T, float>) {
        valid = 0;
        for (int t = 0; t < n; ++t) valid += key(t) != rank_missing_key;
        if (valid == 0) return rank_value<T>(rank_missing_key);
    }
    const int want = rank_among(rank, valid, n);
    std::uint32_t result = 0;
    for (int b = rank_key_bits<T> - 1; b >= 0; --b) {
        const std::uint32_t trial = result | (1u << b);
        int below = 0;
        for (int t = 0; t < n; ++t) below += key(t) < trial;
        if (below <= want) result = trial;  // fewer than want + 1 keys lie below: the answer is at or above trial
    }
    return rank_value<T>(result);
}

} // namespace apron::cuda
