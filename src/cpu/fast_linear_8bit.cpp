// Paths for 8-bit images in 16-bit lanes (twice the samples per vector of the f32 path, and no widened
// f32 row). The separable forms read the padded row of each input row once into a ring of row-pass
// results and finish straight out of the column pass; the direct form (DirectQ15, small float masks)
// keeps the padded rows themselves in the ring. 2048^2 RGB on 2 cores, CPU time: box 5x5 8.2 -> 6.2 ms,
// Gaussian sigma 2 13.9 -> 8.1 ms, correlate 3x3 6.8 -> 3.5 ms (docs/perf-notes.md).
//
// exact (box, binomial, Sobel, Scharr, Laplacian, sharpen, emboss): small integer masks of either sign,
// separable (row pass into a 16-bit ring, column pass) or direct (the mask's taps over a ring of padded
// rows), summed modulo 2^16 in full-width i16 lanes with four vectors in flight, taps grouped by weight
// (no multiply for +-1). Applies when 255 * sum |w| < 2^16: the exact sum then lies in a range narrower
// than 2^16, which its 16 bits identify. Box columns of 4 rows and more keep a running sum. The finish
// is integer (a multiply-high by a reciprocal, exact over the range; simd_small_int.cpp), giving the
// reference's bits; other finishes (f32 output, fractional scales) go through finish_exact_row.
// Boxes into u8 take their own sweep (Box16Job): row pass, running column sum and finish in one pass a
// row, two samples a 16-bit lane (no widening shuffle per tap), interior input rows read in place
// (4096^2 box 5x5, one thread: gray 3.0 -> 1.3-1.6 ms, RGB 6.6 -> 3.8-4.9, RGBA 8.3 -> 5.0-6.5).
//
// float (Gaussian): factors in Q15, pixels in Q7, one vpmulhrsw (rounded product) and one add per tap
// and 32 samples. SPEC allows integer results within 1 of the correctly rounded float64 result; that
// holds whenever the computed value a lies within 1/2 of the exact v (then |rint(a) - rint(v)| < 3/2).
// With R_i, C_j the Q15 factors of r_i, c_j (the column's scaled by the finish's multiplier), k_r and
// k_c taps, every pixel in [0, 255]:
//   row result t_y / 2^7 = sum_i r_i x_i + e, |e| <= E_r = 255 sum_i |R_i / 2^15 - r_i| + k_r 2^-8
//     (weight rounding, then one rounding of 2^-8 pixel per product);  |t_y / 2^7| <= M = 255 sum |R_i| / 2^15 + k_r 2^-8;
//   column sum / 2^7 - v <= M sum_j |C_j / 2^15 - c_j| + sum_j |c_j| E_r + k_c 2^-8.
// The path is taken only when that bound is below 0.49, and when every partial sum stays inside i16
// (M 2^7 and M sum |C_j| / 2^15 2^7 + k_c / 2 below 32767). Gaussians pass up to sigma 4 (25 taps;
// bound 0.08 at sigma 1, 0.28 at sigma 4); the bound is worked out per plan, so no input can break it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "apron/mask.hpp"
#include "core/pixel.hpp"
#include "cpu/fast_executor.hpp"
#include "cpu/fast_rows.hpp"
#include "cpu/simd_kernels.hpp"

namespace apron::cpu {
namespace {

// Taps grouped by weight for the 16-bit kernels (simd::Taps16): the +1 taps first (they start the sum
// without a multiply), then -1 (subtracted), then one group per other weight (one multiply per group).
// `index` lists the taps' positions in the weights, group by group; zero weights are left out.
struct WeightGroups {
    std::vector<std::uint32_t> end;
    std::vector<std::int16_t> w;
    std::vector<std::size_t> index;

