// Large windows by Huang's sliding histogram over the element's runs: `cpu.rank_histogram` "u8 runs" (u8
// elements that are not full rectangles), "u16 runs", and `cpu.rank_keyhist` "f32 runs".
//
// One histogram walks each task in a snake (right along a row, down one, left along the next), each step
// adding the cells that enter the window and taking away those that leave: 2 per element row going across
// (plan.chords), 2 per element column going down. The rank is tracked as it moves (the value it was at and
// how many samples lie below), so finding it again costs little. u8 counts 256 values. u16 counts its 16-bit
// values in three levels (256 coarse, 4096, 65536). f32 counts the high 16 bits of each sample's order key
// (core/rank_value.hpp) the same way, and keeps for each of those 65536 bins the exclusive or of its samples'
// low 16 bits: where the rank's bin holds one sample that is its key; else the window's samples of that bin
// are gathered (by vectors, from a ring of the window's rows as keys) and the rank selected among them. NaN
// keys fall in the top bin, which holds nothing else: its count is the missing samples (rank_among).
//
// Samples are read through a column map of the border (map_index) and the rows' own pointers, channel by
// channel; every output is one of its window's samples, bit for bit the reference's.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "core/rank_value.hpp"
#include "cpu/fast_rank.hpp"
#include "cpu/fast_rank_rows.hpp"

namespace apron::cpu {
namespace {

// A vertical run of the element: column dx, rows dy .. dy + length - 1 (relative to the anchor).
struct VerticalRun {
    int dx = 0, dy = 0, length = 0;
};

std::vector<VerticalRun> vertical_runs(const Mask& e) {
    std::vector<VerticalRun> runs;
    for (int i = 0; i < e.width; ++i)
        for (int j = 0; j < e.height;) {
            if (e.at(i, j) == 0) {
                ++j;
                continue;
            }
            int k = j;
            while (k < e.height && e.at(i, k) != 0) ++k;
            runs.push_back(VerticalRun{i - e.anchor_x, j - e.anchor_y, k - j});
            j = k;
        }
    return runs;
}

// 256 values (u8), the rank tracked as `at` (a value) and `below` (the samples less than it).
struct Histogram8 {
    std::uint32_t count[256];
    int at = 0;
    long long below = 0;
    void clear() {
        std::memset(count, 0, sizeof count);
        at = 0;
        below = 0;
    }
    void add(std::uint32_t v) {
        ++count[v];
        below += v < std::uint32_t(at);
    }
    void remove(std::uint32_t v) {
        --count[v];
        below -= v < std::uint32_t(at);
    }
    // The value of rank r (0-based, r < the samples counted).
    int find(long long r) {
        while (below > r) below -= count[--at];
        while (below + (long long)count[at] <= r) below += count[at++];
        return at;
    }
};

// 65536 values (u16, or the high half of f32 keys) in three levels: coarse (v >> 8), middle (v >> 4), fine.
// The rank is tracked at the coarse level; within the coarse bin, 16 middle counts and 16 fine ones find it.
// `low_xor`: per fine bin, the exclusive or of its samples' low halves (f32 keys only).
struct Histogram16 {
    std::vector<std::uint32_t> fine = std::vector<std::uint32_t>(65536), middle = std::vector<std::uint32_t>(4096),
                               coarse = std::vector<std::uint32_t>(256);
    std::vector<std::uint16_t> low_xor;
    int at = 0;  // coarse bin
    long long below = 0;

