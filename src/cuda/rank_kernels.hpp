#pragma once
// The rank-filter kernel families behind rank_filter.cu (host side of each: rank_net.cuh, rank_hist.cuh), as
// parameter blocks and one launcher per sample type, instantiated in rank_net_{u8,u16,f32}.cu and
// rank_hist.cu so they compile side by side.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace apron::cuda::rank {

// ---- small windows: min/max networks over a shared-memory tile (rank_net.cuh) ----------------------------
//
// The tile is staged planar (one plane per channel) as 32-bit words: for u8 / u16 a word holds the samples of
// two rows `half` apart (lane 0 row y, lane 1 row y + half), so every VIMNMX.U16x2 serves two outputs; for
// f32 a word is one sample's order key (core/rank_value.hpp). Within a staged row, pixel p sits at slot
// (p % G) * plane + p / G (G = pixels per thread), so the G-strided reads of a warp fall on distinct banks.
constexpr int net_threads = 256;  // threads of a block (at most)
constexpr int net_max_cells = 49;

struct NetParams {
    const std::byte* in;
    std::size_t in_pitch;
    std::byte* out;
    std::size_t out_pitch;
    int width, height, channels, samples;  // samples = width * channels
    int mode;               // BorderMode, or -1: outside pixels read `outside`
    std::uint32_t outside;  // the constant border's sample: u8/u16 value, f32 key
    int lo, hi, dylo, dyhi;  // the element's extent relative to its anchor (columns, rows)
    int txp, ty;            // threads per channel across, thread rows
    int rows_per_thread;    // output rows a thread makes (per lane)
    int npx;                // output pixels a block makes across
    int half;               // output rows per lane in a block (u8 / u16: lane 1 starts `half` rows down)
    int blocks_y;           // block rows (the grid's y may be smaller: blocks loop)
    int sp, plane, rs, sr, cs;  // staged pixels a row, plane width (words), row stride, staged rows, channel stride
    int rank, count;        // the step's rank and the element's n
    int cells[net_max_cells];  // rank_sort: each cell's word offset from the thread's first (row, slot)
};

// rank_tile: full W x W squares (W = 3, 5, 7), median, 4 pixels x 2 rows a thread (rank_networks.cuh).
constexpr int tile_g = 4, tile_t = 2;
// rank_sort: any element of up to 7 x 7 cells and any rank: the window's words gathered, sorted by Batcher's
// odd-even merge sort of `bucket` (9, 16, 25, 36, 49) words (the rest pad at the top), the rank picked.
constexpr int sort_g = 1, sort_t = 4;

template <class T>
void launch_tile(int w, const NetParams& p, dim3 grid, std::size_t smem, cudaStream_t stream);
template <class T>
void launch_sort(int bucket, const NetParams& p, dim3 grid, std::size_t smem, cudaStream_t stream);

// ---- large windows: sliding histograms (rank_hist.cuh) ----------------------------------------------------
//
// One thread per output sample column; a block owns `nt` adjacent columns and walks down `rows` output rows.
// Its histogram of the window's keys (256 bins of the key's top byte, u16 counts) is updated per output row
// by the element's vertical runs (one key leaves at the top of each run, one enters at its bottom); a ring of
// the window's rows (+1) of keys is staged in shared memory (every row written twice, at slot s and s + ring,
// so a window's rows are contiguous from any top slot). The coarse bin of the rank is tracked (the bin m and
// the count below it move by the updates; a walk of a few bins finds the new one); u16 and f32 then resolve the
// remaining bytes by scanning the window (one pass per byte, into a second histogram).
constexpr int hist_max_runs = 384;

struct HistParams {
    const std::byte* in;
    std::size_t in_pitch;
    std::byte* out;
    std::size_t out_pitch;
    int width, height, channels, samples;
    int mode;
    std::uint32_t outside;  // the constant border's key
    int lo, dylo;           // the element's first column and row relative to the anchor
    int nt;                 // threads (output sample columns) a block
    int rows;               // output rows a block walks
    int ring;               // ring rows: the window's height + 1
    int rw;                 // ring row width in samples: nt + (hi - lo) * C
    int rank, count;
    int nruns;
    // The element's vertical runs, as offsets in ring samples from the thread's column of the ring's top row
    // (the row that leaves): x the key leaving (the run's top, one row up), y the key entering (its bottom).
    // The run's cells in the window are x + k * rw, k = 1 .. (y - x) / rw.
    int2 runs[hist_max_runs];
};

static_assert(sizeof(HistParams) <= 4000 && sizeof(NetParams) <= 4000, "kernel parameters: at most 4 KB");

template <class T>
void launch_hist(const HistParams& p, dim3 grid, std::size_t smem, cudaStream_t stream);

} // namespace apron::cuda::rank
