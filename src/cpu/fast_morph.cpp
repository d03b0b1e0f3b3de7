// Morphology (flat erode / dilate) on the fast CPU executor, in the sample type itself (min and max are
// exact, so every algorithm here gives the reference's bits).
//
// Horizontal windows use doubling: level a of a row holds the extremum of 2^a consecutive pixels, and a
// run of L pixels is the extremum of two overlapping level-floor(log2 L) windows. That is O(log L)
// SIMD passes per row (5 for L = 31) at 16 to 64 lanes, cheaper than van Herk's O(1) scan, which is
// sequential along the row. Vertically, rectangles use van Herk / Gil-Werman (3 row extrema per output
// row whatever the height, SIMD across the row), small heights a direct extremum.
//
// Full rectangles up to simd::max_small_rect (8) per side skip all that: simd_morph_rect.cpp takes a task in
// one pass (horizontal rows into a ring that stays in cache, the vertical extremum of output pairs from
// it, square elements both in one sweep), reading the input in place and writing each output row once.
//
// `direct` (any shape) splits each element row into runs of cells; an output row is then the extremum
// of one or two level rows per run, read straight from a ring of per-row levels.
//
// Outside pixels: through map_index for a border mode; "ignored" reads the identity (the type's
// max for erode, lowest for dilate; for f32 a missing sample, core/morph_value.hpp).
//
// f32 rows are loaded as order keys (morph_key: NaN below every sample for dilate, above for erode) and
// the passes take integer extrema of those, exact and as fast as float ones; the final pass writes the
// values back (NaN where the element held no sample). u8 / u16 rows are the samples themselves.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/dispatch.hpp"
#include "core/morph_value.hpp"
#include "core/pixel.hpp"
#include "cpu/fast_executor.hpp"
#include "cpu/fast_rows.hpp"

namespace apron::cpu {
namespace {

struct Run {
    int row, begin, length;  // element row j, first cell i, cells
};

int floor_log2(int v) { return std::bit_width(unsigned(v)) - 1; }

template <class T>
struct Participant {
    Scratch<T> ring, padded;
    std::vector<const void*> ptrs;
};

template <class T>
class MorphJob {
    // What the rows in flight hold: order keys for f32, the samples for integers.
    using B = std::conditional_t<std::is_same_v<T, float>, std::int32_t, T>;

public:
    MorphJob(const MorphPlan& plan, ConstImageView in, ImageView out, int participants)
        : in_(in), out_(out), W_(in.width()), H_(in.height()), C_(in.channels()), mw_(plan.step.element.width),
          mh_(plan.step.element.height), ax_(plan.step.element.anchor_x), ay_(plan.step.element.anchor_y),
          max_(plan.step.kind == MorphKind::dilate), mode_(plan.step.border),
          cols_(W_, -ax_, W_ + mw_ - 1, plan.step.border), parts_(std::size_t(participants)) {
        const Mask& e = plan.step.element;
        fill_ = key_of(mode_ && *mode_ == BorderMode::constant ? store_pixel<T>(plan.step.border_value)
                                                               : morph_identity<T>(max_));
        bool full = true;
        for (int j = 0; j < mh_; ++j)
            for (int i = 0; i < mw_;) {
                if (e.at(i, j) == 0) { full = false; ++i; continue; }
                int k = i;
                while (k < mw_ && e.at(k, j) != 0) ++k;
                runs_.push_back(Run{j, i, k - i});
                longest_ = std::max(longest_, k - i);
                i = k;
            }
        rect_ = full && plan.algorithm == MorphAlgorithm::separable_rect;
        stream_ = std::size_t(W_) * std::size_t(H_) * std::size_t(C_) * sizeof(T) >= stream_bytes;
        levels_ = runs_.empty() ? 1 : floor_log2(longest_) + 1;
        vertical_van_herk_ = rect_ && mh_ > 4;
        small_ = rect_ && mw_ <= simd::max_small_rect && mh_ <= simd::max_small_rect;
        const std::size_t C = std::size_t(C_);
        if (small_) {  // a ring of mh + 1 horizontal rows
            tiling_ = Tiling(W_, H_, participants, (std::size_t(mh_) + 1) * C * sizeof(B), mw_ - 1, std::max(8, 2 * mh_));
            return;
        }
        // Rows in flight per output column: van Herk keeps 2 segments + a prefix row, direct a ring of
        // mh rows of all levels.
        const std::size_t rows = rect_ ? (vertical_van_herk_ ? 2 * std::size_t(mh_) + 2 : std::size_t(mh_) + 1)
                                       : std::size_t(mh_) * std::size_t(levels_);
        tiling_ = Tiling(W_, H_, participants, rows * C * sizeof(T), mw_ - 1, std::max(8, 2 * mh_));
    }

