// Small rank windows (up to 7 x 7 cells) on the fast CPU executor: `cpu.rank_network`. Full squares with a
// compiled selection go to fast_rank_square.cpp ("3x3", "5x5", "7x7"); every other shape and rank runs here
// ("cells=N").
//
// SIMD across output samples: a vector holds neighbouring outputs (interleaved channels are a row of
// samples whose horizontal neighbour is `channels` samples away, so colour costs what gray does per sample).
// Each output row takes two passes over rows of keys that stay in L1 / L2:
//  1. the element's columns are sorted at every padded position (one compiled network per column height,
//     simd_rank.cpp); a column is shared by every output whose window holds it, so this costs one small sort
//     per sample. Columns with the same set of rows are sorted once.
//  2. the rank is selected from the window's sorted columns by a selection program (rank_network.hpp) that
//     the interpreter of simd_rank.cpp runs over blocks of vectors.
// Rows are padded through the border (map_index) into a ring, as in the morphology kernels, so neither pass
// has a border branch; u8 and u16 rows keep only their ends there, the outputs whose windows lie inside the
// image reading the image's rows in place. f32 runs on order keys (core/rank_value.hpp): a network over keys
// is exact wherever no sample of the window is NaN; rows whose windows meet a NaN are mended afterwards, as
// a missing sample moves the rank (rank_among; fast_rank_rows.hpp).
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
#include "plan/kinds/rank_kind.hpp"

