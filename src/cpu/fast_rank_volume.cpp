// `cpu.rank_volume`: rank filters over a volume's window (Axes::volume; SPEC.md "Volumes", "Rank").
//
// Each output row (plane z, row y) slides a histogram of the window's keys along x (Huang): the window is the
// element's runs, one a (dz, dy) pair, each reading one source row; a step to the next voxel removes each
// run's leftmost sample and adds the one past its right end, so a voxel costs two updates a run, whatever the
// run's length. The histogram counts a key's top 16 bits (u8: all 8) in tiers of 4 bits, so finding the bin
// that holds the rank walks at most 16 counts a tier. u8 and u16 keys are their bins: the bin is the value.
// f32 keys share a bin with others of the same top 16 bits: the window's samples of that bin are gathered and
// the rank selected among them (few: a bin is 2^16 keys wide), or, where the bin holds one key, that key is
// the xor of the low halves kept a bin. NaN is a missing sample, never counted: the
// rank is taken among the valid ones (rank_among), NaN where none is valid.
//
// Coordinates outside the volume go through the border (core/border_index.hpp): a run's source row is mapped
// once a row (null for the constant), its columns through a column map made once a call. The result is the
// rank-th key of the window, as the reference's selection: the same bits. Threads take (plane, rows) tasks.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "core/rank_value.hpp"
#include "cpu/fast_executor.hpp"
#include "cpu/fast_rank.hpp"

namespace apron::cpu {
namespace {

// A run of the window: cells dx0 .. dx1 of row dy of plane dz (offsets from the anchor).
struct Run {
    int dz, dy, dx0, dx1;
};

std::vector<Run> window_runs(const RankStep& s) {
    std::vector<Run> runs;
    const Mask& e = s.element;
    const int rows = s.plane_rows();
    for (int k = 0; k < s.depth; ++k)
        for (int j = 0; j < rows; ++j)
            for (int i = 0; i < e.width; ++i) {
                if (e.at(i, k * rows + j) == 0) continue;
                int last = i;
                while (last + 1 < e.width && e.at(last + 1, k * rows + j) != 0) ++last;
                runs.push_back({k - s.anchor_z(), j - s.anchor_row(), i - e.anchor_x, last - e.anchor_x});
                i = last;
            }
    return runs;
}

// Counts of bins 0 .. 2^Bits - 1 in tiers of 4 bits: tier t counts the bins' top 4(t + 1) bits.
template <int Bits>
class TieredHistogram {
public:
    static constexpr int tiers = Bits / 4;
    TieredHistogram() {
        for (int t = 0; t < tiers; ++t) counts_[t].assign(std::size_t(1) << (4 * (t + 1)), 0);
    }
    void add(std::uint32_t bin, int delta) {
        for (int t = 0; t < tiers; ++t) counts_[t][bin >> (Bits - 4 * (t + 1))] += delta;
    }
    std::uint32_t count(std::uint32_t bin) const { return counts_[tiers - 1][bin]; }
    // The bin holding the sample of rank `want` (0-based), and how many samples lie in lower bins.
    std::uint32_t find(int want, int& below) const {
        std::uint32_t bin = 0;
        int lower = 0;
        for (int t = 0; t < tiers; ++t) {
            const std::uint32_t* c = counts_[t].data() + std::size_t(bin) * 16;
            int i = 0;
            for (; i < 15 && lower + int(c[i]) <= want; ++i) lower += int(c[i]);
            bin = bin * 16 + std::uint32_t(i);
        }
        below = lower;
        return bin;
    }

private:
    std::vector<std::uint32_t> counts_[tiers];
};

template <class T>
class VolumeJob {
public:
    static constexpr int bits = sizeof(T) == 1 ? 8 : 16;  // the histogram's bins: a key's top bits
    static constexpr int shift = rank_key_bits<T> - bits;

    VolumeJob(const RankPlan& p, ConstImageView in, ImageView out)
        : p_(p), in_(in), out_(out), runs_(window_runs(p.step)), outside_(store_pixel<T>(p.step.border_value)) {
        for (const Run& r : runs_) left_ = std::max(left_, -r.dx0), right_ = std::max(right_, r.dx1 + 1);
        for (int x = -left_; x < in.width() + right_; ++x) columns_.push_back(map_index(x, in.width(), p.step.border));
    }

    // Output rows [y0, y1) of plane z; `scratch` is the calling thread's.
    void rows(int z, int y0, int y1, TieredHistogram<bits>& histogram, std::vector<std::uint16_t>& low_bits,
              std::vector<std::uint32_t>& keys) const {
        const int w = in_.width(), h = in_.height(), d = in_.shape.depth, channels = in_.channels();
        std::vector<const T*> source(runs_.size());
        for (int y = y0; y < y1; ++y) {
            for (std::size_t k = 0; k < runs_.size(); ++k) {
                const int zi = map_index(z + runs_[k].dz, d, p_.step.border), yi = map_index(y + runs_[k].dy, h, p_.step.border);
                source[k] = zi < 0 || yi < 0 ? nullptr : in_.plane(zi).template row<T>(yi);
            }
            T* o = out_.plane(z).template row<T>(y);
            for (int c = 0; c < channels; ++c) row(source, w, c, channels, histogram, low_bits, keys, o);
        }
    }

private:
    // The key of sample x of a run's source row (x may lie outside: the column map's border).
    std::uint32_t key(const T* row, int x, int c, int channels) const {
        const int xi = columns_[std::size_t(x + left_)];
        return rank_key(row && xi >= 0 ? row[std::size_t(xi) * channels + c] : outside_);
    }

