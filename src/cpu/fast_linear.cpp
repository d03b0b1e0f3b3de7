// The linear step on the fast CPU executor. Per task (a strip of columns x a band of rows), input rows
// are widened once into a ring of padded rows (border columns filled through the column map, border
// rows through map_index), and output rows are produced in groups of up to four by weighted_sum_rows
// straight from the ring (each loaded input vector serves every row of the group), then finished into
// the output type. Separable masks run a row pass into a ring of intermediate rows and the grouped
// column pass out of it, fused per band. f32 input with a direct mask reads the rows in place for the
// outputs whose windows lie inside the image; only the border columns (and fill rows) are padded.
//
// Accumulator: f32 for the float path and for the exact path when the planner found every partial sum
// below 2^24 (sums of integer products are then exact in f32, fused or not); f64 otherwise.
//
// A group forms the products of an entry with every row it reaches, zero weights included when the
// mask has zeros inside. Those are exact zeros for finite inputs; rows whose window holds inf or NaN
// are instead summed one output row at a time over their non-zero taps only, as the reference does.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "cpu/fast_executor.hpp"
#include "cpu/fast_rows.hpp"
#include "cpu/fft_linear.hpp"
#include "cpu/simd_kernels.hpp"

namespace apron::cpu {
namespace {

// The taps of a group of `rows` consecutive output rows: entry k reads ring row `ring_row[k]`
// (relative to the group's first input row) at offset `off[k]`, with weight w[k * rows + q] for the
// group's row q (zero where the entry is outside that row's mask). Entries come in ring-row order;
// those with no non-zero weight are left out. bounds: see simd::GroupArgs (needs mh >= rows - 1).
struct GroupTaps {
    int rows = 1;
    std::vector<int> ring_row;
    std::vector<std::size_t> off;
    std::vector<double> w;
    std::vector<std::size_t> bounds;

    // weight(i, j) of a mw x mh mask (j: mask row); offsets i * step.
    template <class Weight>
    GroupTaps(int group_rows, int mw, int mh, std::size_t step, Weight&& weight) : rows(group_rows) {
        std::vector<std::size_t> row_begin;  // entry index where each ring row starts
        for (int r = 0; r < mh + rows - 1; ++r) {
            row_begin.push_back(size());
            for (int i = 0; i < mw; ++i) {
                std::vector<double> ws(std::size_t(rows), 0.0);
                bool any = false;
                for (int q = 0; q < rows; ++q) {
                    const int j = r - q;
                    if (j >= 0 && j < mh) any = (ws[std::size_t(q)] = weight(i, j)) != 0 || any;
                }
                if (!any) continue;
                ring_row.push_back(r);
                off.push_back(std::size_t(i) * step);
                w.insert(w.end(), ws.begin(), ws.end());
            }
        }
        row_begin.push_back(size());
        for (int i = 0; i < rows; ++i) bounds.push_back(row_begin[std::size_t(i)]);
        for (int i = 0; i < rows; ++i) bounds.push_back(row_begin[std::size_t(mh + i)]);
    }
    std::size_t size() const { return ring_row.size(); }
};

template <class F>
struct Participant {
    Scratch<F> ring, padded, sum;
    std::vector<const F*> ptrs;
    std::vector<F> w;
    std::vector<F*> outs;
    std::vector<void*> dsts;
    std::vector<char> finite;  // per ring slot
    std::vector<const F*> direct;  // per ring slot, in-place rows: output xa's first padded pixel
};

template <class F>
class LinearJob {
public:
    LinearJob(const LinearPlan& plan, ConstImageView in, ImageView out, int participants)
        : plan_(plan), in_(in), out_(out), W_(in.width()), H_(in.height()), C_(in.channels()),
          mw_(plan.step.mask.width), mh_(plan.step.mask.height), ax_(plan.step.mask.anchor_x),
          ay_(plan.step.mask.anchor_y), mode_(plan.step.border),
          cols_(W_, -ax_, W_ + mw_ - 1, plan.step.border), parts_(std::size_t(participants)) {
        with_type(plan.in, [&]<class In>() { fill_ = F(store_pixel<In>(plan.step.border_value)); });
        fill_finite_ = std::isfinite(double(fill_));
        const Mask& m = plan.step.mask;
        const std::size_t C = std::size_t(C_);
        if (plan.exact) bound_ = double(plan.integer_mask.abs_sum) * type_max(plan.in);
        std::vector<double> row, column;  // separable factors
        if (plan.algorithm == LinearAlgorithm::separable && plan.exact && plan.integer_separable) {
            for (auto v : plan.integer_separable->row) row.push_back(double(v));
            for (auto v : plan.integer_separable->column) column.push_back(double(v));
        } else if (plan.algorithm == LinearAlgorithm::separable && !plan.exact && plan.separable) {
            row = plan.separable->row;
            column = plan.separable->column;
        }
        separable_ = !row.empty();
        in_place_ = std::is_same_v<F, float> && plan.in == PixelType::f32 && !separable_;
        for (double v : m.weights) has_zero_ = has_zero_ || v == 0;
        // Rows per group: a mask one row high shares nothing between output rows; up to 8 rows, pairs
        // (the kernel's edge loops and their accumulator spills weigh more than 4-row sharing gains
        // on so few entries). Masks beyond 256 x 256 (whose direct sums are FFT territory) keep one
        // table of single rows, to bound its memory.
        group_ = mh_ > 8 ? simd::max_rows : mh_ >= 2 ? 2 : 1;
        if (!separable_ && (long long)mw_ * mh_ > 65536) group_ = 1;
        // Two tables: single rows (band tails, rows next to non-finite input) and full groups.
        auto table = [&](int g) {
            if (separable_) return GroupTaps(g, 1, mh_, 0, [&](int, int j) { return column[std::size_t(j)]; });
            return GroupTaps(g, mw_, mh_, C, [&](int i, int j) {
                const std::size_t k = std::size_t(j) * std::size_t(mw_) + std::size_t(i);
                return plan.exact ? double(plan.integer_mask.weights[k]) : m.weights[k];
            });
        };
        groups_.push_back(table(1));
        if (group_ > 1) groups_.push_back(table(group_));
        if (separable_) row_pass_ = GroupTaps(1, mw_, 1, C, [&](int i, int) { return row[std::size_t(i)]; });
        // Row-pass results can only leave the finite range from f32 input or absurd weights.
        double row_abs = 0;
        for (double v : row) row_abs += std::fabs(v);
        check_row_pass_ = separable_ && !plan.exact && (plan.in == PixelType::f32 || row_abs * type_max(plan.in) > 1e37);
        // Scratch per output column: the ring (padded rows for direct, intermediate rows for separable),
        // the padded row and the sums.
        ring_rows_ = mh_ + group_ - 1;
        stream_ = std::size_t(W_) * std::size_t(H_) * std::size_t(C_) * bytes_per_sample(plan.out) >= stream_bytes;
        const std::size_t rows = std::size_t(ring_rows_ + group_ + 1);
        tiling_ = Tiling(W_, H_, participants, rows * C * sizeof(F), mw_ - 1, std::max(8, 2 * mh_));
    }