namespace apron::cpu {
namespace {

// The element's columns: column dx (relative to the anchor) holds the cells of element rows `rows`.
// Columns with the same rows share one sorted set of rows per position (a "kind").
struct Column {
    int dx = 0, kind = 0;
};
struct ColumnKind {
    std::vector<int> rows;  // element rows j (virtual row y - anchor_y + j)
    int first_buffer = 0;   // its sorted rows in the participant's column buffers
};

struct Shape {
    int mw = 0, mh = 0, ax = 0, ay = 0;
    std::vector<Column> columns;  // by dx, columns without cells left out
    std::vector<ColumnKind> kinds;
    int buffers = 0;              // sorted rows per output row
    int square = 0;               // k: a full k x k square with a compiled selection for this rank, else 0
};

Shape analyse(const RankPlan& p) {
    const Mask& e = p.step.element;
    Shape s;
    s.mw = e.width;
    s.mh = e.height;
    s.ax = e.anchor_x;
    s.ay = e.anchor_y;
    for (int i = 0; i < e.width; ++i) {
        std::vector<int> rows;
        for (int j = 0; j < e.height; ++j)
            if (e.at(i, j) != 0) rows.push_back(j);
        if (rows.empty()) continue;
        int kind = 0;
        while (kind < int(s.kinds.size()) && s.kinds[std::size_t(kind)].rows != rows) ++kind;
        if (kind == int(s.kinds.size())) {
            s.kinds.push_back(ColumnKind{rows, s.buffers});
            s.buffers += int(rows.size());
        }
        s.columns.push_back(Column{i, kind});
    }
    const bool full = p.count == e.width * e.height && e.width == e.height;
    if (full && (e.width == 3 || e.width == 5 || e.width == 7) && simd::rank_square_compiled(e.width, p.step.rank))
        s.square = e.width;
    return s;
}

bool network_takes(const RankPlan& p) {
    const Mask& e = p.step.element;
    return p.count >= 1 && p.count <= rank_network_cells && e.width <= 7 && e.height <= 7;
}

// Slots for the interpreter's intermediate values: each op's result takes a slot that no live value holds
// (freed after its last use), so the values in flight stay few and in L1.
std::vector<std::uint16_t> allocate_slots(const rank_net::Program& prog, int& slots) {
    const int inputs = prog.inputs, ops = int(prog.ops.size());
    std::vector<int> last_use(std::size_t(ops), -1);
    for (int k = 0; k < ops; ++k)
        for (int v : {int(prog.ops[std::size_t(k)].a), int(prog.ops[std::size_t(k)].b)})
            if (v >= inputs) last_use[std::size_t(v - inputs)] = k;
    for (int o : prog.outputs)
        if (o >= inputs) last_use[std::size_t(o - inputs)] = ops;
    std::vector<std::uint16_t> slot_of(static_cast<std::size_t>(ops));
    std::vector<std::uint16_t> free_slots;
    std::vector<std::vector<int>> expiring(std::size_t(ops) + 1);  // values whose last use is op k
    for (int k = 0; k < ops; ++k)
        if (last_use[std::size_t(k)] >= 0) expiring[std::size_t(last_use[std::size_t(k)])].push_back(k);
    slots = 0;
    for (int k = 0; k < ops; ++k) {
        // A slot freed by this op's operands may take its result: each block reads both operands before it
        // writes (rank_run_program loads a and b of a vector before its store).
        for (int v : expiring[std::size_t(k)]) free_slots.push_back(slot_of[std::size_t(v)]);
        if (free_slots.empty()) slot_of[std::size_t(k)] = std::uint16_t(slots++);
        else {
            slot_of[std::size_t(k)] = free_slots.back();
            free_slots.pop_back();
        }
        if (last_use[std::size_t(k)] < 0) free_slots.push_back(slot_of[std::size_t(k)]);  // never read
    }
    return slot_of;
}

template <class T>
struct Participant {
    using K = RankKey<T>;
    Scratch<K> ring, sorted;
    Scratch<std::byte> slots;
    std::vector<char> missing;  // per ring row: holds a NaN (f32)
    std::vector<const void*> rows, inputs;
    std::vector<void*> outs, segment_outs;
    std::vector<long long> virtual_rows;
    std::vector<std::uint32_t> keys;
};

template <class T>
class NetworkJob {
    using K = RankKey<T>;
    static constexpr bool kFloat = std::is_same_v<T, float>;

public:
    NetworkJob(const RankPlan& plan, ConstImageView in, ImageView out, int participants)
        : plan_(plan), in_(in), out_(out), W_(in.width()), H_(in.height()), C_(in.channels()), shape_(analyse(plan)),
          cols_(W_, -shape_.ax, W_ + shape_.mw - 1, plan.step.border), parts_(std::size_t(participants)) {
        fill_ = rank_key_of(store_pixel<T>(plan.step.border_value));
        for (const Column& c : shape_.columns)
            for (int j : shape_.kinds[std::size_t(c.kind)].rows) cells_.push_back(RankCell{c.dx, j});
        std::vector<int> sizes;
        for (const Column& c : shape_.columns) sizes.push_back(int(shape_.kinds[std::size_t(c.kind)].rows.size()));
        program_ = rank_net::select_program(sizes, plan.step.rank);
        slot_of_ = allocate_slots(program_, slots_);
        ring_rows_ = shape_.mh;
        const int sorted_rows = shape_.buffers;
        tiling_ = Tiling(W_, H_, participants, std::size_t(ring_rows_ + sorted_rows) * std::size_t(C_) * sizeof(K),
                         shape_.mw - 1, std::max(8, 2 * shape_.mh));
    }

    int tasks() const { return tiling_.tasks(); }

