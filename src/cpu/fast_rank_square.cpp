// Full k x k rank windows with a compiled selection (3 x 3, 5 x 5, the 7 x 7 median): `cpu.rank_network`
// with detail "kxk". Each task (a strip of columns x a band of rows) goes in chunks of output rows; a chunk
// is one sweep of simd_rank_square-inl.h down each vector of columns, the values in registers and each output
// written once.
//
// u8 and u16 rows are read in place where the windows lie inside the image (the middle of a row); the few
// outputs at each end read small padded copies of the rows' ends, made through the border (map_index).
// f32 rows become padded rows of order keys first (core/rank_value.hpp), with a note of which hold a NaN:
// outputs whose window meets one are selected again by rank_among (fast_rank_rows.hpp).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "cpu/fast_rank.hpp"
#include "cpu/fast_rank_rows.hpp"

namespace apron::cpu {
namespace {

// Output rows per sweep. A sweep reads the first k - 1 rows of its window before its first output, so
// longer sweeps cost fewer row sorts; but it goes down columns, and a column of more than a few rows is more
// streams than the hardware prefetchers follow (4096^2 u8, one thread of the 2-core VM, 8 / 16 / 48 rows:
// 3 x 3 1.31 / 1.90 / 3.0 ms, 5 x 5 2.99 / 2.69 / 2.75, 7 x 7 5.96 / 5.38 / 5.73).
int chunk_rows(int k) { return k == 3 ? 8 : 16; }
static_assert(16 <= simd::rank_sweep_rows);

template <class T>
struct SquareParticipant {
    using K = RankKey<T>;
    Scratch<K> rows;   // the chunk's padded rows (f32) or their two ends (u8, u16), and a row of the fill
    std::vector<char> missing;
    std::vector<const void*> pointers;
    std::vector<std::uint32_t> keys;
};

template <class T>
class SquareJob {
    using K = RankKey<T>;
    static constexpr bool kFloat = std::is_same_v<T, float>;

public:
    SquareJob(const RankPlan& plan, ConstImageView in, ImageView out, int participants)
        : plan_(plan), in_(in), out_(out), W_(in.width()), H_(in.height()), C_(in.channels()), k_(plan.step.element.width),
          ax_(plan.step.element.anchor_x), ay_(plan.step.element.anchor_y), cols_(W_, -ax_, W_ + k_ - 1, plan.step.border),
          parts_(std::size_t(participants)) {
        fill_ = rank_key_of(store_pixel<T>(plan.step.border_value));
        for (int j = 0; j < k_; ++j)
            for (int i = 0; i < k_; ++i) cells_.push_back(RankCell{i, j});
        // Strips narrow enough that a chunk's rows stay in L2 while the sweeps go down them.
        const std::size_t per_column = std::size_t(chunk_rows(k_) + k_) * std::size_t(C_) * sizeof(K) * 4;
        tiling_ = Tiling(W_, H_, participants, per_column, k_ - 1, std::max(8, 2 * k_));
    }

    int tasks() const { return tiling_.tasks(); }