    int tasks() const { return tiling_.tasks(); }
    // Whether the one-pass small-rectangle kernel runs this step (the only one with a fused combine).
    bool small() const { return small_; }
    // The combine fused into the stores (u8 / u16, small rectangles): out = clamp(other - result, 0, max),
    // or result - other with `minus_other`.
    void fuse(ConstImageView other, bool minus_other) {
        other_ = other;
        minus_other_ = minus_other;
    }

    void run(int task, int who) {
        int x0, x1, y0, y1;
        tiling_.cell(task, W_, H_, x0, x1, y0, y1);
        Participant<B>& p = parts_[std::size_t(who)];
        if (runs_.empty()) {  // no cells: every pixel is the identity, as in the reference
            for (int y = y0; y < y1; ++y)
                std::fill(out_.row<T>(y) + std::size_t(x0) * C_, out_.row<T>(y) + std::size_t(x1) * C_,
                          morph_identity<T>(max_));
            return;
        }
        if (small_) return run_small(p, x0, x1, y0, y1);  // flushes its own streams
        if (rect_) run_rect(p, x0, x1, y0, y1);
        else run_direct(p, x0, x1, y0, y1);
        if (stream_) simd::flush_streams();
    }

private:
    B key_of(T v) const {
        if constexpr (std::is_same_v<T, float>) return morph_key(v, max_);
        else return v;
    }

    std::size_t samples(int pixels) const { return std::size_t(pixels) * std::size_t(C_); }

    // Padded row of virtual row v for output columns [x0, x1): padded pixels [x0, x1 + mw - 1).
    void load_row(long long v, int x0, int x1, B* dst) const {
        int r;
        if (mode_) r = map_index(v, H_, *mode_);
        else r = v >= 0 && v < H_ ? int(v) : -1;
        const T* src = r < 0 ? nullptr : in_.row<T>(r);
        build_padded_row(src, cols_, x0, x1 + mw_ - 1, C_, fill_, dst,
                         [&](const T* s, B* d, std::size_t k) {
                             if constexpr (std::is_same_v<T, float>) simd::morph_keys(max_, s, d, k);
                             else std::memcpy(d, s, k * sizeof(T));
                         },
                         [&](T s) { return key_of(s); });
    }

    // `out`: dst is a row of the output (type T; f32 keys are turned back into values), else a row in flight.
    void extremum(const void* const* rows, std::size_t count, void* dst, std::size_t n, bool out) const {
        if constexpr (std::is_same_v<T, float>) simd::extremum_keys(max_, rows, count, dst, n, out, out && stream_);
        else simd::extremum(pixel_type(), max_, rows, count, dst, n, out && stream_);
    }
    void pick(Participant<B>& p, void* dst, std::size_t n, bool out = false) const {
        extremum(p.ptrs.data(), p.ptrs.size(), dst, n, out);
    }
    void pick2(const B* a, const B* b, void* dst, std::size_t n, bool out = false) const {
        const void* rows[2] = {a, b};
        extremum(rows, b ? 2 : 1, dst, n, out);
    }
    static PixelType pixel_type() {
        return std::is_same_v<T, std::uint8_t> ? PixelType::u8 : std::is_same_v<T, std::uint16_t> ? PixelType::u16 : PixelType::f32;
    }

    // Doubling levels in place: after level a, buf[s] holds the extremum of samples s, s+C, ...,
    // s + (2^a - 1) C of the padded row. Each pass reads position s + h before any write reaches it.
    void raise_levels(B* buf, std::size_t padded_n, int to_level, B* const* keep) const {
        const std::size_t C = std::size_t(C_);
        for (int a = 0; a < to_level; ++a) {
            const std::size_t h = (std::size_t(1) << a) * C;
            B* dst = keep ? keep[a + 1] : buf;
            const B* src = keep ? keep[a] : buf;
            pick2(src, src + h, dst, padded_n - 2 * h + C);
        }
    }

    // ---- rectangles: row pass, then van Herk (or a direct extremum) down the columns ----

    // Extremum over mw_ pixels of virtual row v, for output columns [x0, x1), into dst.
    void row_pass(long long v, int x0, int x1, B* padded, B* dst) const {
        const std::size_t padded_n = samples(x1 - x0 + mw_ - 1), n = samples(x1 - x0);
        load_row(v, x0, x1, padded);
        const int a = floor_log2(mw_);
        raise_levels(padded, padded_n, a, nullptr);
        const std::size_t rest = samples(mw_ - (1 << a));
        pick2(padded, rest ? padded + rest : nullptr, dst, n);
    }

