#pragma once
// Shared pieces of the fast CPU executor: aligned scratch rows, the column map of a padded row (which
// source column each padded pixel reads through the border), building one padded row, and cutting the
// image into tasks (vertical strips x bands of rows) sized so that the rows in flight stay in L2.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <vector>

#include "apron/border.hpp"
#include "core/border_index.hpp"
#include "cpu/simd_kernels.hpp"

namespace apron::cpu {

// A 64-byte aligned, zero-initialised array that only grows; one per participant, reused across tasks.
template <class T>
class Scratch {
public:
    T* get(std::size_t n) {
        if (n > size_) {
            const std::size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
            void* p = std::aligned_alloc(64, bytes);
            if (!p) throw std::bad_alloc();
            std::memset(p, 0, bytes);
            data_.reset(static_cast<T*>(p));
            size_ = n;
        }
        return data_.get();
    }

private:
    struct Free { void operator()(T* p) const { std::free(p); } };
    std::unique_ptr<T, Free> data_;
    std::size_t size_ = 0;
};

// Outputs this large are written with non-temporal stores: they outgrow the caches before anyone
// reads them, and skipping the read-for-ownership saves a third of the memory traffic of a
// memory-bound pass (f32 dilate 3x3 on 4096^2, 2 threads of the Sapphire Rapids VM: 14.5 ms of CPU
// time instead of 18).
constexpr std::size_t stream_bytes = std::size_t(32) << 20;

// Elements of one row in a ring of rows: room for the kernels' over-compute, rounded to a cache line.
template <class T>
std::size_t row_stride(std::size_t samples) {
    const std::size_t per_line = 64 / sizeof(T);
    return (samples + simd::slack + per_line - 1) / per_line * per_line;
}

// Padded pixel p (0 <= p < count) stands for image column x = first_x + p and reads column map[p], or
// the fill value where map[p] < 0 (constant border, or morphology's ignored outside).
struct ColumnMap {
    int width = 0, first_x = 0;
    std::vector<int> map;
    int inside_begin = 0, inside_end = 0;  // padded pixels that read themselves (x inside the image)

    ColumnMap(int image_width, int first, int count, std::optional<BorderMode> mode)
        : width(image_width), first_x(first), map(std::size_t(count)) {
        for (int p = 0; p < count; ++p) {
            const long long x = (long long)first + p;
            map[std::size_t(p)] = mode ? map_index(x, image_width, *mode) : (x >= 0 && x < image_width ? int(x) : -1);
        }
        inside_begin = std::clamp(-first, 0, count);
        inside_end = std::clamp(image_width - first, inside_begin, count);
    }
};

// Fills dst with padded pixels [p0, p1) of `cols` taken from one source row (nullptr: a row wholly
// outside, all fill). The run inside the image goes through `bulk(src, dst, samples)`, the border
// pixels through `one(sample)`.
template <class Src, class Dst, class Bulk, class One>
void build_padded_row(const Src* src, const ColumnMap& cols, int p0, int p1, int channels, Dst fill, Dst* dst,
                      Bulk&& bulk, One&& one) {
    const std::size_t C = std::size_t(channels);
    if (!src) {
        std::fill(dst, dst + std::size_t(p1 - p0) * C, fill);
        return;
    }
    const int a = std::clamp(cols.inside_begin, p0, p1), b = std::clamp(cols.inside_end, a, p1);
    auto edge = [&](int from, int to) {
        for (int p = from; p < to; ++p) {
            Dst* d = dst + std::size_t(p - p0) * C;
            const int m = cols.map[std::size_t(p)];
            if (m < 0) std::fill(d, d + C, fill);
            else for (std::size_t c = 0; c < C; ++c) d[c] = one(src[std::size_t(m) * C + c]);
        }
    };
    edge(p0, a);
    if (b > a) bulk(src + std::size_t(cols.first_x + a) * C, dst + std::size_t(a - p0) * C, std::size_t(b - a) * C);
    edge(b, p1);
}

// The work of one call, cut into strips of columns and bands of rows. Every output pixel is computed
// the same way whatever the cut, so results do not depend on the thread count.
struct Tiling {
    int strip_width = 0, strips = 1;
    int band_height = 0, bands = 1;

    // bytes_per_column: scratch bytes one output column costs across the rows in flight; halo: extra
    // padded columns a strip needs. min_band: rows below which refilling the ring costs too much.
    Tiling(int width, int height, int participants, std::size_t bytes_per_column, int halo, int min_band) {
        // 1 MiB of rows in flight: half the L2 of the Sapphire Rapids cores this was tuned on, a whole
        // L2 on older Xeons (16 rows of 4096 f32 fit; larger masks or wide rows get cut into strips).
        constexpr std::size_t budget = std::size_t(1) << 20;
        const long long fit = (long long)(budget / std::max<std::size_t>(bytes_per_column, 1)) - halo;
        strip_width = int(std::clamp<long long>(fit, 256, std::max(width, 1)));
        strips = (width + strip_width - 1) / strip_width;
        strip_width = (width + strips - 1) / strips;
        // About four tasks per participant for balance, but bands no shorter than min_band.
        const int wanted = std::max(1, (4 * participants + strips - 1) / strips);
        band_height = std::max((height + wanted - 1) / wanted, std::min(min_band, height));
        bands = (height + band_height - 1) / band_height;
    }
    int tasks() const { return strips * bands; }
    void cell(int task, int width, int height, int& x0, int& x1, int& y0, int& y1) const {
        const int s = task % strips, b = task / strips;
        x0 = s * strip_width;
        x1 = std::min(width, x0 + strip_width);
        y0 = b * band_height;
        y1 = std::min(height, y0 + band_height);
    }
};

} // namespace apron::cpu
