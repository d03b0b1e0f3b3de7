#pragma once
// The one definition of border index maths, shared by every backend (host and device).
// map_index(i, n, mode) gives the in-image coordinate that an outside coordinate i reads, or -1 for
// `constant` (the caller substitutes the border value). It holds for any distance from the image,
// so masks larger than the image repeat the extension as SciPy does.
#include "apron/border.hpp"
#include "core/hd.hpp"

namespace apron {

// Non-negative remainder (i may be far below zero).
APRON_HD int positive_mod(long long i, long long n) {
    long long r = i % n;
    return int(r < 0 ? r + n : r);
}

APRON_HD int map_index(long long i, int n, BorderMode mode) {
    if (i >= 0 && i < n) return int(i);
    switch (mode) {
    case BorderMode::constant: return -1;
    case BorderMode::nearest: return i < 0 ? 0 : n - 1;
    case BorderMode::reflect: {  // d c b a | a b c d | d c b a : period 2n
        const int k = positive_mod(i, 2LL * n);
        return k < n ? k : 2 * n - 1 - k;
    }
    case BorderMode::mirror: {  // d c b | a b c d | c b a : period 2n-2
        if (n == 1) return 0;
        const int k = positive_mod(i, 2LL * n - 2);
        return k < n ? k : 2 * n - 2 - k;
    }
    case BorderMode::wrap: return positive_mod(i, n);
    }
    return -1;
}

// Interleaved rows of n pixels of c samples: the in-row sample that sample s (any distance outside the row)
// reads, or -1 for `constant`. The border maps the pixel (floor(s / c)); the channel stays.
APRON_HD int map_sample(long long s, int n, int c, BorderMode mode) {
    const long long px = s >= 0 ? s / c : -((-s + c - 1) / c);
    const int m = map_index(px, n, mode);
    return m < 0 ? -1 : m * c + int(s - px * c);
}

} // namespace apron