    explicit WeightGroups(const std::vector<std::int64_t>& weights) {
        std::vector<std::int64_t> order;
        for (auto v : weights)
            if (v != 0 && std::find(order.begin(), order.end(), v) == order.end()) order.push_back(v);
        std::stable_sort(order.begin(), order.end(), [](std::int64_t a, std::int64_t b) {
            auto rank = [](std::int64_t v) { return v == 1 ? 0 : v == -1 ? 1 : 2; };
            return rank(a) < rank(b);
        });
        for (auto v : order) {
            for (std::size_t k = 0; k < weights.size(); ++k)
                if (weights[k] == v) index.push_back(k);
            end.push_back(std::uint32_t(index.size()));
            w.push_back(std::int16_t(std::uint16_t(std::uint64_t(v) & 0xFFFF)));  // modulo 2^16
        }
    }
    simd::Taps16 taps(const void* const* rows) const { return {rows, end.data(), w.data(), w.size()}; }
};

// The range of the exact sum of an integer mask over u8 pixels: [-255 sum of |negative weights|,
// 255 sum of positive weights]. The 16-bit forms apply when it is narrower than 2^16 (255 sum |w| < 2^16).
struct SumRange {
    std::int64_t lo = 0, hi = 0;
    explicit SumRange(const IntegerMask& m) {
        for (auto v : m.weights) (v < 0 ? lo : hi) += v * 255;
    }
    bool fits16() const { return hi - lo <= 65535; }
};

// The exact forms in 16-bit lanes: separable (u8 padded rows, a 16-bit ring of row-pass sums, the column
// pass with the finish fused) or direct (the ring holds the padded u8 rows; one pass over the mask's
// non-zero taps). Integer masks of either sign: Sobel, Scharr, Laplacian, sharpen, emboss, boxes,
// binomials. The sums wrap modulo 2^16 and the range recovers them (simd::Taps16). A box column of
// at least running_rows rows keeps a running sum instead (add the entering ring row, subtract the
// leaving one), whatever its height.
constexpr int running_rows = 4;

template <bool kDirect>
struct Exact16 {
    static constexpr bool direct = kDirect;
    // u8 padded rows, each tap's load widened to 16 bits (widening the padded row once instead, so that
    // taps are plain loads, measured slower here: twice the bytes per row, and every horizontal tap a
    // load split across cache lines).
    using Pad = std::uint8_t;
    using Ring = std::conditional_t<kDirect, std::uint8_t, std::int16_t>;
    std::optional<WeightGroups> row, column;  // separable
    std::optional<WeightGroups> taps;         // direct: index j * mw + i
    int mw = 1;
    SumRange range;
    simd::IntFinish16 fin;
    bool fused = false, running = false;

    explicit Exact16(const LinearPlan& plan) : mw(plan.step.mask.width), range(plan.integer_mask) {
        if constexpr (kDirect) {
            taps.emplace(std::vector<std::int64_t>(plan.integer_mask.weights.begin(), plan.integer_mask.weights.end()));
        } else {
            row.emplace(plan.integer_separable->row);
            column.emplace(plan.integer_separable->column);
            bool ones = true;
            for (auto v : plan.integer_separable->column) ones = ones && v == 1;
            running = ones && plan.step.mask.height >= running_rows;
        }
        fused = simd::int_finish16(plan.finish, plan.out, range.lo, range.hi, fin);
        running = running && fused;
    }
    int extra_rows() const { return running ? 1 : 0; }  // the running sum subtracts the row before the window
    static Pad one(std::uint8_t s) { return s; }
    static void widen(const std::uint8_t* s, Pad* d, std::size_t k) { std::memcpy(d, s, k); }
    template <class P>
    void row_pass(const Pad* padded, Ring* out, std::size_t n, P& p, int channels) const {
        if constexpr (!kDirect) {
            p.ptrs.clear();
            for (std::size_t i : row->index) p.ptrs.push_back(padded + i * std::size_t(channels));
            simd::sum_taps16(true, row->taps(p.ptrs.data()), out, n);
        }
    }
    // rows: ring rows top - extra_rows() .. top + mh - 1; first: the band's first output row.
    template <class P>
    void column_pass(const LinearPlan& plan, const Ring* const* rows, bool first, std::byte* dst, std::size_t n,
                     bool stream, P& p, int channels) const {
        const std::size_t C = std::size_t(channels);
        const WeightGroups& g = kDirect ? *taps : *column;
        rows += extra_rows();
        if constexpr (!kDirect)
            if (running && !first)
                return simd::running_sum16_finish(p.sums16.get(row_stride<std::int16_t>(n)) + p.shift, rows[column->index.size() - 1],
                                                  rows[-1], fin, plan.out, dst, n, stream);
        p.ptrs.clear();
        for (std::size_t k : g.index) {
            if constexpr (kDirect) p.ptrs.push_back(rows[k / std::size_t(mw)] + (k % std::size_t(mw)) * C);
            else p.ptrs.push_back(rows[k]);
        }
        const simd::Taps16 t = g.taps(p.ptrs.data());
        std::int16_t* sums = p.sums16.get(row_stride<std::int16_t>(n)) + p.shift;
        if (fused) return simd::sum_taps16_finish(kDirect, t, fin, plan.out, dst, n, stream, running ? sums : nullptr);
        // Other finishes (f32 output, fractional scales): the exact sums as floats, then finish_exact_row.
        simd::sum_taps16(kDirect, t, sums, n);
        float* f = p.sums.get(row_stride<float>(n));
        simd::sums16_to_float(sums, std::int32_t(range.lo), f, n);
        simd::finish_exact_row(plan.out, f, dst, n, plan.finish, double(std::max(-range.lo, range.hi)), stream);
    }
};

// The float form in fixed point: Q7 padded rows and ring, Q15 factors, u8 out.
struct FixedQ15 {
    static constexpr bool direct = false;
    using Pad = std::int16_t;
    using Ring = std::int16_t;
    using Weight = std::int16_t;
    std::vector<Weight> row, column;
    double bound = 1;  // the error bound above; >= 0.49: not applicable