    int tasks() const { return tiling_.tasks(); }

    void run(int task, int who) {
        int x0, x1, y0, y1;
        tiling_.cell(task, W_, H_, x0, x1, y0, y1);
        Participant<F>& p = parts_[std::size_t(who)];
        const std::size_t C = std::size_t(C_);
        Band b;
        b.x0 = x0;
        b.n = std::size_t(x1 - x0) * C;                                  // output samples of the strip
        const std::size_t padded_n = std::size_t(x1 - x0 + mw_ - 1) * C;  // padded samples
        b.ring_stride = row_stride<F>(separable_ ? b.n : padded_n);
        b.sum_stride = row_stride<F>(b.n);
        b.ring = p.ring.get(b.ring_stride * std::size_t(ring_rows_));
        b.sums = p.sum.get(b.sum_stride * std::size_t(group_));
        b.vbase = (long long)y0 - ay_;
        b.ring_rows = ring_rows_;
        F* padded = separable_ ? p.padded.get(row_stride<F>(padded_n)) : nullptr;
        p.finite.assign(std::size_t(ring_rows_), 1);
        // f32 input, direct: outputs [xa, xb) read their rows in place (their windows lie inside the
        // image); the ring keeps only the padded pixels of the outputs left and right of them, and whole
        // rows of the fill. The interior's samples are a multiple of 16, so the kernels' whole-vector
        // loads never pass its last window (nor the end of the image).
        int xa = x0, xb = x0;
        if (in_place_) {
            xa = std::clamp(ax_, x0, x1);
            xb = std::clamp(W_ - mw_ + ax_ + 1, xa, x1);
            const int unit = 16 / std::gcd(16, C_);  // pixels whose samples are a multiple of 16
            xb = xa + (xb - xa) / unit * unit;
            if ((xb - xa) * C_ < 64) xa = xb = x0;
            p.direct.assign(std::size_t(ring_rows_), nullptr);
        }

        long long loaded = b.vbase;  // next virtual row to bring into the ring
        for (int y = y0; y < y1;) {
            const int rows = std::min(group_, y1 - y);
            const long long top = (long long)y - ay_;
            for (; loaded <= top + mh_ + rows - 2; ++loaded) {
                F* dst = b.slot(loaded);
                bool finite;
                if (separable_) {
                    finite = load_row(loaded, x0, x1, padded);
                    gather(p, row_pass_, [&](int) { return padded; });
                    simd::weighted_sum(p.ptrs.data(), p.w.data(), p.ptrs.size(), dst, b.n);
                    if constexpr (std::is_same_v<F, float>)
                        if (check_row_pass_) finite = simd::all_finite(dst, b.n);
                } else if (xb > xa) {
                    if constexpr (std::is_same_v<F, float>)
                        finite = load_row_in_place(loaded, x0, x1, xa, xb, dst, p.direct[b.slot_index(loaded)]);
                } else {
                    finite = load_row(loaded, x0, x1, dst);
                }
                p.finite[b.slot_index(loaded)] = finite;
            }
            bool finite = true;
            for (long long v = top; v <= top + mh_ + rows - 2; ++v) finite = finite && p.finite[b.slot_index(v)];
            // Column ranges [from, to) and where their rows start: the ring (pixel x0 at slot + 0), or the
            // interior's rows in place (pixel xa at direct[slot]).
            auto sum_range = [&](const GroupTaps& g, long long t, int yy, int from, int to, bool in_place) {
                if (to <= from) return;
                const std::size_t skip = std::size_t(from - x0) * C;
                if (in_place) sum_rows(p, b, g, t, yy, from, to, [&](long long v) { return p.direct[b.slot_index(v)]; });
                else sum_rows(p, b, g, t, yy, from, to, [&](long long v) { return b.slot(v) + skip; });
            };
            auto sum_all = [&](const GroupTaps& g, long long t, int yy) {
                if (xb <= xa) return sum_range(g, t, yy, x0, x1, false);
                sum_range(g, t, yy, x0, xa, false);
                sum_range(g, t, yy, xa, xb, true);
                sum_range(g, t, yy, xb, x1, false);
            };
            if (finite && rows == group_) {
                sum_all(groups_.back(), top, y);
            } else {
                for (int q = 0; q < rows; ++q) sum_all(groups_[0], top + q, y + q);
            }
            y += rows;
        }
        if (stream_) simd::flush_streams();
    }

private:
    // Where one task's rows live.
    struct Band {
        int x0 = 0;
        std::size_t n = 0, ring_stride = 0, sum_stride = 0;
        F* ring = nullptr;
        F* sums = nullptr;
        long long vbase = 0;  // virtual (unmapped) input row held by ring slot 0
        int ring_rows = 1;
        std::size_t slot_index(long long v) const { return std::size_t((v - vbase) % ring_rows); }
        F* slot(long long v) const { return ring + slot_index(v) * ring_stride; }
    };

