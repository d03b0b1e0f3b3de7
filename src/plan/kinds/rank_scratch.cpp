// The host scratch of the fast CPU rank kernels, as an upper bound the memory estimate can take before a run
// (plan/memory_estimate.cpp). The plan layer cannot see src/cpu, so this mirrors the sizes allocated by
// src/cpu/fast_rank.cpp (select), fast_rank_network.cpp, fast_rank_square.cpp, fast_rank_columns.cpp and
// fast_rank_runs.cpp, with the constants of fast_rows.hpp (Tiling, Scratch) and simd_rank.hpp: a change to
// those kernels' scratch belongs here too (tests/test_rank_memory.cpp checks the sums).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "plan/kinds/rank_kind.hpp"

namespace apron {
namespace {

using Bytes = std::uint64_t;

// fast_rows.hpp: a Tiling keeps 1 MiB of scratch rows in flight, in strips no narrower than 256 columns.
constexpr Bytes tiling_budget = Bytes(1) << 20;
constexpr long long narrowest_strip = 256;
// simd_rank.hpp: a key row's slack past its samples, a u8 column histogram's counts, a program slot.
constexpr Bytes key_row_slack = 1024;
constexpr Bytes column_record_counts = 288;
constexpr Bytes program_slot = 256;
// fast_rank_runs.cpp: Histogram16's three tiers of u32 counts, f32's low halves, the f32 key ring's limit.
constexpr Bytes histogram16_bytes = (65536 + 4096 + 256) * 4;
constexpr Bytes low_xor_bytes = 65536 * 2;
constexpr Bytes key_ring_limit = Bytes(16) << 20;
// A participant's record and vector headers (Histogram8's 1 KiB of counts lives in it).
constexpr Bytes participant_record = 4096;
// Growable vectors of row pointers and keys, per cell (vector growth doubles).
constexpr Bytes bookkeeping_per_cell = 128;
// A network call's tables besides its cells: the selection program (314 operations at most up to 7 x 7, 8
// bytes each with its slot) and the element's columns.
constexpr Bytes network_program_bytes = 4096;
constexpr Bytes bytes_per_run = 12;  // MorphChord, VerticalRun

struct KernelScratch {
    Bytes per_participant = 0;
    Bytes per_call = 0;
};

Bytes round_to_line(Bytes bytes) { return (bytes + 63) / 64 * 64; }

// A scratch row of keys with the kernels' slack (rank_row_stride, fast_rank_rows.hpp).
Bytes key_row(Bytes samples, Bytes key_bytes) { return round_to_line(samples * key_bytes + key_row_slack); }

// The widest strip a Tiling cuts (fast_rows.hpp): what fits the budget, then the width shared evenly.
Bytes widest_strip(int width, Bytes bytes_per_column, int halo) {
    const long long columns = std::max(width, 1);
    const long long fit = (long long)(tiling_budget / std::max<Bytes>(bytes_per_column, 1)) - halo;
    const long long most = std::min(columns, std::max(fit, narrowest_strip));
    const long long strips = (columns + most - 1) / most;
    return Bytes((columns + strips - 1) / strips);
}

// Padded pixels of a row: the histograms' W + 2 (mw + 1), more than the networks' W + mw - 1.
Bytes padded_width(int width, int element_width) { return Bytes(std::max(width, 0)) + 2 * Bytes(element_width + 1); }

// A call's column map (fast_rows.hpp's ColumnMap: an int a padded pixel).
Bytes column_map_bytes(const RankPlan& p, const ImageShape& in) {
    return padded_width(in.width, p.step.element.width) * sizeof(int);
}

// A network call's cells (RankCell) and program.
Bytes network_tables(const RankPlan& p, const ImageShape& in) {
    return column_map_bytes(p, in) + Bytes(p.count) * 8 + network_program_bytes;
}

// The element's vertical runs (fast_rank_runs.cpp's vertical_runs).
Bytes vertical_run_count(const Mask& e) {
    Bytes runs = 0;
    for (int i = 0; i < e.width; ++i)
        for (int j = 0; j < e.height; ++j)
            if (e.at(i, j) != 0 && (j == 0 || e.at(i, j - 1) == 0)) ++runs;
    return runs;
}

// A runs call's copy of the chords and its vertical runs (built by push_back: twice their bytes at most).
Bytes runs_tables(const RankPlan& p, const ImageShape& in) {
    const Bytes runs = Bytes(p.chords.size()) + 2 * vertical_run_count(p.step.element);
    return column_map_bytes(p, in) + runs * bytes_per_run;
}

// fast_rank.cpp: each participant's window of keys.
KernelScratch select_scratch(const RankPlan& p) { return {participant_record + Bytes(p.count) * 8, 0}; }

// Sorted rows per output row: one per row of each distinct column of the element (fast_rank_network.cpp's
// analyse).
int network_sorted_rows(const Mask& e) {
    std::vector<std::vector<int>> kinds;
    int rows = 0;
    for (int i = 0; i < e.width; ++i) {
        std::vector<int> column;
        for (int j = 0; j < e.height; ++j)
            if (e.at(i, j) != 0) column.push_back(j);
        if (column.empty() || std::find(kinds.begin(), kinds.end(), column) != kinds.end()) continue;
        rows += int(column.size());
        kinds.push_back(std::move(column));
    }
    return rows;
}

// fast_rank_network.cpp: a ring of mh padded key rows and its fill row, the sorted columns, the program's
// slots (at most one a cell: checked for every set of column heights up to 7 x 7).
KernelScratch network_scratch(const RankPlan& p, const ImageShape& in) {
    const Mask& e = p.step.element;
    const Bytes key = bytes_per_sample(p.type), channels = Bytes(in.channels);
    const int sorted = network_sorted_rows(e);
    const Bytes strip = widest_strip(in.width, Bytes(e.height + sorted) * channels * key, e.width - 1);
    const Bytes row = key_row((strip + Bytes(e.width) - 1) * channels, key);
    const Bytes rows = row * Bytes(e.height + 1 + std::max(sorted, 1));
    const Bytes slots = Bytes(std::max(p.count, 1)) * program_slot;
    return {participant_record + rows + slots + Bytes(p.count) * bookkeeping_per_cell, network_tables(p, in)};
}

// fast_rank_square.cpp: a chunk's rows (chunk + k - 1), each a padded copy or its two ends, and one fill row.
KernelScratch square_scratch(const RankPlan& p, const ImageShape& in) {
    const int k = p.step.element.width;
    const Bytes key = bytes_per_sample(p.type), channels = Bytes(in.channels);
    const Bytes chunk = k == 3 ? 8 : 16;
    const Bytes strip = widest_strip(in.width, (chunk + Bytes(k)) * channels * key * 4, k - 1);
    const Bytes rows = chunk + Bytes(k) - 1;
    // Two pieces a row (a row's ends hold at most 2 (k - 1) pixels beyond the strip), each rounded up.
    const Bytes row_pieces = (strip + 2 * Bytes(k - 1)) * channels * key + 2 * (key_row_slack + 63);
    const Bytes fill_row = key_row((strip + Bytes(k) - 1) * channels, key);
    return {participant_record + rows * row_pieces + fill_row + Bytes(p.count) * bookkeeping_per_cell, network_tables(p, in)};
}

// fast_rank_columns.cpp: a histogram record per padded column of the strip (u16 counts under 65536 cells),
// and the window's record. One channel at a time: channels do not add.
KernelScratch columns_scratch(const RankPlan& p, const ImageShape& in) {
    const int mw = p.step.element.width;
    const Bytes record = column_record_counts * (p.count < 65536 ? 2 : 4);
    const Bytes strip = widest_strip(in.width, record, mw - 1);
    const Bytes records = round_to_line((strip + Bytes(mw) - 1) * record) + round_to_line(record);
    return {participant_record + records, column_map_bytes(p, in)};
}

// fast_rank_runs.cpp, f32: a ring of the element's rows (its dy range, plus one) of one channel's keys across
// the padded width W + 2 (mw + 1); rings over 16 MiB are not made (the image's rows are read instead).
Bytes f32_key_ring(const RankPlan& p, const ImageShape& in) {
    if (p.chords.empty()) return 0;
    const auto [lowest, highest] = std::minmax_element(p.chords.begin(), p.chords.end(),
                                                       [](const MorphChord& a, const MorphChord& b) { return a.dy < b.dy; });
    const Bytes slots = Bytes(highest->dy - lowest->dy + 2);
    const Bytes ring = slots * key_row(padded_width(in.width, p.step.element.width), 4);
    return ring <= key_ring_limit ? ring : 0;
}

// fast_rank_runs.cpp: Huang's histogram (u8's inline in the participant's record; u16 and f32 three tiers,
// f32 with its low halves and key ring), the gathered keys and a row pointer a run.
KernelScratch runs_scratch(const RankPlan& p, const ImageShape& in) {
    Bytes histogram = 0;
    if (p.type == PixelType::u16) histogram = histogram16_bytes;
    if (p.type == PixelType::f32) histogram = histogram16_bytes + low_xor_bytes + f32_key_ring(p, in);
    const Bytes keys = (Bytes(p.count) + 64) * 4, row_pointers = Bytes(p.chords.size()) * sizeof(void*);
    return {participant_record + histogram + keys + row_pointers, runs_tables(p, in)};
}

// The kernels rank_kernel_for (fast_rank.cpp) may pick for this plan: the same tests, except whether a square's
// selection is compiled (sanitizer builds compile the medians only), so a full 3, 5 or 7 square counts both.
std::vector<KernelScratch> candidate_kernels(const RankPlan& p, const ImageShape& in) {
    std::vector<KernelScratch> kernels{select_scratch(p)};
    // fast_rank_volume.cpp: a participant's tiered histogram (16 + 256 bins for u8, to 65536 for u16 and f32; f32's
    // low halves a bin),
    // the keys of one bin and a source row a run; per call the runs and the column map.
    if (p.step.depth > 1) {
        const Bytes histogram = (p.type == PixelType::u8 ? 16 + 256 : 16 + 256 + 4096 + 65536) * 4 +
                                (p.type == PixelType::f32 ? low_xor_bytes : 0);
        const Bytes runs = Bytes(p.chords.size());
        return {{participant_record + histogram + Bytes(p.count) * 8 + runs * sizeof(void*),
                 runs * 16 + (Bytes(std::max(in.width, 0)) + Bytes(p.step.element.width) + 1) * 4}};
    }
    const Mask& e = p.step.element;
    if (p.count < 1) return kernels;
    const bool full = p.count == e.width * e.height;
    if (p.algorithm == RankAlgorithm::network) {
        kernels.push_back(network_scratch(p, in));
        const bool may_be_square = full && e.width == e.height && (e.width == 3 || e.width == 5 || e.width == 7);
        if (may_be_square) kernels.push_back(square_scratch(p, in));
    } else if (p.type == PixelType::u8 && full) {
        kernels.push_back(columns_scratch(p, in));
    } else {
        kernels.push_back(runs_scratch(p, in));
    }
    return kernels;
}

} // namespace

std::uint64_t rank_cpu_scratch_per_thread(const RankPlan& plan, const ImageShape& input) {
    Bytes most = 0;
    for (const KernelScratch& k : candidate_kernels(plan, input)) most = std::max(most, k.per_participant + k.per_call);
    return most;
}

} // namespace apron