    void clear() {
        std::fill(fine.begin(), fine.end(), 0u);
        std::fill(middle.begin(), middle.end(), 0u);
        std::fill(coarse.begin(), coarse.end(), 0u);
        if (!low_xor.empty()) std::fill(low_xor.begin(), low_xor.end(), std::uint16_t(0));
        at = 0;
        below = 0;
    }
    void add(std::uint32_t v) {
        ++fine[v];
        ++middle[v >> 4];
        ++coarse[v >> 8];
        below += (v >> 8) < std::uint32_t(at);
    }
    void remove(std::uint32_t v) {
        --fine[v];
        --middle[v >> 4];
        --coarse[v >> 8];
        below -= (v >> 8) < std::uint32_t(at);
    }
    // The fine bin of rank r, and the samples in lower bins.
    int find(long long r, long long& lower) {
        while (below > r) below -= coarse[std::size_t(--at)];
        while (below + (long long)coarse[std::size_t(at)] <= r) below += coarse[std::size_t(at++)];
        long long acc = below;
        int m = at * 16;
        while (acc + (long long)middle[std::size_t(m)] <= r) acc += middle[std::size_t(m++)];
        int f = m * 16;
        while (acc + (long long)fine[std::size_t(f)] <= r) acc += fine[std::size_t(f++)];
        lower = acc;
        return f;
    }
};

// Where the snake reads its samples: the image's rows through the column map (any window).
template <class T>
struct MapRows {
    using Value = std::conditional_t<std::is_same_v<T, float>, std::uint32_t, T>;  // f32: order keys
    using Handle = const T*;
    ConstImageView in;
    BorderMode border;
    RankSampler<T> s;

    void begin(long long, long long) {}
    void enter(long long) {}
    Handle row(long long v) const {
        const int r = map_index(v, in.height(), border);
        return r < 0 ? nullptr : in.row<T>(r);
    }
    Value at(Handle h, long long X) const {
        if constexpr (std::is_same_v<T, float>) return rank_key(s.at(h, X));
        else return s.at(h, X);
    }
    // Appends the keys of cells X .. X + length - 1 whose high half is `high` (f32).
    void gather(Handle h, long long X, int length, std::uint32_t high, std::vector<std::uint32_t>& keys, std::size_t& found) const {
        for (int i = 0; i < length; ++i) {
            const std::uint32_t key = std::uint32_t(at(h, X + i));
            if ((key >> 16) == high) keys[found++] = key;
        }
    }
};

// f32: the window's rows as rows of keys of the snake's channel, padded through the border, in a ring of
// mh + 1 rows (a row enters as the snake goes down), so that the cells of one bin are gathered by vectors.
struct KeyRing {
    using Value = std::uint32_t;
    using Handle = const std::uint32_t*;
    ConstImageView in;
    BorderMode border;
    const ColumnMap* cols = nullptr;
    int offset = 0, channel = 0;  // ring sample of image column X: X + offset
    std::uint32_t fill = 0;
    std::uint32_t* ring = nullptr;
    std::size_t stride = 0;
    int slots = 1;

    std::uint32_t* slot(long long v) const { return ring + std::size_t(positive_mod(v, slots)) * stride; }
    void begin(long long first, long long last) {
        for (long long v = first; v <= last; ++v) enter(v);
    }
    void enter(long long v) {
        const int r = map_index(v, in.height(), border);
        std::uint32_t* dst = slot(v);
        const std::size_t C = std::size_t(in.channels());
        const float* src = r < 0 ? nullptr : in.row<float>(r);
        for (std::size_t i = 0; i < cols->map.size(); ++i) {
            const int m = cols->map[i];
            dst[i] = src && m >= 0 ? rank_key(src[std::size_t(m) * C + std::size_t(channel)]) : fill;
        }
    }
    Handle row(long long v) const { return slot(v); }
    Value at(Handle h, long long X) const { return h[std::size_t(X + offset)]; }
    void gather(Handle h, long long X, int length, std::uint32_t high, std::vector<std::uint32_t>& keys, std::size_t& found) const {
        found += simd::rank_keys_in_bin(h + std::size_t(X + offset), std::size_t(length), high, keys.data() + found);
    }
};

// One task in a snake, one channel at a time: Histogram8 for u8, Histogram16 for u16 and f32 (the keys'
// high halves).
template <class T>
class RunsJob {
    static constexpr bool kFloat = std::is_same_v<T, float>;
    using Hist = std::conditional_t<std::is_same_v<T, std::uint8_t>, Histogram8, Histogram16>;

public:
    RunsJob(const RankPlan& plan, ConstImageView in, ImageView out, int participants)
        : plan_(plan), in_(in), out_(out), W_(in.width()), H_(in.height()), C_(in.channels()), mw_(plan.step.element.width),
          cols_(W_, -(mw_ + 1), W_ + 2 * (mw_ + 1), plan.step.border), across_(plan.chords),
          down_(vertical_runs(plan.step.element)), parts_(std::size_t(participants)) {
        fill_ = store_pixel<T>(plan.step.border_value);
        top_ = bottom_ = across_.empty() ? 0 : across_[0].dy;
        for (const MorphChord& run : across_) {
            top_ = std::min(top_, run.dy);
            bottom_ = std::max(bottom_, run.dy);
        }
        // Tasks: bands of whole rows (a strip would start its snake again for every band); the first position
        // of a task counts the whole window.
        tiling_ = Tiling(W_, H_, participants, 1, 0, std::max(16, 2 * plan.step.element.height));
        ring_stride_ = (cols_.map.size() * 4 + simd::rank_row_slack_bytes + 63) / 64 * 16;
        ring_ = kFloat && std::size_t(bottom_ - top_ + 2) * ring_stride_ * 4 <= ring_limit_bytes;
        for (auto& p : parts_)
            if constexpr (kFloat) p.hist.low_xor.assign(65536, 0);
    }