    // Sums for output rows y, y+1, ... (g.rows of them) whose first input row is virtual row `top`,
    // then their finish into the output; columns [from, to), whose padded pixels start at row_at(v) for
    // virtual row v.
    template <class RowAt>
    void sum_rows(Participant<F>& p, const Band& b, const GroupTaps& g, long long top, int y, int from, int to,
                  RowAt&& row_at) const {
        const simd::GroupArgs<F> args = gather(p, g, [&](int r) { return row_at(top + r); });
        const std::size_t n = std::size_t(to - from) * std::size_t(C_);
        auto out_row = [&](int q) {
            return out_.row_bytes(y + q) + std::size_t(from) * std::size_t(C_) * bytes_per_sample(plan_.out);
        };
        if constexpr (std::is_same_v<F, float>) {
            if (!plan_.exact) {  // finish fused into the kernel's stores
                p.dsts.resize(std::size_t(g.rows));
                for (int q = 0; q < g.rows; ++q) p.dsts[std::size_t(q)] = out_row(q);
                simd::weighted_sum_rows_finish(args, plan_.out, p.dsts.data(), n, plan_.finish, stream_);
                return;
            }
        }
        p.outs.resize(std::size_t(g.rows));
        for (int q = 0; q < g.rows; ++q) p.outs[std::size_t(q)] = b.sums + std::size_t(q) * b.sum_stride;
        simd::weighted_sum_rows(args, p.outs.data(), n);
        for (int q = 0; q < g.rows; ++q)
            simd::finish_exact_row(plan_.out, p.outs[std::size_t(q)], out_row(q), n, plan_.finish, bound_, stream_);
    }

    template <class Where>
    static simd::GroupArgs<F> gather(Participant<F>& p, const GroupTaps& g, Where&& row_start) {
        p.ptrs.resize(g.size());
        p.w.resize(g.w.size());
        for (std::size_t k = 0; k < g.size(); ++k) p.ptrs[k] = row_start(g.ring_row[k]) + g.off[k];
        for (std::size_t k = 0; k < g.w.size(); ++k) p.w[k] = F(g.w[k]);
        simd::GroupArgs<F> a;
        a.rows = g.rows;
        a.taps = p.ptrs.data();
        a.w = p.w.data();
        a.count = g.size();
        a.bounds = g.bounds.data();
        return a;
    }

