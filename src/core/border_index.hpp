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

// A band of an image (the FFT's overlap-save grid stays the whole image's): the band's rows 0 .. rows-1 hold
// image rows first, first+1, ... (modulo the image's height n under `wrap`). The band row that image row i
// (any distance outside the image) reads through the border rule, or -1 for `constant`. Rows the band lacks
// clamp to its edge: only outputs outside what the band keeps read them (the band engine's halo).
APRON_HD int map_band_row(long long i, int n, BorderMode mode, int first, int rows) {
    const int m = map_index(i, n, mode);
    if (m < 0) return -1;
    const int b = mode == BorderMode::wrap ? positive_mod((long long)m - first, n) : m - first;
    return b < 0 ? 0 : b >= rows ? rows - 1 : b;
}

// The band's rows as runs of consecutive image rows: one, or two where a wrapping band crosses the image's
// last row. Returns how many (0 where the band does not fit the image: rows past n, or outside it without
// `wrap`).
struct BandRun {
    int band_row = 0, image_row = 0, rows = 0;
};
APRON_HD int band_runs(int first, int rows, int n, bool wrap, BandRun* runs) {
    if (rows <= 0 || rows > n) return 0;
    if (!wrap && (first < 0 || first > n - rows)) return 0;
    const int f = positive_mod(first, n);
    const int head = rows < n - f ? rows : n - f;
    runs[0] = BandRun{0, f, head};
    if (head == rows) return 1;
    runs[1] = BandRun{head, 0, rows - head};
    return 2;
}

// floor(s / c) for c > 0 and either sign of s (C++ '/' truncates toward zero): the pixel that interleaved
// sample s belongs to.
template <class Index>
APRON_HD Index floor_div(Index s, int c) {
    return s >= 0 ? s / c : -((-s + c - 1) / c);
}

// Keeps a template argument out of deduction: the caller names it or takes the default.
template <class T>
struct no_deduce {
    using type = T;
};

// Interleaved rows of n pixels of c samples: the in-row sample that sample s (any distance outside the row)
// reads, or -1 for `constant`. The border maps the pixel (floor(s / c)); the channel stays. Index is the
// width of the division: 64 bits by default (any distance); kernels whose sample indices are 32-bit name
// int, as a 64-bit division by a run-time channel count costs them registers (the fused rectangle kernel:
// 58 -> 62 on u16).
template <class Index = long long>
APRON_HD int map_sample(typename no_deduce<Index>::type s, int n, int c, BorderMode mode) {
    const Index px = floor_div(s, c);
    const int m = map_index(px, n, mode);
    return m < 0 ? -1 : m * c + int(s - px * c);
}

// map_sample under a mode that maps every pixel (any but `constant`), so never -1: for kernels that take
// the outside value before they map. They would pay for map_sample's -1 test, which the compiler cannot
// drop (the fast rectangle kernel at 2 and 4 channels: ~800 more instructions, its lanes' maps no longer
// shared).
template <class Index = long long>
APRON_HD int mapped_sample(typename no_deduce<Index>::type s, int n, int c, BorderMode mode) {
    const Index px = floor_div(s, c);
    const int ch = int(s - px * c);
    return map_index(px, n, mode) * c + ch;
}

} // namespace apron