    int tasks() const { return tiling_.tasks(); }

    void run(int task, int who) {
        int x0, x1, y0, y1;
        tiling_.cell(task, W_, H_, x0, x1, y0, y1);
        Participant& p = parts_[std::size_t(who)];
        p.keys.resize(std::size_t(plan_.count) + 64);  // the f32 gather writes whole vectors
        for (int c = 0; c < C_; ++c) {
            const RankSampler<T> s{&cols_, mw_ + 1, C_, c, fill_};
            if constexpr (kFloat) {
                if (ring_) {
                    const int slots = bottom_ - top_ + 2;
                    KeyRing rows{in_, plan_.step.border, &cols_, mw_ + 1, c, rank_key(fill_),
                                 p.ring.get(std::size_t(slots) * ring_stride_), ring_stride_, slots};
                    snake(p, rows, x0, x1, y0, y1, c);
                    continue;
                }
            }
            MapRows<T> rows{in_, plan_.step.border, s};
            snake(p, rows, x0, x1, y0, y1, c);
        }
    }

private:
    // f32 rows of keys beyond this take the image's rows through the map instead (windows hundreds of rows tall
    // on wide images; tests/test_cpu_rank.cpp takes both).
    static constexpr std::size_t ring_limit_bytes = std::size_t(16) << 20;

    struct Participant {
        Hist hist;
        std::vector<const void*> rows;
        std::vector<std::uint32_t> keys;
        Scratch<std::uint32_t> ring;
    };

    template <class V>
    static std::uint32_t bin_of(V v) {
        if constexpr (kFloat) return std::uint32_t(v) >> 16;
        else return std::uint32_t(v);
    }
    template <class V>
    static void add(Hist& h, V v) {
        h.add(bin_of(v));
        if constexpr (kFloat) h.low_xor[bin_of(v)] ^= std::uint16_t(v);
    }
    template <class V>
    static void remove(Hist& h, V v) {
        h.remove(bin_of(v));
        if constexpr (kFloat) h.low_xor[bin_of(v)] ^= std::uint16_t(v);
    }