    static bool rational(const std::vector<double>& v) {
        double top = 0;
        for (double x : v) top = std::max(top, std::fabs(x));
        if (!(top > 0) || !std::isfinite(top)) return false;
        std::vector<double> scaled;
        for (double x : v) scaled.push_back(x / top);
        return integer_form(Mask(int(scaled.size()), 1, scaled)).has_value();
    }
    static std::vector<Weight> q15(const std::vector<double>& w) {
        std::vector<Weight> q;
        for (double v : w) q.push_back(Weight(std::lrint(std::clamp(v, -1.0, 32767.0 / 32768) * 32768)));
        return q;
    }
    FixedQ15(const LinearPlan& plan) {
        if (plan.exact || plan.in != PixelType::u8 || plan.out != PixelType::u8 || !plan.separable ||
            plan.algorithm != LinearAlgorithm::separable || plan.finish.add != 0)
            return;
        std::vector<double> r = plan.separable->row, c = plan.separable->column;
        // Factors proportional to small integers (a box or binomial at a scale the exact path cannot take,
        // such as weights of 2^40) are summed exactly by the f32 path, up to one rounding of the
        // multiplier; users see exact results there, so they keep that path.
        if (rational(r) && rational(c)) return;
        // The factorisation may put the whole scale on one side; balance it (sum |r| = 1), and fold the
        // finish's multiplier into the column.
        double sr = 0;
        for (double v : r) sr += std::fabs(v);
        if (!(sr > 0) || !std::isfinite(sr)) return;
        for (double& v : r) v /= sr;
        for (double& v : c) v *= sr * plan.finish.mul;
        for (double v : r) if (!(std::fabs(v) < 1)) return;
        for (double v : c) if (!(std::fabs(v) < 1)) return;
        row = q15(r);
        column = q15(c);
        double err_r = 0, sum_r = 0, err_c = 0, sum_c = 0, abs_c = 0;
        for (std::size_t i = 0; i < r.size(); ++i) {
            err_r += std::fabs(row[i] / 32768.0 - r[i]);
            sum_r += std::fabs(row[i] / 32768.0);
        }
        for (std::size_t j = 0; j < c.size(); ++j) {
            err_c += std::fabs(column[j] / 32768.0 - c[j]);
            sum_c += std::fabs(column[j] / 32768.0);
            abs_c += std::fabs(c[j]);
        }
        const double kr = double(r.size()), kc = double(c.size());
        const double e_row = 255 * err_r + kr / 256, m = 255 * sum_r + kr / 256;
        if (m * 128 >= 32767 || m * sum_c * 128 + kc / 2 >= 32767) return;
        bound = m * err_c + abs_c * e_row + kc / 256;
    }
    bool applies() const { return bound < 0.49; }
    static Pad one(std::uint8_t s) { return Pad(s << 7); }
    static void widen(const std::uint8_t* s, Pad* d, std::size_t k) { simd::widen_q7(s, d, k); }
    int extra_rows() const { return 0; }
    template <class P>
    void row_pass(const Pad* padded, Ring* out, std::size_t n, P& p, int) const {
        simd::sum_taps_q15(padded, p.offsets.data(), row.data(), row.size(), out, n);
    }
    template <class P>
    void column_pass(const LinearPlan&, const Ring* const* rows, bool, std::byte* dst, std::size_t n, bool stream, P&,
                     int) const {
        simd::sum_rows_q15(rows, column.data(), column.size(), reinterpret_cast<std::uint8_t*>(dst), n, stream);
    }
};

template <class T>
struct Participant {
    Scratch<typename T::Pad> padded;
    Scratch<typename T::Ring> ring;
    Scratch<float> sums;
    Scratch<std::int16_t> sums16;  // the 16-bit exact forms' sums (a box's running column sum)
    std::vector<const typename T::Ring*> rows, taps;
    std::vector<const void*> ptrs;
    std::vector<std::size_t> offsets;  // i * channels, i < mw
    // Elements by which the 16-bit ring rows and sums of a separable form start past their cache line:
    // the kernels align their vectors to the output row's cache lines (simd_small_int.cpp, HeadSamples),
    // and this puts the rows they read from on the same boundaries (< 32: inside row_stride's slack).
    std::size_t shift = 0;
};

// Small 2-D float masks on u8 (direct): the ring holds padded Q7 rows, and each output row is one pass
// of rounded products over the mask's non-zero taps (tap (i, j): ring row j at offset i * channels).
// Bound as for the separable form with one level: |a - v| <= 255 sum |W_ij / 2^15 - m_ij| + k 2^-8
// for k taps (one rounding per product); i16 holds every partial sum when 255 sum |W| / 2^15 + k 2^-8
// stays below 32767 / 128.
struct DirectQ15 {
    static constexpr bool direct = true;
    using Pad = std::int16_t;
    using Ring = std::int16_t;
    std::vector<std::int16_t> w;
    std::vector<int> tap_row, tap_col;
    double bound = 1;

