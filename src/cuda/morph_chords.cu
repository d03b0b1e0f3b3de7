// Morphology with any flat structuring element on CUDA: the element is a list of chords (runs of set cells,
// planned in plan/morph_decompose.cpp), each chord the extremum of two reads of a power-of-two run table
// (Urbach-Wilkinson), all in one kernel over a shared-memory tile.
//
// Result (SPEC.md, Morphology): out(x,y) = max (min) over the set cells (i,j) of in(x + i - ax, y + j - ay),
// outside pixels ignored (read as the identity, core/morph_value.hpp) or read through the border. Max and
// min are exact and associative, so the result is the reference's value however the cells are grouped. f32:
// NaN is a missing sample; fmaxf / fminf from the NaN identity skip it, and an element over NaN and ignored
// pixels only gives NaN (-inf / +inf stay as they are), as morph_rect.cu does.
//
// Data layout. Shared memory holds 32-bit words; word s of a staged row is the pair of samples (s, s+1)
// for u8 / u16 (u8 widened to u16 lanes, so one VIMNMX.U16x2 - __vmaxu2 - does two samples: packed u8x4
// would need six instructions per __vmaxu4 on sm_90) and sample s for f32. A chord's reads start at any
// sample, so u8 / u16 rows keep both alignments: plane 0 the words of even s, plane 1 those of odd s (each
// warp then reads consecutive words of one plane: no bank conflicts). The lanes of a word are samples s
// and s+1 whatever the channel count C: a tap moves by dx*C samples, so every lane stays in its channel.
//
// One block of 256 threads makes a tile of gx words (gx*2 u8/u16 samples, gx f32) by th = (256/gx)*8 rows;
// thread = one word column x 8 rows (rows_per_thread). gx (32..256) is chosen per element and channel
// count for the least staged halo with the tile in shared memory (choose_geometry). The staged region:
// rows y0 + min dy .. y0 + th - 1 + max dy, samples x0 + lo*C .. (lo, hi: the element's first and last
// set column relative to the anchor), read through map_index for the border modes, the identity (ignore)
// or the constant value outside. Two ways to build the tables T_p, p = 1, 2, 4, .. <= the longest chord:
//  - register-built (Reg, when (P-1)*C is at most 15..28 samples, reg_reach_of, and the kept tables fit
//    112 KB): a thread loads `segment` positions of a staged row plus (P-1)*C from global memory (L1
//    serves the overlap), doubles them in registers (T_2p(s) = ext(T_p(s), T_p(s + p*C))) and stores
//    each table some chord reads, on its chords' rows only, each table in its own region. One barrier, then
//    every chord: acc = ext(acc, T_p(x + dx*C, y + dy), T_p(x + (dx + len - p)*C, y + dy)) with p the
//    largest power of two <= len: one VIMNMX3.U16x2 (__vimax3_u16x2) and two loads per chord and word
//    (one load when len == p).
//  - in place (larger reach, or tiles too big): stage T_1; for p = 1, 2, 4, ..: apply the chords of power
//    p, then T_2p(s) = ext(T_p(s), T_p(s + p*C)) in place, on the rows and columns later chords read, in
//    chunks of 1024 items, every thread reading its items before a barrier and writing after it (reads only
//    go forward along a row, so no item reads a word an earlier chunk has already rewritten).
// The accumulated words leave as u8 pairs / u16 pairs (2- or 4-byte stores when aligned) or f32.
//
// Cost model (shared-memory accesses per output pixel; the limit: 132 SMs x 32 words per clock x 1.98 GHz
// = 8.4 T accesses/s on the H200), disk:7 (15 chords, tables 1, 4, 8 kept) u8 gray: gx = 32, 64 x 64
// outputs per block, 78 staged rows of 78 samples; register-built: stores 4.3 + chords 14.0 (28 reads a
// word) = 18.3, so ~450 Gpix/s at best (71 KB: 3 blocks per SM by shared memory); global loads 2.5 per
// pixel, through L1. In place it would be 2.2 + 12.5 (doubling: 3 levels x 2 planes x 3 accesses) + 14.0
// = 28.7, ~290 Gpix/s. Register-built, C = 3 / 4: ~430 / 420; disk:3: ~1000 (then DRAM bound, 2 B/pixel:
// ~2 Tpix/s). disk:15 (in place for C > 1): C = 1 ~230, C = 3 ~120. Issue: ~60 instructions per word.
// ptxas (sm_90): in place 40 registers, no spills; register-built 76-100 registers (ptxas holds C = 1 and
// 3 at 80, 3 blocks per SM: u8 C = 1 spills 4 bytes, C = 3 40 bytes, in the table build, once a segment).
//
// Measured (H200, 8192^2 u8, thread_loads): disk:7 130 / 26 / 18 Gpix/s at C = 1 / 3 / 4, ellipse 7x7 167
// / 44 / 23: 3.5x under the model above, and 7x7 barely faster than 15x15, so a fixed cost per staged
// sample dominates, not the chords. Counted: each table-build item (18 positions of a row) makes
// segment + 1 + (P-1)*C byte loads through read_sample (bounds tests and a branch each, ~6
// instructions), and a warp's 32 items span ~6 rows x 90 bytes, so each of its loads touches ~11
// 128-byte lines (a wavefront each: the L1/shared path's 32 words): ~27 word-equivalents per pixel for
// disk:7 C = 1 (C = 4: 23 loads a pixel, ~190), against the chords' 14 shared words and 4.3 table
// stores. Two schedules (chord_schedule.hpp; the dispatch table picks one per plan, APRON_CHORDS_VARIANT=0|1
// forces one; counts per output pixel, u8 disk:7 C = 1: instructions, words of the L1/shared path):
//  thread_loads, as above: 77, 45. Every staged sample goes through read_sample's border tests, in the
//    in-place path too.
//  staged_rows: one warp per staged row copies the raw samples into shared memory (coalesced; inside the
//    image 4 bytes a lane: aligned LDG.32 + funnel shift + STS.32), in chunks of rows small enough to keep
//    the tables' blocks per SM; the items build the tables from there (raw_positions: u8 one LDS.32 + one
//    funnel shift per 4 samples, one PRMT a word), column-major (word w of table row q at w * rs + q, rs
//    odd: a thread's 8 output rows are consecutive words, so the chord loop adds one address per chord
//    instead of one per row and read; the build walks down columns, lanes on consecutive rows, raw pitch
//    odd: no bank conflicts); chords of equal offsets on consecutive rows (ellipses' and crosses' runs) read
//    each row once, a run of k chords 2 (k + 7) reads instead of 16 k: 61, 18. Where column-major tables
//    and raw rows do not fit shared memory together, the tables are row-major; where the raw rows do not
//    fit at all, the items load from global memory, without border tests in blocks inside the image (as
//    the in-place path does there).
// The five schedules measured between these two are described in docs/perf-notes.md ("Chord kernel
// schedules removed (issue 27)").
#include "cuda/launch_record.hpp"
#include "cuda/morph_chords.hpp"

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/dispatch.hpp"
#include "cuda/device_limits.hpp"
#include "cuda/dispatch_table.hpp"
#include "cuda/morph_chords_kernel.cuh"
#include "plan/morph_decompose.hpp"

