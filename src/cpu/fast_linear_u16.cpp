// The exact separable path for 8-bit images with small non-negative integer factors (box, binomial):
// the row pass reads the padded u8 row straight into u16 lanes (no widened f32 row), the column pass
// sums u16 rows in lanes of f32's width, and the sums (exact integers below 2^16) go through the
// exact finish. Twice the samples per vector of the f32 path's two passes, and no widening pass:
// box 5x5 on 2048^2 RGB, 2 threads of the EPYC VM, CPU time 8.2 -> see docs/perf-notes.md.
//
// Applies when every row and column factor is >= 0 and 255 * sum(row) * sum(column) < 2^16: every
// partial sum is then below 2^16 (products and sums of non-negative terms only grow towards the
// total), so u16 lanes hold the exact sums the reference forms in int64.
#include <cstdint>
#include <vector>

#include "core/pixel.hpp"
#include "cpu/fast_executor.hpp"
#include "cpu/fast_rows.hpp"
#include "cpu/simd_kernels.hpp"

namespace apron::cpu {
namespace {

struct Participant {
    Scratch<std::uint8_t> padded;
    Scratch<std::uint16_t> ring;
    Scratch<float> sums;
    std::vector<const std::uint16_t*> rows;
};

class SmallIntSeparableJob {
public:
    SmallIntSeparableJob(const LinearPlan& plan, ConstImageView in, ImageView out, int participants)
        : plan_(plan), in_(in), out_(out), W_(in.width()), H_(in.height()), C_(in.channels()),
          mw_(plan.step.mask.width), mh_(plan.step.mask.height), ax_(plan.step.mask.anchor_x),
          ay_(plan.step.mask.anchor_y), cols_(W_, -ax_, W_ + mw_ - 1, plan.step.border),
          fill_(store_pixel<std::uint8_t>(plan.step.border_value)), parts_(std::size_t(participants)) {
        for (auto v : plan.integer_separable->row) row_.push_back(std::uint16_t(v));
        for (auto v : plan.integer_separable->column) column_.push_back(std::uint16_t(v));
        for (int i = 0; i < mw_; ++i) offsets_.push_back(std::size_t(i) * std::size_t(C_));
        bound_ = double(plan.integer_mask.abs_sum) * 255;
        fused_ = simd::u16_finish_fuses(plan.out, plan.finish, bound_);
        stream_ = std::size_t(W_) * std::size_t(H_) * std::size_t(C_) * bytes_per_sample(plan.out) >= stream_bytes;
        // Rows in flight per output column: mh u16 ring rows, the padded u8 row, the f32 sums.
        const std::size_t bytes = (std::size_t(mh_) * 2 + 1 + 4) * std::size_t(C_);
        tiling_ = Tiling(W_, H_, participants, bytes, mw_ - 1, std::max(8, 2 * mh_));
    }

    int tasks() const { return tiling_.tasks(); }

    void run(int task, int who) {
        int x0, x1, y0, y1;
        tiling_.cell(task, W_, H_, x0, x1, y0, y1);
        Participant& p = parts_[std::size_t(who)];
        const std::size_t C = std::size_t(C_), n = std::size_t(x1 - x0) * C;
        const std::size_t stride = row_stride<std::uint16_t>(n);
        std::uint8_t* padded = p.padded.get(row_stride<std::uint8_t>(std::size_t(x1 - x0 + mw_ - 1) * C));
        std::uint16_t* ring = p.ring.get(stride * std::size_t(mh_));
        float* sums = p.sums.get(row_stride<float>(n));
        const long long vbase = (long long)y0 - ay_;
        auto slot = [&](long long v) { return ring + std::size_t((v - vbase) % mh_) * stride; };
        const std::size_t out_offset = std::size_t(x0) * C * bytes_per_sample(plan_.out);
        long long loaded = vbase;
        for (int y = y0; y < y1; ++y) {
            const long long top = (long long)y - ay_;
            for (; loaded <= top + mh_ - 1; ++loaded) {
                const int r = map_index(loaded, H_, plan_.step.border);
                build_padded_row(r < 0 ? nullptr : in_.row<std::uint8_t>(r), cols_, x0, x1 + mw_ - 1, C_, fill_, padded,
                                 [](const std::uint8_t* s, std::uint8_t* d, std::size_t k) { std::memcpy(d, s, k); },
                                 [](std::uint8_t s) { return s; });
                simd::sum_taps_u8(padded, offsets_.data(), row_.data(), offsets_.size(), slot(loaded), n);
            }
            p.rows.clear();
            for (int j = 0; j < mh_; ++j) p.rows.push_back(slot(top + j));
            std::byte* dst = out_.row_bytes(y) + out_offset;
            if (fused_) {
                simd::sum_rows_u16_finish(p.rows.data(), column_.data(), column_.size(), plan_.out, dst, n, plan_.finish, stream_);
            } else {
                simd::sum_rows_u16(p.rows.data(), column_.data(), column_.size(), sums, n);
                simd::finish_exact_row(plan_.out, sums, dst, n, plan_.finish, bound_, stream_);
            }
        }
        if (stream_) simd::flush_streams();
    }

private:
    const LinearPlan& plan_;
    ConstImageView in_;
    ImageView out_;
    int W_, H_, C_, mw_, mh_, ax_, ay_;
    ColumnMap cols_;
    std::uint8_t fill_;
    std::vector<std::uint16_t> row_, column_;
    std::vector<std::size_t> offsets_;
    double bound_ = 0;
    bool stream_ = false, fused_ = false;
    Tiling tiling_{1, 1, 1, 1, 0, 1};
    std::vector<Participant> parts_;
};

} // namespace

bool small_int_separable_applies(const LinearPlan& plan) {
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

void run_small_int_separable(ThreadPool& pool, const LinearPlan& plan, ConstImageView in, ImageView out) {
    SmallIntSeparableJob job(plan, in, out, pool.size());
    pool.run(job.tasks(), [&](int task, int who) { job.run(task, who); });
}

} // namespace apron::cpu