    void run_rect(Participant<B>& p, int x0, int x1, int y0, int y1) {
        const std::size_t n = samples(x1 - x0), stride = row_stride<B>(n);
        B* padded = p.padded.get(row_stride<B>(samples(x1 - x0 + mw_ - 1)));
        const long long vbase = (long long)y0 - ay_;
        const int k = mh_, rows_out = y1 - y0;
        auto out_row = [&](int o) { return out_.row<T>(y0 + o) + samples(x0); };

        if (!vertical_van_herk_) {  // ring of k rows, one extremum of k per output row
            B* ring = p.ring.get(stride * std::size_t(k));
            auto slot = [&](long long v) { return ring + std::size_t((v - vbase) % k) * stride; };
            long long loaded = vbase;
            for (int o = 0; o < rows_out; ++o) {
                for (; loaded <= vbase + o + k - 1; ++loaded) row_pass(loaded, x0, x1, padded, slot(loaded));
                p.ptrs.clear();
                for (int j = 0; j < k; ++j) p.ptrs.push_back(slot(vbase + o + j));
                pick(p, out_row(o), n, true);
            }
            return;
        }
        // van Herk / Gil-Werman over segments of k rows: the window of output o starts in segment
        // o / k; it is the suffix of that segment from o % k, joined with the prefix of the next one.
        B* mem = p.ring.get(stride * (2 * std::size_t(k) + 1));
        std::vector<B*> A(static_cast<std::size_t>(k)), Bs(static_cast<std::size_t>(k));
        for (int t = 0; t < k; ++t) {
            A[std::size_t(t)] = mem + std::size_t(t) * stride;
            Bs[std::size_t(t)] = mem + std::size_t(k + t) * stride;
        }
        B* pre = mem + 2 * std::size_t(k) * stride;
        auto suffix = [&](std::vector<B*>& seg, long long first) {
            for (int t = 0; t < k; ++t) row_pass(first + t, x0, x1, padded, seg[std::size_t(t)]);
            for (int t = k - 2; t >= 0; --t) pick2(seg[std::size_t(t)], seg[std::size_t(t) + 1], seg[std::size_t(t)], n);
        };
        suffix(A, vbase);
        pick2(A[0], nullptr, out_row(0), n, true);
        for (int base = 0;; base += k) {
            const B* prefix = nullptr;
            for (int t = 0; t < k - 1; ++t) {
                const int o = base + t + 1;
                if (o >= rows_out) return;
                B* row = Bs[std::size_t(t)];
                row_pass(vbase + base + k + t, x0, x1, padded, row);
                if (t == 0) prefix = row;
                else { pick2(prefix, row, pre, n); prefix = pre; }
                pick2(A[std::size_t(t) + 1], prefix, out_row(o), n, true);
            }
            if (base + k >= rows_out) return;
            row_pass(vbase + base + 2 * k - 1, x0, x1, padded, Bs[std::size_t(k) - 1]);
            for (int t = k - 2; t >= 0; --t) pick2(Bs[std::size_t(t)], Bs[std::size_t(t) + 1], Bs[std::size_t(t)], n);
            pick2(Bs[0], nullptr, out_row(base + k), n, true);
            std::swap(A, Bs);
        }
    }

    // ---- small rectangles: one fused pass (simd_morph_rect.cpp) ----