    void run(int task, int who) {
        Task t;
        tiling_.cell(task, W_, H_, t.x0, t.x1, t.y0, t.y1);
        Participant<T>& p = parts_[std::size_t(who)];
        const std::size_t C = std::size_t(C_);
        t.padded_n = std::size_t(t.x1 - t.x0 + shape_.mw - 1) * C;
        t.stride = rank_row_stride<K>(t.padded_n);
        t.ring = p.ring.get(t.stride * std::size_t(ring_rows_ + 1));
        t.fill_row = t.ring + t.stride * std::size_t(ring_rows_);
        std::fill(t.fill_row, t.fill_row + t.stride, fill_);
        const int sorted_rows = shape_.buffers;
        t.sorted = p.sorted.get(t.stride * std::size_t(std::max(sorted_rows, 1)));
        t.vbase = (long long)t.y0 - shape_.ay;
        cut_segments(t);
        p.missing.assign(std::size_t(ring_rows_), 0);
        auto ring_row = [&](long long v) { return t.ring_row(v, ring_rows_); };
        auto row_missing = [&](long long v) { return p.missing[t.slot(v, ring_rows_)] != 0; };
        long long loaded = t.vbase;
        auto load_to = [&](long long last) {
            for (; loaded <= last; ++loaded) p.missing[t.slot(loaded, ring_rows_)] = load_row(t, loaded, ring_row(loaded));
        };
        const std::size_t n = std::size_t(t.x1 - t.x0) * C;
        for (int y = t.y0; y < t.y1; ++y) {
            const long long top = (long long)y - shape_.ay;
            load_to(top + shape_.mh - 1);
            select_row(t, p, y, n);
            if constexpr (kFloat) {
                bool any = false;
                for (const ColumnKind& kind : shape_.kinds)
                    for (int j : kind.rows) any = any || row_missing(top + j);
                if (any)
                    mend_missing_outputs(out_.row<float>(y), t.x0, t.x1, C_, cells_, plan_.step.rank, plan_.count,
                                         [&](int j) { return ring_row(top + j); }, p.keys);
            }
        }
    }

private:
    // One task's rows in flight. Padded sample i of a ring row stands for padded pixel x0 + i / C (image
    // column x0 + i / C - anchor_x). u8 / u16 rows keep only their two ends in the ring: the outputs in
    // between, whose windows lie inside the image, read the image in place (segments).
    struct Segment {
        int out0 = 0, out1 = 0;  // outputs [out0, out1)
        bool in_place = false;
    };
    struct Task {
        int x0 = 0, x1 = 0, y0 = 0, y1 = 0;
        int middle0 = 0, middle1 = 0;  // outputs read in place (empty: none)
        std::size_t padded_n = 0, stride = 0;
        K* ring = nullptr;
        K* fill_row = nullptr;
        K* sorted = nullptr;
        long long vbase = 0;
        Segment segments[3];
        int segment_count = 0;
        std::size_t slot(long long v, int ring_rows) const { return std::size_t((v - vbase) % ring_rows); }
        K* ring_row(long long v, int ring_rows) const { return ring + slot(v, ring_rows) * stride; }
    };

    // The outputs whose windows lie inside the image read its rows in place (u8, u16).
    void cut_segments(Task& t) const {
        t.segment_count = 0;
        t.middle0 = t.middle1 = t.x1;
        if constexpr (!kFloat) in_place_outputs(t.x0, t.x1, W_, shape_.mw, shape_.ax, C_, t.middle0, t.middle1);
        if (t.middle0 == t.middle1) {
            t.segments[t.segment_count++] = Segment{t.x0, t.x1, false};
            return;
        }
        if (t.middle0 > t.x0) t.segments[t.segment_count++] = Segment{t.x0, t.middle0, false};
        t.segments[t.segment_count++] = Segment{t.middle0, t.middle1, true};
        if (t.middle1 < t.x1) t.segments[t.segment_count++] = Segment{t.middle1, t.x1, false};
    }

    // Runs sort(rows, outs, samples) on the virtual rows p.virtual_rows into p.outs over the task's padded
    // samples, segment by segment, left to right (a segment's kernel may write whole vectors past its end:
    // the next one writes them again).
    template <class Sort>
    void by_segments(const Task& t, Participant<T>& p, Sort&& sort) const {
        const std::size_t C = std::size_t(C_);
        for (int i = 0; i < t.segment_count; ++i) {
            const Segment& s = t.segments[i];
            const std::size_t at = std::size_t(s.out0 - t.x0) * C;
            p.rows.clear();
            for (long long v : p.virtual_rows) {
                if (!s.in_place) {
                    p.rows.push_back(t.ring_row(v, ring_rows_) + at);
                    continue;
                }
                const int r = map_index(v, H_, plan_.step.border);
                p.rows.push_back(r < 0 ? static_cast<const void*>(t.fill_row)
                                       : static_cast<const void*>(in_.row<T>(r) + std::size_t(s.out0 - shape_.ax) * C));
            }
            p.segment_outs.clear();
            for (void* o : p.outs) p.segment_outs.push_back(static_cast<K*>(o) + at);
            sort(p.rows.data(), p.segment_outs.data(), std::size_t(s.out1 - s.out0 + shape_.mw - 1) * C);
        }
    }

