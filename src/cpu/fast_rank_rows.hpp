#pragma once
// Pieces the rank kernels share (fast_rank_network.cpp, fast_rank_square.cpp, fast_rank_columns.cpp,
// fast_rank_runs.cpp): the key type of a sample type, padded rows of keys through the border, where outputs
// may read the image in place, samples read through the border one at a time, and the f32 mend for outputs
// whose windows hold a NaN.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/rank_value.hpp"
#include "cpu/fast_rows.hpp"
#include "cpu/simd_rank.hpp"

namespace apron::cpu {

// What the kernels order: u8 and u16 samples themselves, f32 samples as uint32 keys (core/rank_value.hpp).
template <class T>
using RankKey = std::conditional_t<std::is_same_v<T, float>, std::uint32_t, T>;

template <class T>
RankKey<T> rank_key_of(T v) {
    if constexpr (std::is_same_v<T, float>) return rank_key(v);
    else return v;
}

// Keys of padded pixels [p0, p1) of one image row (nullptr: a row wholly outside, all `fill`) into dst.
// Returns whether a key is missing (f32 NaN, the border value included).
template <class T>
bool load_padded_keys(const T* src, const ColumnMap& cols, int p0, int p1, int channels, RankKey<T> fill, RankKey<T>* dst) {
    using K = RankKey<T>;
    constexpr bool kFloat = std::is_same_v<T, float>;
    if (p1 <= p0) return false;
    // A NaN border value is missing too: wherever the range reaches outside the image (or the row is outside).
    const bool outside = src == nullptr || p0 < cols.inside_begin || p1 > cols.inside_end;
    bool missing = kFloat && outside && fill == K(rank_missing_key);
    build_padded_row(src, cols, p0, p1, channels, fill, dst,
                     [&](const T* s, K* d, std::size_t k) {
                         if constexpr (kFloat) missing = simd::f32_rank_keys(s, d, k) || missing;
                         else std::memcpy(d, s, k * sizeof(T));
                     },
                     [&](T s) {
                         const K k = rank_key_of(s);
                         missing = missing || (kFloat && k == K(rank_missing_key));
                         return k;
                     });
    return missing;
}

// Outputs [a, b) of a strip [x0, x1) whose windows (pixels x - anchor_x .. x - anchor_x + mw - 1) lie inside
// an image `width` wide: those may read the image's rows in place. Empty (a = b = x1) where they are fewer
// than 64 samples: a kernel reading in place takes whole vectors of the widest target and never reads past
// the samples it is given, so it needs at least one.
inline void in_place_outputs(int x0, int x1, int width, int mw, int anchor_x, int channels, int& a, int& b) {
    a = std::clamp(anchor_x, x0, x1);
    b = std::clamp(width - mw + anchor_x + 1, a, x1);
    if (std::size_t(b - a) * std::size_t(channels) < 64) a = b = x1;
}

// Row stride (elements) of scratch rows of `samples` keys with the kernels' slack.
template <class K>
std::size_t rank_row_stride(std::size_t samples) {
    return (samples * sizeof(K) + simd::rank_row_slack_bytes + 63) / 64 * 64 / sizeof(K);
}

// Samples of one channel through the border: image column X (any distance outside) of a row pointer
// (nullptr: a row wholly outside under `constant`).
template <class T>
struct RankSampler {
    const ColumnMap* cols = nullptr;
    int offset = 0;  // map index of image column X: X + offset
    int channels = 1, channel = 0;
    T fill{};
    T at(const T* row, long long X) const {
        const int m = cols->map[std::size_t(X + offset)];
        return row && m >= 0 ? row[std::size_t(m) * std::size_t(channels) + std::size_t(channel)] : fill;
    }
};

// A cell of the element: element row j (virtual row y - anchor_y + j) at padded pixel x - x0 + dx.
struct RankCell {
    int dx = 0, j = 0;
};

// f32 outputs [x0, x1) of row y whose window holds a missing key: the networks took NaN as the largest key,
// but SPEC takes the rank among the valid samples (rank_among), so those outputs are selected again here.
// row_of(j): the padded key row of element row j (padded pixel x0 at sample 0).
template <class RowOf>
void mend_missing_outputs(float* out_row, int x0, int x1, int channels, const std::vector<RankCell>& cells, int rank, int count,
                          RowOf&& row_of, std::vector<std::uint32_t>& keys) {
    const std::size_t C = std::size_t(channels);
    for (int x = x0; x < x1; ++x)
        for (std::size_t c = 0; c < C; ++c) {
            keys.clear();
            bool missing = false;
            for (const RankCell& cell : cells) {
                const std::uint32_t k = row_of(cell.j)[std::size_t(x - x0 + cell.dx) * C + c];
                if (k == rank_missing_key) missing = true;
                else keys.push_back(k);
            }
            if (!missing) continue;
            float& o = out_row[std::size_t(x) * C + c];
            if (keys.empty()) {
                o = rank_value<float>(rank_missing_key);
                continue;
            }
            const int r = rank_among(rank, int(keys.size()), count);
            std::nth_element(keys.begin(), keys.begin() + r, keys.end());
            o = rank_value<float>(keys[std::size_t(r)]);
        }
}

} // namespace apron::cpu
