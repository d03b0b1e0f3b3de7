// Large full rectangles on u8: `cpu.rank_histogram` "u8 columns" (Perreault-Hebert). Every padded column of a
// task's strip keeps a histogram of the window's rows in it (256 counts and 16 coarse ones); one output row
// after another, each column takes away the row that leaves the window and adds the one that enters (2 counts
// per column and row), and along the row the window's histogram adds the column that enters and takes away
// the one that leaves, a few vector operations whatever the window's size (simd_rank.cpp). The rank is then
// found by the coarse counts and 16 fine ones. Samples are read through a column map of the border
// (map_index), channel by channel.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/pixel.hpp"
#include "cpu/fast_rank.hpp"
#include "cpu/fast_rank_rows.hpp"

namespace apron::cpu {
namespace {

template <class Count>
class ColumnsJob {
public:
    ColumnsJob(const RankPlan& plan, ConstImageView in, ImageView out, int participants)
        : plan_(plan), in_(in), out_(out), W_(in.width()), H_(in.height()), C_(in.channels()), mw_(plan.step.element.width),
          mh_(plan.step.element.height), ax_(plan.step.element.anchor_x), ay_(plan.step.element.anchor_y),
          cols_(W_, -(mw_ + 1), W_ + 2 * (mw_ + 1), plan.step.border), parts_(std::size_t(participants)) {
        fill_ = store_pixel<std::uint8_t>(plan.step.border_value);
        // A strip's records (each column's histogram) stay in L2: 1 MiB of them.
        tiling_ = Tiling(W_, H_, participants, simd::rank_column_record * sizeof(Count), mw_ - 1, std::max(16, 4 * mh_));
    }

    int tasks() const { return tiling_.tasks(); }

    void run(int task, int who) {
        int x0, x1, y0, y1;
        tiling_.cell(task, W_, H_, x0, x1, y0, y1);
        Participant& p = parts_[std::size_t(who)];
        const int columns = x1 - x0 + mw_ - 1;  // padded column i: image column x0 - ax + i
        constexpr std::size_t R = simd::rank_column_record;
        Count* records = p.records.get(std::size_t(columns) * R);
        Count* window = p.window.get(R);
        for (int c = 0; c < C_; ++c) {
            const RankSampler<std::uint8_t> s{&cols_, mw_ + 1, C_, c, fill_};
            std::fill(records, records + std::size_t(columns) * R, Count(0));
            auto add_row = [&](long long v, int delta) {
                const std::uint8_t* row = source(v);
                for (int i = 0; i < columns; ++i) {
                    const std::uint8_t value = s.at(row, (long long)x0 - ax_ + i);
                    Count* rec = records + std::size_t(i) * R;
                    rec[value] = Count(rec[value] + delta);
                    rec[256 + (value >> 4)] = Count(rec[256 + (value >> 4)] + delta);
                }
            };
            for (int j = 0; j < mh_; ++j) add_row((long long)y0 - ay_ + j, 1);
            for (int y = y0; y < y1; ++y) {
                if (y > y0) {
                    add_row((long long)y - 1 - ay_, -1);
                    add_row((long long)y - ay_ + mh_ - 1, 1);
                }
                std::uint8_t* out = out_.row<std::uint8_t>(y) + std::size_t(x0) * std::size_t(C_) + std::size_t(c);
                if constexpr (std::is_same_v<Count, std::uint16_t>)
                    simd::rank_columns_row_u16(records, mw_, x1 - x0, plan_.step.rank, window, out, std::size_t(C_));
                else
                    simd::rank_columns_row_u32(records, mw_, x1 - x0, plan_.step.rank, window, out, std::size_t(C_));
            }
        }
    }

private:
    struct Participant {
        Scratch<Count> records, window;
    };
    const std::uint8_t* source(long long v) const {
        const int r = map_index(v, H_, plan_.step.border);
        return r < 0 ? nullptr : in_.row<std::uint8_t>(r);
    }

    const RankPlan& plan_;
    ConstImageView in_;
    ImageView out_;
    int W_, H_, C_, mw_, mh_, ax_, ay_;
    ColumnMap cols_;
    std::uint8_t fill_ = 0;
    Tiling tiling_{1, 1, 1, 1, 0, 1};
    std::vector<Participant> parts_;
};

} // namespace

void run_rank_columns(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out) {
    if (in.empty()) return;
    auto run = [&]<class Count>() {
        ColumnsJob<Count> job(plan, in, out, pool.size());
        pool.run(job.tasks(), [&](int task, int who) { job.run(task, who); });
    };
    if (plan.count < 65536) run.template operator()<std::uint16_t>();
    else run.template operator()<std::uint32_t>();
}

} // namespace apron::cpu