    void run_small(Participant<B>& p, int x0, int x1, int y0, int y1) const {
        simd::MorphRectTask t;
        t.type = pixel_type();
        t.max = max_;
        t.stream = stream_;
        t.channels = C_;
        t.mw = mw_;
        t.mh = mh_;
        t.rows_out = y1 - y0;
        p.ptrs.clear();
        for (int i = 0; i < t.rows_out + mh_ - 1; ++i) {
            const long long v = (long long)y0 - ay_ + i;
            const int r = mode_ ? map_index(v, H_, *mode_) : v >= 0 && v < H_ ? int(v) : -1;
            p.ptrs.push_back(r < 0 ? nullptr : in_.row<T>(r));
        }
        t.rows = p.ptrs.data();
        t.out = out_.row<T>(y0) + samples(x0);
        t.out_stride = y1 - y0 > 1 ? reinterpret_cast<const char*>(out_.row<T>(y0 + 1)) - reinterpret_cast<const char*>(out_.row<T>(y0)) : 0;
        if (other_.data) {
            t.other = other_.row<T>(y0) + samples(x0);
            t.other_stride = std::ptrdiff_t(other_.pitch);
            t.minus_other = minus_other_;
        }
        t.pixels = x1 - x0;
        // Map indices (cols_) x .. x + mw - 1 are output x's window; those in [inside_begin, inside_end)
        // read their own column, so outputs [mid0, mid1) read the input row in place.
        const int mid0 = std::max(x0, cols_.inside_begin), mid1 = std::min(x1, cols_.inside_end - mw_ + 1);
        if (mid1 > mid0) {
            t.left = mid0 - x0;
            t.middle = mid1 - mid0;
        } else {
            t.left = x1 - x0;
            t.middle = 0;
        }
        t.width = W_;
        t.first_col = x0 - ax_;
        t.cols = cols_.map.data() + x0;
        t.fill = std::int64_t(fill_);
        const std::size_t stride = row_stride<B>(samples(x1 - x0));
        t.ring = p.ring.get(stride * (std::size_t(mh_) + 1));
        t.ring_stride = stride;
        t.pad_stride = std::max<std::size_t>(row_stride<B>(samples(x1 - x0 + mw_ - 1)), 512);
        t.pad = p.padded.get(2 * t.pad_stride);
        simd::morph_rect(t);
    }

    // ---- any shape: runs of cells over a ring of per-row doubling levels ----

    void run_direct(Participant<B>& p, int x0, int x1, int y0, int y1) {
        const std::size_t n = samples(x1 - x0), padded_n = samples(x1 - x0 + mw_ - 1);
        const std::size_t stride = row_stride<B>(padded_n), per_row = stride * std::size_t(levels_);
        B* ring = p.ring.get(per_row * std::size_t(mh_));
        const long long vbase = (long long)y0 - ay_;
        auto level = [&](long long v, int a) { return ring + std::size_t((v - vbase) % mh_) * per_row + std::size_t(a) * stride; };
        std::vector<B*> keep(static_cast<std::size_t>(levels_));
        long long loaded = vbase;
        for (int y = y0; y < y1; ++y) {
            const long long top = (long long)y - ay_;
            for (; loaded <= top + mh_ - 1; ++loaded) {
                for (int a = 0; a < levels_; ++a) keep[std::size_t(a)] = level(loaded, a);
                load_row(loaded, x0, x1, keep[0]);
                raise_levels(keep[0], padded_n, levels_ - 1, keep.data());
            }
            p.ptrs.clear();
            for (const Run& r : runs_) {
                const int a = floor_log2(r.length);
                const B* base = level(top + r.row, a);
                p.ptrs.push_back(base + samples(r.begin));
                if (r.length != 1 << a) p.ptrs.push_back(base + samples(r.begin + r.length - (1 << a)));
            }
            pick(p, out_.row<T>(y) + samples(x0), n, true);
        }
    }

    ConstImageView in_;
    ImageView out_;
    ConstImageView other_;  // the fused combine's other image (data == nullptr: none)
    bool minus_other_ = false;
    int W_, H_, C_, mw_, mh_, ax_, ay_;
    bool max_;
    std::optional<BorderMode> mode_;
    ColumnMap cols_;
    B fill_{};
    std::vector<Run> runs_;
    int longest_ = 0, levels_ = 1;
    bool rect_ = false, vertical_van_herk_ = false, small_ = false, stream_ = false;
    Tiling tiling_{1, 1, 1, 1, 0, 1};
    std::vector<Participant<B>> parts_;
};

} // namespace

bool run_morph_combine(ThreadPool& pool, const MorphPlan& plan, ConstImageView in, ConstImageView other, bool minus_other,
                       ImageView out) {
    if (in.empty() || !other.data || plan.type == PixelType::f32 || !(other.shape == out.shape)) return false;
    bool done = false;
    with_type(plan.type, [&]<class T>() {
        if constexpr (!std::is_same_v<T, float>) {
            MorphJob<T> job(plan, in, out, pool.size());
            if (!job.small()) return;
            job.fuse(other, minus_other);
            pool.run(job.tasks(), [&](int task, int who) { job.run(task, who); });
            done = true;
        }
    });
    return done;
}

void run_morph(ThreadPool& pool, const MorphPlan& plan, ConstImageView in, ImageView out) {
    if (in.empty()) return;
    with_type(plan.type, [&]<class T>() {
        MorphJob<T> job(plan, in, out, pool.size());
        pool.run(job.tasks(), [&](int task, int who) { job.run(task, who); });
    });
}

} // namespace apron::cpu