namespace apron::cuda {
namespace {

using namespace chords;

// ---- host ----------------------------------------------------------------------------------------------
std::optional<ChordSchedule> schedule_override;  // set_morph_chords_schedule; none: the dispatch table's

int device_attribute(cudaDeviceAttr attr, int fallback) {
    int device = 0, value = 0;
    if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
        cudaGetLastError();
        return fallback;
    }
    return value;
}

// The element's extent relative to the anchor: columns lo..hi, rows dy_lo..dy_hi, longest chord.
struct Extent {
    int lo = 0, hi = 0, dy_lo = 0, dy_hi = 0, longest = 1;
};

Extent extent_of(const std::vector<MorphChord>& chords) {
    Extent e{chords[0].dx, chords[0].dx + chords[0].length - 1, chords[0].dy, chords[0].dy, 1};
    for (const MorphChord& c : chords) {
        e.lo = std::min(e.lo, c.dx);
        e.hi = std::max(e.hi, c.dx + c.length - 1);
        e.dy_lo = std::min(e.dy_lo, c.dy);
        e.dy_hi = std::max(e.dy_hi, c.dy);
        e.longest = std::max(e.longest, c.length);
    }
    return e;
}

struct Geometry {
    int gx = 0, th = 0, tile_samples = 0, rows = 0, pitch = 0, half = 0;
    std::size_t bytes = 0;
    double staged_per_output = 0;  // staged words per output word: the halo's cost
};

// Register-built tables kept at once: `tables` of them, their row spans (max dy - min dy of their chords)
// adding to `span` (0 tables: the in-place tables, one staged tile).
struct Kept {
    int tables = 0, span = 0;
};

Geometry make_geometry(int gx, bool pairs, int C, const Extent& e, Kept kept) {
    Geometry g;
    g.gx = gx;
    g.th = (block_threads / gx) * rows_per_thread;
    g.tile_samples = gx * (pairs ? 2 : 1);
    const int staged = g.tile_samples + (e.hi - e.lo) * C;  // samples every output of the tile reads
    g.rows = g.th + e.dy_hi - e.dy_lo;
    g.half = pairs ? (staged + 1) / 2 : 0;
    g.pitch = pairs ? 2 * g.half : staged;
    const int rows = kept.tables ? kept.tables * g.th + kept.span : g.rows;
    g.bytes = std::size_t(rows) * g.pitch * sizeof(u32);
    g.staged_per_output = double(g.rows) * g.pitch / (double(gx) * g.th);
    return g;
}

// The tile with the least halo among those of up to 56 KB (four blocks, 32 warps per SM), else 112 KB
// (two blocks), else the opt-in limit (register-built tables: at most 112 KB); gx = 0 when none fits.
Geometry choose_geometry(bool pairs, int C, const Extent& e, Kept kept = {}) {
    static const int limit = smem_optin_limit();
    for (std::size_t budget : {std::size_t(56) << 10, std::size_t(112) << 10, std::size_t(limit)}) {
        if (kept.tables && budget > (std::size_t(112) << 10)) break;
        Geometry best;
        for (int gx : {32, 64, 128, 256}) {
            const Geometry g = make_geometry(gx, pairs, C, e, kept);
            if (g.bytes <= budget && g.bytes <= std::size_t(limit) &&
                (best.gx == 0 || g.staged_per_output < best.staged_per_output))
                best = g;
        }
        if (best.gx) return best;
    }
    return {};
}

int level_of(int length) {
    int l = 0;
    while ((2 << l) <= length) ++l;
    return l;
}

} // namespace