    void run(int task, int who) {
        int x0, x1, y0, y1;
        tiling_.cell(task, W_, H_, x0, x1, y0, y1);
        int a, b;  // outputs read in place
        if constexpr (kFloat) {
            a = b = x1;
        } else {
            in_place_outputs(x0, x1, W_, k_, ax_, C_, a, b);
        }
        const int chunk = chunk_rows(k_);
        for (int c0 = y0; c0 < y1; c0 += chunk) run_chunk(parts_[std::size_t(who)], x0, x1, a, b, c0, std::min(y1, c0 + chunk));
    }

private:
    // Output rows [y0, y1) of outputs [x0, x1); [a, b) read the image in place (a = b = x1: none).
    void run_chunk(SquareParticipant<T>& p, int x0, int x1, int a, int b, int y0, int y1) {
        const std::size_t C = std::size_t(C_);
        const int rows = y1 - y0 + k_ - 1;
        const long long top = (long long)y0 - ay_;
        // Padded pixels the ring copies hold: all of [x0, x1 + k - 1) without a middle, else its two ends.
        const int left_end = a == b ? x1 + k_ - 1 : std::min(x1 + k_ - 1, a + k_ - 1);
        const int right_begin = a == b ? x1 + k_ - 1 : b;
        const std::size_t left_stride = rank_row_stride<K>(std::size_t(left_end - x0) * C);
        const std::size_t right_stride = rank_row_stride<K>(std::size_t(x1 + k_ - 1 - right_begin) * C);
        const std::size_t fill_stride = a == b ? 0 : rank_row_stride<K>(std::size_t(b - a + k_ - 1) * C);
        K* mem = p.rows.get(std::size_t(rows) * (left_stride + right_stride) + fill_stride);
        K* left = mem;
        K* right = mem + std::size_t(rows) * left_stride;
        K* fill_row = right + std::size_t(rows) * right_stride;
        if (fill_stride) std::fill(fill_row, fill_row + fill_stride, fill_);
        p.missing.assign(std::size_t(rows), 0);
        for (int i = 0; i < rows; ++i) {
            const int r = map_index(top + i, H_, plan_.step.border);
            const T* src = r < 0 ? nullptr : in_.row<T>(r);
            bool missing = load_padded_keys<T>(src, cols_, x0, left_end, C_, fill_, left + std::size_t(i) * left_stride);
            missing = load_padded_keys<T>(src, cols_, right_begin, x1 + k_ - 1, C_, fill_, right + std::size_t(i) * right_stride) || missing;
            p.missing[std::size_t(i)] = missing;
        }
        auto sweep = [&](int o0, int o1, auto&& row_pointer) {
            if (o1 <= o0) return;
            p.pointers.clear();
            for (int i = 0; i < rows; ++i) p.pointers.push_back(row_pointer(i));
            simd::RankSquareSweep s;
            s.key_bytes = int(sizeof(K));
            s.k = k_;
            s.rank = plan_.step.rank;
            s.to_float = kFloat;
            s.rows = p.pointers.data();
            s.step = C;
            s.out = out_.row<T>(y0) + std::size_t(o0) * C;
            s.out_stride = y1 - y0 > 1 ? std::ptrdiff_t(out_.pitch) : 0;
            s.rows_out = y1 - y0;
            s.n = std::size_t(o1 - o0) * C;
            simd::rank_sweep_square(s);
        };
        if (a == b) {
            sweep(x0, x1, [&](int i) -> const void* { return left + std::size_t(i) * left_stride; });
        } else {
            sweep(x0, a, [&](int i) -> const void* { return left + std::size_t(i) * left_stride; });
            sweep(a, b, [&](int i) -> const void* {
                const int r = map_index(top + i, H_, plan_.step.border);
                return r < 0 ? static_cast<const void*>(fill_row) : static_cast<const void*>(in_.row<T>(r) + std::size_t(a - ax_) * C);
            });
            sweep(b, x1, [&](int i) -> const void* { return right + std::size_t(i) * right_stride; });
        }
        if constexpr (kFloat) {
            for (int y = y0; y < y1; ++y) {
                const int i0 = y - y0;
                bool any = false;
                for (int j = 0; j < k_; ++j) any = any || p.missing[std::size_t(i0 + j)];
                if (!any) continue;
                mend_missing_outputs(out_.row<float>(y), x0, x1, C_, cells_, plan_.step.rank, plan_.count,
                                     [&](int j) { return left + std::size_t(i0 + j) * left_stride; }, p.keys);
            }
        }
    }

    const RankPlan& plan_;
    ConstImageView in_;
    ImageView out_;
    int W_, H_, C_, k_, ax_, ay_;
    ColumnMap cols_;
    K fill_{};
    std::vector<RankCell> cells_;
    Tiling tiling_{1, 1, 1, 1, 0, 1};
    std::vector<SquareParticipant<T>> parts_;
};

} // namespace

void run_rank_square(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out) {
    if (in.empty()) return;
    with_type(plan.type, [&]<class T>() {
        SquareJob<T> job(plan, in, out, pool.size());
        pool.run(job.tasks(), [&](int task, int who) { job.run(task, who); });
    });
}

} // namespace apron::cpu