    // Padded input row for virtual row v, output columns [x0, x1): padded pixels [x0, x1 + mw - 1).
    // Returns whether every value in it is finite.
    bool load_row(long long v, int x0, int x1, F* dst) const {
        const int r = map_index(v, H_, mode_);
        bool finite = true;
        with_type(plan_.in, [&]<class In>() {
            const In* src = r < 0 ? nullptr : in_.row<In>(r);
            bool edge_finite = true;
            build_padded_row(src, cols_, x0, x1 + mw_ - 1, C_, fill_, dst,
                             [&](const In* s, F* d, std::size_t k) { finite = simd::widen(plan_.in, s, d, k); },
                             [&](In s) {
                                 edge_finite = edge_finite && std::isfinite(double(s));
                                 return F(s);
                             });
            const bool uses_fill = !src || cols_.map.front() < 0 || cols_.map.back() < 0;
            finite = finite && edge_finite && (fill_finite_ || !uses_fill);
        });
        return finite;
    }

    // load_row for the in-place form: only the padded pixels of outputs [x0, xa) and [xb, x1) go into dst
    // (all of it for a row of the fill); `direct` gets where output xa's window starts. Whether the
    // row's padded pixels are all finite matters only to masks with zero weights (otherwise a group
    // forms each row's own products: the same bits as single rows), so only they pay for the check.
    bool load_row_in_place(long long v, int x0, int x1, int xa, int xb, float* dst, const float*& direct) const {
        const int r = map_index(v, H_, mode_);
        const std::size_t C = std::size_t(C_);
        if (r < 0) {
            direct = dst + std::size_t(xa - x0) * C;
            return load_row(v, x0, x1, dst);
        }
        const float* src = in_.row<float>(r);
        direct = src + std::size_t(xa - ax_) * C;
        bool finite = true, edge_finite = true;
        auto part = [&](int p0, int p1) {
            build_padded_row(src, cols_, p0, p1, C_, float(fill_), dst + std::size_t(p0 - x0) * C,
                             [&](const float* s, float* d, std::size_t k) { finite = simd::widen(PixelType::f32, s, d, k) && finite; },
                             [&](float s) {
                                 edge_finite = edge_finite && std::isfinite(s);
                                 return s;
                             });
        };
        if (xa > x0) part(x0, xa + mw_ - 1);
        if (xb < x1) part(xb, x1 + mw_ - 1);
        // One pass of loads over the in-place run either way: it checks, and it brings the row in from
        // memory at the rate of a plain stream (4096^2 f32 3x3 from DRAM, one thread: without it the
        // sums, which read a few rows at a time, took 9.2 ms instead of 6.9).
        const bool run_finite = simd::all_finite(direct, std::size_t(xb - xa + mw_ - 1) * C);
        if (!has_zero_) return true;
        const bool uses_fill = cols_.map.front() < 0 || cols_.map.back() < 0;
        return finite && edge_finite && (fill_finite_ || !uses_fill) && run_finite;
    }

    const LinearPlan& plan_;
    ConstImageView in_;
    ImageView out_;
    int W_, H_, C_, mw_, mh_, ax_, ay_;
    BorderMode mode_;
    ColumnMap cols_;
    F fill_{};
    bool fill_finite_ = true;
    double bound_ = 0;
    bool separable_ = false, check_row_pass_ = false, stream_ = false;
    bool in_place_ = false, has_zero_ = false;  // f32 input read in place (direct masks); the mask has zeros
    int group_ = 1, ring_rows_ = 1;
    std::vector<GroupTaps> groups_;  // groups of 1 row, then (if larger) of group_ rows
    GroupTaps row_pass_{1, 0, 0, 0, [](int, int) { return 0.0; }};
    Tiling tiling_{1, 1, 1, 1, 0, 1};
    std::vector<Participant<F>> parts_;
};

template <class F>
void run_typed(ThreadPool& pool, const LinearPlan& plan, ConstImageView in, ImageView out) {
    LinearJob<F> job(plan, in, out, pool.size());
    pool.run(job.tasks(), [&](int task, int who) { job.run(task, who); });
}

} // namespace

void run_linear(ThreadPool& pool, const LinearPlan& plan, ConstImageView in, ImageView out) {
    if (in.empty()) return;
    // The FFT sums a tile holding a NaN or an infinity directly (fft_linear.cpp), tile by tile, so a band
    // of the image gives the whole image's bits.
    if (plan.algorithm == LinearAlgorithm::fft) return run_fft_linear(pool, plan, in, out);
    if (run_separable_8bit(pool, plan, in, out)) return;
    if (plan.exact && plan.accumulator == Accumulator::f64) run_typed<double>(pool, plan, in, out);
    else run_typed<float>(pool, plan, in, out);
}

} // namespace apron::cpu