    explicit DirectQ15(const LinearPlan& plan) {
        if (plan.exact || plan.in != PixelType::u8 || plan.out != PixelType::u8 ||
            plan.algorithm != LinearAlgorithm::direct || plan.finish.add != 0)
            return;
        const Mask& m = plan.step.mask;
        // At most 7 x 7 (the bound grows with the taps; larger masks stay on the f32 path).
        if (m.width * m.height > 49) return;
        std::vector<double> v;
        for (int j = 0; j < m.height; ++j)
            for (int i = 0; i < m.width; ++i) v.push_back(m.at(i, j) * plan.finish.mul);
        if (FixedQ15::rational(v)) return;
        double err = 0, sum = 0, k = 0;
        for (int j = 0; j < m.height; ++j)
            for (int i = 0; i < m.width; ++i) {
                const double x = v[std::size_t(j * m.width + i)];
                if (!(std::fabs(x) < 1)) return;
                const auto q = std::int16_t(std::lrint(std::clamp(x, -1.0, 32767.0 / 32768) * 32768));
                err += std::fabs(q / 32768.0 - x);
                if (q == 0) continue;  // a dropped weight's whole value is in err
                w.push_back(q);
                tap_row.push_back(j);
                tap_col.push_back(i);
                sum += std::fabs(q / 32768.0);
                k += 1;
            }
        if ((255 * sum + k / 256) * 128 >= 32767) return;
        bound = 255 * err + k / 256;
    }
    bool applies() const { return bound < 0.49; }
    static Pad one(std::uint8_t s) { return Pad(s << 7); }
    static void widen(const std::uint8_t* s, Pad* d, std::size_t k) { simd::widen_q7(s, d, k); }
    int extra_rows() const { return 0; }
    template <class P>
    void row_pass(const Pad*, Ring*, std::size_t, P&, int) const {}
    void column_pass(const LinearPlan&, const Ring* const* rows, bool, std::byte* dst, std::size_t n, bool stream,
                     Participant<DirectQ15>& p, int channels) const {
        p.taps.clear();
        for (std::size_t t = 0; t < w.size(); ++t)
            p.taps.push_back(rows[tap_row[t]] + std::size_t(tap_col[t]) * std::size_t(channels));
        simd::sum_rows_q15(p.taps.data(), w.data(), w.size(), reinterpret_cast<std::uint8_t*>(dst), n, stream);
    }
};

template <class Arith>
class Separable8BitJob {
public:
    Separable8BitJob(const LinearPlan& plan, const Arith& arith, ConstImageView in, ImageView out, int participants)
        : plan_(plan), arith_(arith), in_(in), out_(out), W_(in.width()), H_(in.height()), C_(in.channels()),
          mw_(plan.step.mask.width), mh_(plan.step.mask.height), ax_(plan.step.mask.anchor_x),
          ay_(plan.step.mask.anchor_y), cols_(W_, -ax_, W_ + mw_ - 1, plan.step.border),
          fill_(Arith::one(store_pixel<std::uint8_t>(plan.step.border_value))), parts_(std::size_t(participants)) {
        stream_ = std::size_t(W_) * std::size_t(H_) * std::size_t(C_) * bytes_per_sample(plan.out) >= stream_bytes;
        ring_rows_ = mh_ + arith.extra_rows();
        // Rows in flight per output column: the ring rows, the padded row, f32 sums.
        const std::size_t bytes = (std::size_t(ring_rows_) * sizeof(typename Arith::Ring) + sizeof(typename Arith::Pad) + 4) * std::size_t(C_);
        tiling_ = Tiling(W_, H_, participants, bytes, mw_ - 1, std::max(8, 2 * mh_));
    }

