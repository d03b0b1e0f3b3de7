// Paths for 8-bit images in 16-bit lanes (twice the samples per vector of the f32 path, and no widened
// f32 row). The separable forms read the padded row of each input row once into a ring of row-pass
// results and finish straight out of the column pass; the direct form (DirectQ15, small float masks)
// keeps the padded rows themselves in the ring. 2048^2 RGB on 2 cores, CPU time: box 5x5 8.2 -> 6.2 ms,
// Gaussian sigma 2 13.9 -> 8.1 ms, correlate 3x3 6.8 -> 3.5 ms (docs/perf-notes.md).
//
// exact (box, binomial): small non-negative integer factors, summed in u16. Applies when every factor
// is >= 0 and 255 * sum(row) * sum(column) < 2^16: every partial sum is then below 2^16 (sums of
// non-negative terms only grow towards the total), so the lanes hold the exact integers the reference
// forms in int64, and the exact finish (simd_small_int.cpp) gives the reference's bits.
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
#include <vector>

#include "apron/mask.hpp"
#include "core/pixel.hpp"
#include "cpu/fast_executor.hpp"
#include "cpu/fast_rows.hpp"
#include "cpu/simd_kernels.hpp"

namespace apron::cpu {
namespace {

// The exact form: u8 padded rows, u16 ring, the exact finish.
struct ExactU16 {
    static constexpr bool direct = false;  // a row pass fills the ring
    using Pad = std::uint8_t;
    using Ring = std::uint16_t;
    using Weight = std::uint16_t;
    std::vector<Weight> row, column;
    double bound = 0;
    bool fused = false;

    ExactU16(const LinearPlan& plan) {
        for (auto v : plan.integer_separable->row) row.push_back(Weight(v));
        for (auto v : plan.integer_separable->column) column.push_back(Weight(v));
        bound = double(plan.integer_mask.abs_sum) * 255;
        fused = simd::u16_finish_fuses(plan.out, plan.finish, bound);
    }
    static Pad one(std::uint8_t s) { return s; }
    static void widen(const std::uint8_t* s, Pad* d, std::size_t k) { std::memcpy(d, s, k); }
    void row_pass(const Pad* padded, const std::size_t* offsets, Ring* out, std::size_t n) const {
        simd::sum_taps_u8(padded, offsets, row.data(), row.size(), out, n);
    }
    template <class P>
    void column_pass(const LinearPlan& plan, const Ring* const* rows, std::byte* dst, std::size_t n, bool stream,
                     P& p, int) const {
        if (fused) return simd::sum_rows_u16_finish(rows, column.data(), column.size(), plan.out, dst, n, plan.finish, stream);
        float* s = p.sums.get(row_stride<float>(n));
        simd::sum_rows_u16(rows, column.data(), column.size(), s, n);
        simd::finish_exact_row(plan.out, s, dst, n, plan.finish, bound, stream);
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
    void row_pass(const Pad* padded, const std::size_t* offsets, Ring* out, std::size_t n) const {
        simd::sum_taps_q15(padded, offsets, row.data(), row.size(), out, n);
    }
    template <class P>
    void column_pass(const LinearPlan&, const Ring* const* rows, std::byte* dst, std::size_t n, bool stream, P&,
                     int) const {
        simd::sum_rows_q15(rows, column.data(), column.size(), reinterpret_cast<std::uint8_t*>(dst), n, stream);
    }
};

template <class T>
struct Participant {
    Scratch<typename T::Pad> padded;
    Scratch<typename T::Ring> ring;
    Scratch<float> sums;
    std::vector<const typename T::Ring*> rows, taps;
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
    void row_pass(const Pad*, const std::size_t*, Ring*, std::size_t) const {}
    void column_pass(const LinearPlan&, const Ring* const* rows, std::byte* dst, std::size_t n, bool stream,
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
        for (int i = 0; i < mw_; ++i) offsets_.push_back(std::size_t(i) * std::size_t(C_));
        stream_ = std::size_t(W_) * std::size_t(H_) * std::size_t(C_) * bytes_per_sample(plan.out) >= stream_bytes;
        // Rows in flight per output column: mh ring rows, the padded row, f32 sums.
        const std::size_t bytes = (std::size_t(mh_) * sizeof(typename Arith::Ring) + sizeof(typename Arith::Pad) + 4) * std::size_t(C_);
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
        auto* ring = p.ring.get(stride * std::size_t(mh_));
        const long long vbase = (long long)y0 - ay_;
        auto slot = [&](long long v) { return ring + std::size_t((v - vbase) % mh_) * stride; };
        const std::size_t out_offset = std::size_t(x0) * C * bytes_per_sample(plan_.out);
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
                if constexpr (!Arith::direct) arith_.row_pass(padded, offsets_.data(), slot(loaded), n);
            }
            p.rows.clear();
            for (int j = 0; j < mh_; ++j) p.rows.push_back(slot(top + j));
            arith_.column_pass(plan_, p.rows.data(), out_.row_bytes(y) + out_offset, n, stream_, p, C_);
        }
        if (stream_) simd::flush_streams();
    }

private:
    const LinearPlan& plan_;
    const Arith& arith_;
    ConstImageView in_;
    ImageView out_;
    int W_, H_, C_, mw_, mh_, ax_, ay_;
    ColumnMap cols_;
    typename Arith::Pad fill_;
    std::vector<std::size_t> offsets_;
    bool stream_ = false;
    Tiling tiling_{1, 1, 1, 1, 0, 1};
    std::vector<Participant<Arith>> parts_;
};

template <class Arith>
void run_job(ThreadPool& pool, const LinearPlan& plan, const Arith& arith, ConstImageView in, ImageView out) {
    Separable8BitJob<Arith> job(plan, arith, in, out, pool.size());
    pool.run(job.tasks(), [&](int task, int who) { job.run(task, who); });
}

bool exact_u16_applies(const LinearPlan& plan) {
    if (!plan.exact || plan.in != PixelType::u8 || plan.algorithm != LinearAlgorithm::separable || !plan.integer_separable)
        return false;
    long long row = 0, column = 0;
    for (auto v : plan.integer_separable->row) {
        if (v < 0 || v > 255) return false;
        row += v;
    }
    for (auto v : plan.integer_separable->column) {
        if (v < 0 || v > 255) return false;
        column += v;
    }
    return 255 * row * column < 65536;
}

} // namespace

bool small_int_separable_applies(const LinearPlan& plan) { return exact_u16_applies(plan); }

double fixed_point_separable_bound(const LinearPlan& plan) { return FixedQ15(plan).bound; }

double fixed_point_direct_bound(const LinearPlan& plan) { return DirectQ15(plan).bound; }

const char* arithmetic_8bit(const LinearPlan& plan) {
    if (exact_u16_applies(plan)) return "int16";
    if (plan.exact || plan.in != PixelType::u8) return nullptr;
    if (plan.algorithm == LinearAlgorithm::direct) return DirectQ15(plan).applies() ? "q15" : nullptr;
    return FixedQ15(plan).applies() ? "q15" : nullptr;
}

bool run_separable_8bit(ThreadPool& pool, const LinearPlan& plan, ConstImageView in, ImageView out) {
    if (exact_u16_applies(plan)) {
        run_job(pool, plan, ExactU16(plan), in, out);
        return true;
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