    void* out_row(int y, int x0) const { return out_.row<T>(y) + std::size_t(x0) * std::size_t(C_); }

    // Padded keys of virtual row v for the task's segments that read the ring: padded pixels [x0, x1 + mw - 1)
    // without the middle's. Returns whether a key is missing (f32 NaN, the border value included).
    bool load_row(const Task& t, long long v, K* dst) const {
        const int r = map_index(v, H_, plan_.step.border);
        const T* src = r < 0 ? nullptr : in_.row<T>(r);
        const int end = t.x1 + shape_.mw - 1;
        if (t.middle0 == t.middle1) return load_padded_keys<T>(src, cols_, t.x0, end, C_, fill_, dst);
        auto at = [&](int p) { return dst + std::size_t(p - t.x0) * std::size_t(C_); };
        const bool left = load_padded_keys<T>(src, cols_, t.x0, std::min(end, t.middle0 + shape_.mw - 1), C_, fill_, dst);
        return load_padded_keys<T>(src, cols_, t.middle1, end, C_, fill_, at(t.middle1)) || left;
    }

    // Generic shapes: sort each column kind, then run the interpreted selection program.
    void select_row(const Task& t, Participant<T>& p, int y, std::size_t n) {
        const long long top = (long long)y - shape_.ay;
        for (const ColumnKind& kind : shape_.kinds) {
            p.virtual_rows.clear();
            for (int j : kind.rows) p.virtual_rows.push_back(top + j);
            p.outs.clear();
            for (std::size_t i = 0; i < kind.rows.size(); ++i)
                p.outs.push_back(t.sorted + (std::size_t(kind.first_buffer) + i) * t.stride);
            const int h = int(kind.rows.size());
            by_segments(t, p, [&](const void* const* rows, void* const* outs, std::size_t count) {
                simd::rank_sort_columns(int(sizeof(K)), h, rows, outs, count);
            });
        }
        p.inputs.clear();
        for (const Column& c : shape_.columns) {
            const ColumnKind& kind = shape_.kinds[std::size_t(c.kind)];
            const std::size_t offset = std::size_t(c.dx) * std::size_t(C_);
            for (std::size_t i = 0; i < kind.rows.size(); ++i)
                p.inputs.push_back(t.sorted + (std::size_t(kind.first_buffer) + i) * t.stride + offset);
        }
        simd::RankProgramRun r;
        r.key_bytes = int(sizeof(K));
        r.ops = program_.ops.data();
        r.op_count = int(program_.ops.size());
        r.inputs = program_.inputs;
        r.output = program_.outputs[0];
        r.slot_of = slot_of_.data();
        r.slots = p.slots.get(std::size_t(std::max(slots_, 1)) * simd::rank_block_bytes);
        r.input_rows = p.inputs.data();
        r.out = out_row(y, t.x0);
        r.n = n;
        r.to_float = kFloat;
        simd::rank_run_program(r);
    }

    const RankPlan& plan_;
    ConstImageView in_;
    ImageView out_;
    int W_, H_, C_;
    Shape shape_;
    ColumnMap cols_;
    K fill_{};
    std::vector<RankCell> cells_;
    rank_net::Program program_;
    std::vector<std::uint16_t> slot_of_;
    int slots_ = 0;
    int ring_rows_ = 1;
    Tiling tiling_{1, 1, 1, 1, 0, 1};
    std::vector<Participant<T>> parts_;
};

} // namespace

std::string rank_network_detail(const RankPlan& plan) {
    if (!network_takes(plan)) return "";
    const Shape s = analyse(plan);
    if (s.square) return std::to_string(s.square) + "x" + std::to_string(s.square);
    return "cells=" + std::to_string(plan.count);
}

void run_rank_network(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out) {
    if (in.empty()) return;
    if (analyse(plan).square) return run_rank_square(pool, plan, in, out);
    with_type(plan.type, [&]<class T>() {
        NetworkJob<T> job(plan, in, out, pool.size());
        pool.run(job.tasks(), [&](int task, int who) { job.run(task, who); });
    });
}

} // namespace apron::cpu