    int tasks() const { return tiling_.tasks(); }

    void run(int task, int who) {
        int x0, x1, y0, y1;
        tiling_.cell(task, W_, H_, x0, x1, y0, y1);
        Participant<Arith>& p = parts_[std::size_t(who)];
        const std::size_t C = std::size_t(C_), n = std::size_t(x1 - x0) * C;
        const std::size_t padded_n = std::size_t(x1 - x0 + mw_ - 1) * C;
        const std::size_t stride = row_stride<typename Arith::Ring>(Arith::direct ? padded_n : n);
        auto* padded = Arith::direct ? nullptr : p.padded.get(row_stride<typename Arith::Pad>(padded_n));
        auto* ring = p.ring.get(stride * std::size_t(ring_rows_));
        if (p.offsets.size() != std::size_t(mw_))
            for (int i = int(p.offsets.size()); i < mw_; ++i) p.offsets.push_back(std::size_t(i) * C);
        const long long vbase = (long long)y0 - ay_;
        const std::size_t out_offset = std::size_t(x0) * C * bytes_per_sample(plan_.out);
        p.shift = 0;
        if constexpr (!Arith::direct && sizeof(typename Arith::Ring) == 2) {
            const std::size_t bytes = (64 - reinterpret_cast<std::uintptr_t>(out_.row_bytes(y0) + out_offset) % 64) % 64;
            if (bytes % bytes_per_sample(plan_.out) == 0) p.shift = (32 - bytes / bytes_per_sample(plan_.out) % 32) % 32;
        }
        auto slot = [&](long long v) {
            return ring + std::size_t((v - vbase + ring_rows_) % ring_rows_) * stride + p.shift;
        };
        long long loaded = vbase;
        for (int y = y0; y < y1; ++y) {
            const long long top = (long long)y - ay_;
            for (; loaded <= top + mh_ - 1; ++loaded) {
                const int r = map_index(loaded, H_, plan_.step.border);
                typename Arith::Pad* target = padded;
                if constexpr (Arith::direct) target = slot(loaded);  // the ring holds the padded rows
                build_padded_row(r < 0 ? nullptr : in_.row<std::uint8_t>(r), cols_, x0, x1 + mw_ - 1, C_, fill_, target,
                                 [](const std::uint8_t* s, typename Arith::Pad* d, std::size_t k) { Arith::widen(s, d, k); },
                                 [](std::uint8_t s) { return Arith::one(s); });
                if constexpr (!Arith::direct) arith_.row_pass(padded, slot(loaded), n, p, C_);
            }
            p.rows.clear();
            for (int j = -arith_.extra_rows(); j < mh_; ++j) p.rows.push_back(slot(top + j));
            arith_.column_pass(plan_, p.rows.data(), y == y0, out_.row_bytes(y) + out_offset, n, stream_, p, C_);
        }
        if (stream_) simd::flush_streams();
    }

private:
    const LinearPlan& plan_;
    const Arith& arith_;
    ConstImageView in_;
    ImageView out_;
    int W_, H_, C_, mw_, mh_, ax_, ay_, ring_rows_ = 1;
    ColumnMap cols_;
    typename Arith::Pad fill_;
    bool stream_ = false;
    Tiling tiling_{1, 1, 1, 1, 0, 1};
    std::vector<Participant<Arith>> parts_;
};

// The in-place input rows come from memory: each block prefetches this far ahead (4096^2 RGB, one
// thread: 7.2 ms without, 6.3 at 512 bytes, 5.5 at 1024, 4.9 at 2048 to 8192).
constexpr std::size_t prefetch_bytes = 4096;
// Outputs from half the usual size are streamed: the sweep writes each output row once and reads the
// input once, so caching the output only evicts input (4096^2 gray, one thread: 1.95 -> 1.6 ms).
constexpr std::size_t box_stream_bytes = stream_bytes / 2;

// Boxes on u8 into u8 (every weight 1, the fused integer finish): the row pass and the running column
// sum in one sweep per output row (simd::box16_running), two samples a 16-bit lane so that no tap needs
// a widening shuffle (simd_small_int.cpp). Interior input rows are read in place; only the blocks whose
// taps reach past the image's edge (or a row wholly outside) read small padded copies.
struct Box16Scratch {
    Scratch<std::int16_t> ring, sums;
    Scratch<std::uint8_t> head, tail;
    std::vector<const std::int16_t*> rows;
};

bool box16_applies(const LinearPlan& plan, simd::IntFinish16& fin) {
    if (plan.out != PixelType::u8 || !plan.integer_separable) return false;
    for (auto v : plan.integer_separable->row) if (v != 1) return false;
    for (auto v : plan.integer_separable->column) if (v != 1) return false;
    const SumRange range(plan.integer_mask);
    return simd::int_finish16(plan.finish, plan.out, range.lo, range.hi, fin);
}

class Box16Job {
public:
    Box16Job(const LinearPlan& plan, const simd::IntFinish16& fin, ConstImageView in, ImageView out, int participants)
        : plan_(plan), fin_(fin), in_(in), out_(out), W_(in.width()), H_(in.height()), C_(in.channels()),
          mw_(plan.step.mask.width), mh_(plan.step.mask.height), ax_(plan.step.mask.anchor_x), ay_(plan.step.mask.anchor_y),
          cols_(W_, -ax_, W_ + mw_ - 1, plan.step.border), fill_(store_pixel<std::uint8_t>(plan.step.border_value)),
          B_(simd::box16_block()), parts_(std::size_t(participants)) {
        stream_ = std::size_t(W_) * std::size_t(H_) * std::size_t(C_) >= box_stream_bytes;
        // Rows in flight per output column: mh + 1 ring rows and the sums, 16-bit.
        tiling_ = Tiling(W_, H_, participants, std::size_t(2 * (mh_ + 2)) * std::size_t(C_), mw_ - 1, std::max(8, 2 * mh_));
    }
    int tasks() const { return tiling_.tasks(); }

