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

// Interleaved rows of n pixels of c samples: the in-row sample that sample s (any distance outside the row)
// reads, or -1 for `constant`. The border maps the pixel (floor(s / c)); the channel stays.
APRON_HD int map_sample(long long s, int n, int c, BorderMode mode) {
    const long long px = s >= 0 ? s / c : -((-s + c - 1) / c);
    const int m = map_index(px, n, mode);
    return m < 0 ? -1 : m * c + int(s - px * c);
}

} // namespace apron