void set_morph_chords_schedule(std::optional<ChordSchedule> schedule) { schedule_override = schedule; }

bool morph_chords_supports(const MorphPlan& plan) {
    if (plan.algorithm != MorphAlgorithm::chords || plan.chords.empty() || plan.chords.size() > std::size_t(max_chords))
        return false;
    const Extent e = extent_of(plan.chords);
    if (e.hi - e.lo >= max_chord_side || e.dy_hi - e.dy_lo >= max_chord_side || e.longest > max_chord_side) return false;
    const bool pairs = plan.type != PixelType::f32;
    for (int C = 1; C <= max_channels; ++C)
        if (!choose_geometry(pairs, C, e).gx) return false;
    return true;
}

void launch_morph_chords(const MorphPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream) {
    if (in.empty()) return;
    const int C = in.channels();
    const bool pairs = plan.type != PixelType::f32;
    const Extent e = extent_of(plan.chords);
    const int levels = level_of(e.longest) + 1;
    // Tables kept at once by the register path: those some chord reads, each on its chords' rows.
    int dy_min[max_levels], dy_max[max_levels];
    for (int l = 0; l < max_levels; ++l) dy_min[l] = 1 << 20, dy_max[l] = -(1 << 20);
    for (const MorphChord& c : plan.chords) {
        const int l = level_of(c.length);
        dy_min[l] = std::min(dy_min[l], c.dy);
        dy_max[l] = std::max(dy_max[l], c.dy);
    }
    Kept kept;
    for (int l = 0; l < levels; ++l)
        if (dy_min[l] <= dy_max[l]) ++kept.tables, kept.span += dy_max[l] - dy_min[l];
    Geometry g;
    const bool reg = ((1 << (levels - 1)) - 1) * C <= reg_reach_of(C) && (g = choose_geometry(pairs, C, e, kept)).gx != 0;
    if (!reg) g = choose_geometry(pairs, C, e);
    const bool dilate = plan.step.kind == MorphKind::dilate;
    Params p{};
    p.in = in.data;
    p.in_pitch = in.pitch;
    p.out = out.data;
    p.out_pitch = out.pitch;
    p.width = in.width();
    p.height = in.height();
    p.planes = in.shape.depth;  // a volume's planes, one launch (runs_planes)
    p.samples = in.width() * C;
    const bool mapped = plan.step.border && *plan.step.border != BorderMode::constant;
    p.mode = mapped ? int(*plan.step.border) : -1;
    p.gx = g.gx;
    p.th = g.th;
    p.tile_samples = g.tile_samples;
    p.rows = g.rows;
    p.pitch = g.pitch;
    p.half = g.half;
    p.sx_lo = e.lo * C;
    p.y_lo = e.dy_lo;
    p.blocks_x = (p.samples + g.tile_samples - 1) / g.tile_samples;
    const int blocks_y = (p.height + g.th - 1) / g.th;
    // Chords by level (their table), in plan order (by dy) within one.
    std::vector<int> order(plan.chords.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return level_of(plan.chords[a].length) < level_of(plan.chords[b].length); });
    p.levels = levels;
    p.positions = pairs ? 2 * g.half : g.pitch;
    p.load = (pairs ? segment<true> + 1 : segment<false>) + ((1 << (levels - 1)) - 1) * C;
    // Register path: the kept tables one after the other, each on its chords' rows; row-major (rs = 0),
    // or column-major with an odd column stride rs (staged_rows).
    int rows_max = 0;
    for (int l = 0; l < max_levels; ++l) {
        const bool keep = reg && l < levels && dy_min[l] <= dy_max[l];
        p.store_row0[l] = keep ? dy_min[l] - e.dy_lo : 0;
        p.store_rows[l] = keep ? dy_max[l] - dy_min[l] + g.th : 0;
        rows_max = std::max(rows_max, p.store_rows[l]);
    }
    const auto lay_out = [&](int rs) {
        p.rs = rs;
        int words = 0;
        for (int l = 0; l < max_levels; ++l) {
            p.store_base[l] = words;
            words += (rs && p.store_rows[l] ? rs : p.store_rows[l]) * g.pitch;
        }
        return words;
    };
    p.schedule = schedule_override.value_or(chords_schedule_for(plan, C));
    record_launch({"cuda.morph_chords", std::string("schedule=") + name_of(p.schedule)});
    const bool staged = reg && p.schedule == ChordSchedule::staged_rows;
    int table_words = lay_out(staged ? rows_max | 1 : 0);
    std::size_t bytes = g.bytes;
    if (staged) {
        // Raw staging: (segs - 1) * seg + N samples a row (every load of the items, as the kernel's N).
        const int seg = pairs ? segment<true> : segment<false>;
        const int n = seg + reg_reach_of(C) + (pairs ? 1 : 0);
        const int segs = (p.positions + seg - 1) / seg;
        const int sample_bytes = int(bytes_per_sample(plan.type));
        const std::size_t sm = std::size_t(device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, 228 << 10));
        const std::size_t reserved = std::size_t(device_attribute(cudaDevAttrReservedSharedMemoryPerBlock, 1024));
        p.raw_cols = (segs - 1) * seg + n + (sample_bytes == 1 ? 9 : sample_bytes == 2 ? 2 : 0);  // raw_positions' reach
        for (;;) {
            // whole words a row; an odd number of them for the column-major build (lanes down a column)
            int raw_words = (p.raw_cols * sample_bytes + 3) / 4;
            if (p.rs) raw_words |= 1;
            p.raw_pitch = raw_words * 4 / sample_bytes;
            p.raw_base = table_words;
            p.raw_rows = g.rows;
            const std::size_t tables = std::size_t(table_words) * sizeof(u32);
            const auto with_rows = [&](int rows) { return tables + std::size_t(rows) * p.raw_pitch * sample_bytes; };
            // Chunks of rows small enough to keep the blocks per SM that the tables alone allow (1 KB reserved a
            // block), at least 8 rows.
            const std::size_t blocks = std::max<std::size_t>(1, sm / (tables + reserved));
            while (p.raw_rows > 8 && blocks * (with_rows(p.raw_rows) + reserved) > sm) p.raw_rows = std::max(8, p.raw_rows / 2);
            bytes = with_rows(p.raw_rows);
            if (bytes <= std::size_t(smem_optin_limit()) && tables <= (std::size_t(112) << 10)) break;
            if (p.rs) {  // column-major tables too big: row-major
                table_words = lay_out(0);
                continue;
            }
            bytes = g.bytes;  // no room for the raw rows: global loads (the kernel's inside_loads)
            p.raw_cols = 0;
            break;
        }
    }
    // Word offset of a read starting `s` staged samples after the thread's first output sample (even for
    // pairs), in staged row `r` of the tile (in-place tables) or of table `l` (register path), relative to
    // the thread's first word (row0 * pitch + col, column-major: col * rs + row0).
    auto word_offset = [&](int l, int r, int s) {
        const int word = pairs ? (s & 1) * g.half + (s >> 1) : s;
        if (reg && p.rs) return p.store_base[l] + word * p.rs + r - p.store_row0[l];
        const int row = reg ? p.store_base[l] / g.pitch + r - p.store_row0[l] : r;
        return row * g.pitch + word;
    };
    for (int l = 0; l < max_levels; ++l) p.level_end[l] = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
        const MorphChord& c = plan.chords[order[k]];
        const int level = level_of(c.length), power = 1 << level, r = c.dy - e.dy_lo;
        p.chord_a[k] = word_offset(level, r, (c.dx - e.lo) * C);
        p.chord_b[k] = power == c.length ? -1 : word_offset(level, r, (c.dx + c.length - power - e.lo) * C);
        p.chord_run[k] = 1;
        for (int l = level; l < max_levels; ++l) p.level_end[l] = int(k) + 1;
    }
    if (staged && p.rs && p.raw_cols) {
        // Runs: chords of one column offset and length on consecutive rows (the register path reads only
        // level_end[max_levels - 1], the entry count).
        std::vector<int> by_column(order);
        std::stable_sort(by_column.begin(), by_column.end(), [&](int a, int b) {
            const MorphChord &x = plan.chords[a], &y = plan.chords[b];
            return std::tie(x.dx, x.length, x.dy) < std::tie(y.dx, y.length, y.dy);
        });
        int n = 0;
        for (std::size_t i = 0; i < by_column.size(); ++i) {
            const MorphChord& c = plan.chords[by_column[i]];
            if (n > 0 && i > 0) {
                const MorphChord& last = plan.chords[by_column[i - 1]];
                if (last.dx == c.dx && last.length == c.length && last.dy + 1 == c.dy) {
                    ++p.chord_run[n - 1];
                    continue;
                }
            }
            const int level = level_of(c.length), power = 1 << level, r = c.dy - e.dy_lo;
            p.chord_a[n] = word_offset(level, r, (c.dx - e.lo) * C);
            p.chord_b[n] = power == c.length ? -1 : word_offset(level, r, (c.dx + c.length - power - e.lo) * C);
            p.chord_run[n] = 1;
            ++n;
        }
        p.level_end[max_levels - 1] = n;
    }
    // Where each table is needed, from the largest down: the staged rows and the last sample position
    // its chords read (output samples 0 .. tile_samples - 1 plus the read's offset), and for a table
    // that builds the next one, that one's range shifted by the next one's half length.
    int row_lo = g.rows, row_hi = 0, last = -1;
    for (int l = p.levels - 1; l >= 1; --l) {
        if (l + 1 < p.levels) last += (1 << l) * C;  // T_2^(l+1)(s) reads T_2^l(s + 2^l C)
        for (const MorphChord& c : plan.chords)
            if (level_of(c.length) == l) {
                row_lo = std::min(row_lo, c.dy - e.dy_lo);
                row_hi = std::max(row_hi, c.dy - e.dy_lo + g.th);
                const int power = 1 << l;
                last = std::max(last, g.tile_samples - 1 + (std::max(c.dx, c.dx + c.length - power) - e.lo) * C);
            }
        p.level_row0[l] = row_lo;
        p.level_rows[l] = std::max(0, row_hi - row_lo);
        p.level_items[l] = pairs ? std::min(g.half, last / 2 + 1) : std::min(g.pitch, last + 1);
    }
    with_type(plan.type, [&]<class T>() {
        // Outside pixels: the identity when ignored, the border value (as the type stores it) for constant.
        const T identity = morph_identity<T>(dilate);
        const T outside = plan.step.border == BorderMode::constant ? store_pixel<T>(plan.step.border_value) : identity;
        if constexpr (std::is_same_v<T, float>) {
            std::memcpy(&p.outside, &outside, 4);
            std::memcpy(&p.identity, &identity, 4);
        } else {
            p.outside = u32(outside);
            p.identity = u32(identity) | (u32(identity) << 16);
        }
        const int blocks = p.blocks_x * blocks_y;
        chords::launch<T>(dilate, reg, C, p, reg ? bytes : g.bytes, blocks, stream);
    });
}

} // namespace apron::cuda