    // f32: `low_bits[bin]` is the xor of the low 16 bits of the bin's keys in the window, so a bin of one key
    // holds it whole (no gather); it is all zero again when the row's window has left.
    void row(const std::vector<const T*>& source, int w, int c, int channels, TieredHistogram<bits>& histogram,
             std::vector<std::uint16_t>& low_bits, std::vector<std::uint32_t>& keys, T* o) const {
        int valid = 0;
        auto update = [&](std::uint32_t k, int delta) {
            if constexpr (std::is_same_v<T, float>)
                if (k == rank_missing_key) return;  // NaN: not a sample of the order
            histogram.add(k >> shift, delta);
            if constexpr (shift > 0) low_bits[k >> shift] ^= std::uint16_t(k);
            valid += delta;
        };
        for (std::size_t r = 0; r < runs_.size(); ++r)
            for (int x = runs_[r].dx0; x <= runs_[r].dx1; ++x) update(key(source[r], x, c, channels), 1);
        // Steps from x to x + 1 whose samples all lie inside the volume: read straight from the rows.
        const bool rows_inside = std::none_of(source.begin(), source.end(), [](const T* row) { return row == nullptr; });
        // x + dx0 >= 0 and x + 1 + dx1 < w, and not the row's last step (which empties the histogram).
        const int inner0 = left_, inner1 = rows_inside ? std::min(w - 1, w - right_) : -1;
        for (int x = 0; x < w; ++x) {
            o[std::size_t(x) * channels + c] = valid ? value_at(source, x, c, channels, valid, histogram, low_bits, keys)
                                                     : rank_value<T>(rank_missing_key);
            if (x >= inner0 && x < inner1) {
                for (std::size_t r = 0; r < runs_.size(); ++r) {
                    const T* row = source[r] + c;
                    update(rank_key(row[std::size_t(x + runs_[r].dx0) * channels]), -1);
                    update(rank_key(row[std::size_t(x + 1 + runs_[r].dx1) * channels]), 1);
                }
                continue;
            }
            for (std::size_t r = 0; r < runs_.size(); ++r) {  // to x + 1, or (at the row's end) empty again
                update(key(source[r], x + runs_[r].dx0, c, channels), -1);
                if (x + 1 < w) update(key(source[r], x + 1 + runs_[r].dx1, c, channels), 1);
            }
            if (x + 1 == w)
                for (std::size_t r = 0; r < runs_.size(); ++r)
                    for (int k = x + runs_[r].dx0 + 1; k <= x + runs_[r].dx1; ++k) update(key(source[r], k, c, channels), -1);
        }
    }

    T value_at(const std::vector<const T*>& source, int x, int c, int channels, int valid, const TieredHistogram<bits>& histogram,
               const std::vector<std::uint16_t>& low_bits, std::vector<std::uint32_t>& keys) const {
        const int want = rank_among(p_.step.rank, valid, p_.count);
        int below = 0;
        const std::uint32_t bin = histogram.find(want, below);
        if constexpr (shift == 0) {
            return rank_value<T>(bin);
        } else {  // the bin's one key, or the window's keys of that bin and the rank among them
            if (histogram.count(bin) == 1) return rank_value<T>((bin << shift) | low_bits[bin]);
            keys.clear();
            for (std::size_t r = 0; r < runs_.size(); ++r)
                for (int k = x + runs_[r].dx0; k <= x + runs_[r].dx1; ++k) {
                    const std::uint32_t key_k = key(source[r], k, c, channels);
                    if (key_k != rank_missing_key && (key_k >> shift) == bin) keys.push_back(key_k);
                }
            const auto nth = keys.begin() + (want - below);
            std::nth_element(keys.begin(), nth, keys.end());
            return rank_value<T>(*nth);
        }
    }

    const RankPlan& p_;
    ConstImageView in_;
    ImageView out_;
    std::vector<Run> runs_;
    T outside_;
    int left_ = 0, right_ = 0;  // columns read left of 0 and from the width on
    std::vector<int> columns_;  // map_index of columns -left_ .. width + right_ - 1 (-1: the constant)
};

} // namespace

void run_rank_volume(ThreadPool& pool, const RankPlan& p, ConstImageView in, ImageView out) {
    const int h = in.height(), d = in.shape.depth;
    if (in.empty() || d < 1 || p.count < 1) return;
    // Tasks of a few rows of one plane: enough of them to balance the threads, each long enough to count.
    const int rows = std::max(1, std::min(16, int((std::int64_t(h) * d) / (8 * pool.size())) + 1));
    const int per_plane = (h + rows - 1) / rows;
    with_type(p.type, [&]<class T>() {
        const VolumeJob<T> job(p, in, out);
        using Histogram = TieredHistogram<VolumeJob<T>::bits>;
        std::vector<Histogram> histograms(std::size_t(pool.size()));
        std::vector<std::vector<std::uint32_t>> keys(std::size_t(pool.size()));
        // f32's low halves a bin (VolumeJob::row); none for the types whose bins are their keys.
        std::vector<std::vector<std::uint16_t>> low_bits(std::size_t(pool.size()),
                                                         std::vector<std::uint16_t>(VolumeJob<T>::shift ? 65536 : 0));
        pool.run(per_plane * d, [&](int t, int who) {
            const int z = t / per_plane, y0 = (t % per_plane) * rows;
            const std::size_t me = std::size_t(who);
            job.rows(z, y0, std::min(h, y0 + rows), histograms[me], low_bits[me], keys[me]);
        });
    });
}

} // namespace apron::cpu