    template <class Rows>
    void snake(Participant& p, Rows& rows, int x0, int x1, int y0, int y1, int c) {
        using Handle = typename Rows::Handle;
        Hist& h = p.hist;
        h.clear();
        rows.begin((long long)y0 + top_, (long long)y0 + bottom_);
        for (const MorphChord& run : across_) {  // the window of (x0, y0)
            const Handle row = rows.row((long long)y0 + run.dy);
            for (int i = 0; i < run.length; ++i) add(h, rows.at(row, (long long)x0 + run.dx + i));
        }
        p.rows.resize(across_.size());
        for (int y = y0; y < y1; ++y) {
            const bool rightwards = (y - y0) % 2 == 0;
            int x = rightwards ? x0 : x1 - 1;
            if (y > y0) {  // down from (x, y - 1): each element column loses its top cell and gains one below
                rows.enter((long long)y + bottom_);
                for (const VerticalRun& run : down_) {
                    remove(h, rows.at(rows.row((long long)y - 1 + run.dy), (long long)x + run.dx));
                    add(h, rows.at(rows.row((long long)y + run.dy + run.length - 1), (long long)x + run.dx));
                }
            }
            for (std::size_t k = 0; k < across_.size(); ++k) p.rows[k] = rows.row((long long)y + across_[k].dy);
            T* out = out_.row<T>(y);
            for (;;) {
                out[std::size_t(x) * std::size_t(C_) + std::size_t(c)] = select(p, rows, x);
                const int next = rightwards ? x + 1 : x - 1;
                if (next < x0 || next >= x1) break;
                for (std::size_t k = 0; k < across_.size(); ++k) {
                    const MorphChord& run = across_[k];
                    const Handle row = static_cast<Handle>(p.rows[k]);
                    if (rightwards) {
                        remove(h, rows.at(row, (long long)x + run.dx));
                        add(h, rows.at(row, (long long)x + run.dx + run.length));
                    } else {
                        remove(h, rows.at(row, (long long)x + run.dx + run.length - 1));
                        add(h, rows.at(row, (long long)x + run.dx - 1));
                    }
                }
                x = next;
            }
        }
    }

    // The output at x of the current row from the histogram of its window.
    template <class Rows>
    T select(Participant& p, const Rows& rows, int x) {
        Hist& h = p.hist;
        if constexpr (std::is_same_v<T, std::uint8_t>) {
            (void)rows, (void)x;
            return T(h.find(plan_.step.rank));
        } else if constexpr (std::is_same_v<T, std::uint16_t>) {
            (void)rows, (void)x;
            long long lower;
            return T(h.find(plan_.step.rank, lower));
        } else {
            const long long missing = h.fine[65535];  // only missing keys (NaN) have a high half of 0xFFFF
            const long long valid = plan_.count - missing;
            if (valid == 0) return rank_value<float>(rank_missing_key);
            const int r = rank_among(plan_.step.rank, int(valid), plan_.count);
            long long lower;
            const std::uint32_t bin = std::uint32_t(h.find(r, lower));
            if (h.fine[bin] == 1) return rank_value<float>(bin << 16 | h.low_xor[bin]);
            // Several samples share the bin: gather them from the window and select.
            std::size_t found = 0;
            for (std::size_t k = 0; k < across_.size(); ++k) {
                const MorphChord& run = across_[k];
                rows.gather(static_cast<typename Rows::Handle>(p.rows[k]), (long long)x + run.dx, run.length, bin, p.keys, found);
            }
            const std::size_t nth = std::size_t(r - lower);
            std::nth_element(p.keys.begin(), p.keys.begin() + std::ptrdiff_t(nth), p.keys.begin() + std::ptrdiff_t(found));
            return rank_value<float>(p.keys[nth]);
        }
    }

    const RankPlan& plan_;
    ConstImageView in_;
    ImageView out_;
    int W_, H_, C_, mw_;
    ColumnMap cols_;
    T fill_{};
    std::vector<MorphChord> across_;
    std::vector<VerticalRun> down_;
    int top_ = 0, bottom_ = 0;  // the element rows' dy range
    std::size_t ring_stride_ = 0;
    bool ring_ = false;
    Tiling tiling_{1, 1, 1, 1, 0, 1};
    std::vector<Participant> parts_;
};

} // namespace

void run_rank_runs(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out) {
    if (in.empty()) return;
    with_type(plan.type, [&]<class T>() {
        RunsJob<T> job(plan, in, out, pool.size());
        pool.run(job.tasks(), [&](int task, int who) { job.run(task, who); });
    });
}

} // namespace apron::cpu