    void run(int task, int who) {
        int x0, x1, y0, y1;
        tiling_.cell(task, W_, H_, x0, x1, y0, y1);
        Box16Scratch& p = parts_[std::size_t(who)];
        const std::size_t C = std::size_t(C_), B = B_;
        const std::ptrdiff_t n = std::ptrdiff_t(std::size_t(x1 - x0) * C);
        const int pixels = x1 - x0 + mw_ - 1;  // padded pixels of the strip
        const std::ptrdiff_t padded_n = std::ptrdiff_t(std::size_t(pixels) * C);
        std::uint8_t* const dst0 = reinterpret_cast<std::uint8_t*>(out_.row_bytes(y0)) + std::size_t(x0) * C;
        // Blocks start where the first output row's vectors are aligned.
        const std::size_t lead = (B - reinterpret_cast<std::uintptr_t>(dst0) % B) % B;
        simd::Box16Row r;
        r.taps = std::size_t(mw_);
        r.step = C;
        r.n = std::size_t(n);
        r.prefetch = prefetch_bytes;
        r.s0 = lead ? std::ptrdiff_t(lead) - std::ptrdiff_t(B) : 0;
        const std::size_t blocks = (std::size_t(n - r.s0) + B - 1) / B;
        const std::size_t stride = row_stride<std::int16_t>(blocks * B);
        const int R = mh_ + 1;
        std::int16_t* ring = p.ring.get(stride * std::size_t(R));
        std::int16_t* sums = p.sums.get(stride);
        // Segments: blocks whose u8 reads [s, s + reach) lie inside the image read the row in place; those
        // before them the head copy (padded pixels from 0, B bytes of room before), those after the tail
        // copy (padded pixels from tp).
        const std::ptrdiff_t reach = std::ptrdiff_t(B + std::size_t(mw_ - 1) * C);
        const std::ptrdiff_t a = std::ptrdiff_t(std::clamp(cols_.inside_begin - x0, 0, pixels)) * std::ptrdiff_t(C);
        const std::ptrdiff_t b = std::ptrdiff_t(std::clamp(cols_.inside_end - x0, 0, pixels)) * std::ptrdiff_t(C);
        auto block_at = [&](std::size_t k) { return r.s0 + std::ptrdiff_t(k * B); };
        std::size_t k1 = 0;
        while (k1 < blocks && block_at(k1) < a) ++k1;
        std::size_t k2 = k1;
        while (k2 < blocks && block_at(k2) + reach <= b) ++k2;
        const bool in_place = k2 > k1;
        // Head: pixels [0, hp); tail: pixels [tp, pixels).
        const int hp = in_place ? std::min<int>(pixels, int((block_at(k1) - std::ptrdiff_t(B) + reach + std::ptrdiff_t(C) - 1) / std::ptrdiff_t(C)))
                                : pixels;
        const int tp = in_place ? int(block_at(k2) / std::ptrdiff_t(C)) : pixels;
        std::uint8_t* head = p.head.get(std::size_t(padded_n) + 3 * B + 64) + B;
        std::uint8_t* tail = p.tail.get(std::size_t(padded_n - std::ptrdiff_t(tp) * std::ptrdiff_t(C)) + 3 * B + 64);
        simd::Box16Source seg[3];
        const auto bulk = [](const std::uint8_t* s, std::uint8_t* d, std::size_t k) { std::memcpy(d, s, k); };
        const auto one = [](std::uint8_t s) { return s; };
        auto load = [&](long long v, std::int16_t* target, std::int16_t* sub, std::uint8_t* dst) {
            const int row = map_index(v, H_, plan_.step.border);
            const std::uint8_t* src = row < 0 ? nullptr : in_.row<std::uint8_t>(row);
            std::size_t count = 0;
            if (src && in_place) {
                build_padded_row(src, cols_, x0, x0 + hp, C_, fill_, head, bulk, one);
                build_padded_row(src, cols_, x0 + tp, x0 + pixels, C_, fill_, tail, bulk, one);
                // Padded sample s of the strip is image sample (x0 - ax) C + s.
                const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(src) + std::uintptr_t(std::ptrdiff_t(x0 - ax_) * std::ptrdiff_t(C));
                seg[count++] = {head, block_at(k1)};
                seg[count++] = {reinterpret_cast<const std::uint8_t*>(at), block_at(k2)};
                seg[count++] = {reinterpret_cast<const std::uint8_t*>(reinterpret_cast<std::uintptr_t>(tail) -
                                                                    std::uintptr_t(tp) * C), std::numeric_limits<std::ptrdiff_t>::max()};
            } else {
                build_padded_row(src, cols_, x0, x0 + pixels, C_, fill_, head, bulk, one);
                seg[count++] = {head, std::numeric_limits<std::ptrdiff_t>::max()};
            }
            r.src = seg;
            if (dst) simd::box16_running(r, target, sub, sums, fin_, dst, stream_);
            else simd::box16_rows(r, target);
        };
        const long long vbase = (long long)y0 - ay_;
        auto slot = [&](long long v) { return ring + std::size_t((v - vbase + R) % R) * stride; };
        for (int y = y0; y < y1; ++y) {
            const long long top = (long long)y - ay_;
            std::uint8_t* dst = reinterpret_cast<std::uint8_t*>(out_.row_bytes(y)) + std::size_t(x0) * C;
            if (y == y0) {
                p.rows.clear();
                for (int j = 0; j < mh_; ++j) {
                    load(top + j, slot(top + j), nullptr, nullptr);
                    p.rows.push_back(slot(top + j));
                }
                simd::box16_first(r, p.rows.data(), p.rows.size(), sums, fin_, dst, stream_);
            } else {
                load(top + mh_ - 1, slot(top + mh_ - 1), slot(top - 1), dst);
            }
        }
        if (stream_) simd::flush_streams();
    }

private:
    const LinearPlan& plan_;
    simd::IntFinish16 fin_;
    ConstImageView in_;
    ImageView out_;
    int W_, H_, C_, mw_, mh_, ax_, ay_;
    ColumnMap cols_;
    std::uint8_t fill_;
    std::size_t B_;
    bool stream_ = false;
    Tiling tiling_{1, 1, 1, 1, 0, 1};
    std::vector<Box16Scratch> parts_;
};

template <class Arith>
void run_job(ThreadPool& pool, const LinearPlan& plan, const Arith& arith, ConstImageView in, ImageView out) {
    Separable8BitJob<Arith> job(plan, arith, in, out, pool.size());
    pool.run(job.tasks(), [&](int task, int who) { job.run(task, who); });
}

// Which exact 16-bit form runs the plan: u8 in, an exact plan whose sum range fits 16 bits; separable
// where the plan is, else direct.
enum class Exact16Form { none, separable, direct };
Exact16Form exact16_form(const LinearPlan& plan) {
    if (!plan.exact || plan.in != PixelType::u8 || !SumRange(plan.integer_mask).fits16()) return Exact16Form::none;
    if (plan.algorithm == LinearAlgorithm::separable && plan.integer_separable) return Exact16Form::separable;
    if (plan.algorithm == LinearAlgorithm::direct) return Exact16Form::direct;
    return Exact16Form::none;
}

} // namespace

bool small_int_separable_applies(const LinearPlan& plan) { return exact16_form(plan) != Exact16Form::none; }

double fixed_point_separable_bound(const LinearPlan& plan) { return FixedQ15(plan).bound; }

double fixed_point_direct_bound(const LinearPlan& plan) { return DirectQ15(plan).bound; }

const char* arithmetic_8bit(const LinearPlan& plan) {
    // The direct exact form keeps the plain "cpu.direct" name for now (tests/test_plan_kernels.cpp).
    if (exact16_form(plan) == Exact16Form::separable) return "int16";
    if (plan.exact || plan.in != PixelType::u8) return nullptr;
    if (plan.algorithm == LinearAlgorithm::direct) return DirectQ15(plan).applies() ? "q15" : nullptr;
    return FixedQ15(plan).applies() ? "q15" : nullptr;
}

bool run_separable_8bit(ThreadPool& pool, const LinearPlan& plan, ConstImageView in, ImageView out) {
    switch (exact16_form(plan)) {
    case Exact16Form::separable: {
        simd::IntFinish16 fin;
        if (box16_applies(plan, fin)) {
            Box16Job job(plan, fin, in, out, pool.size());
            pool.run(job.tasks(), [&](int task, int who) { job.run(task, who); });
        } else {
            run_job(pool, plan, Exact16<false>(plan), in, out);
        }
        return true;
    }
    case Exact16Form::direct: run_job(pool, plan, Exact16<true>(plan), in, out); return true;
    default: break;
    }
    if (plan.exact || plan.in != PixelType::u8) return false;
    if (plan.algorithm == LinearAlgorithm::direct) {
        const DirectQ15 d(plan);
        if (!d.applies()) return false;
        run_job(pool, plan, d, in, out);
        return true;
    }
    const FixedQ15 q(plan);
    if (!q.applies()) return false;
    run_job(pool, plan, q, in, out);
    return true;
}

} // namespace apron::cpu
