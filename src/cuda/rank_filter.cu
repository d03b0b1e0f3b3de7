// Rank filters on the GPU (SPEC.md "Rank"). The families, as choose_rank picks them (the plan names the
// family and its form; launch_rank records what ran, cuda/launch_record.hpp):
//  - rank_tile (rank_net.cuh): medians of full 3x3, 5x5 and 7x7 squares (the planner's `network`): generated
//    min/max networks shared by a thread's 4 x 2 outputs (x 2 rows in 16-bit lanes for u8 / u16).
//  - rank_sort (rank_net.cuh): any other element within 7 x 7 cells and any rank (`network`): the window's
//    words sorted in registers (Batcher), the rank picked.
//  - rank_hist (rank_hist.cuh): larger elements (`histogram`, and f32's `select`): per-column sliding
//    histograms of the key's top byte over the element's vertical runs; u16 and f32 resolve their lower bytes
//    by scanning the window (1 and 3 passes).
//  - rank_bits (this file): anything the others do not take (elements of more than 65535 cells or 384 columns,
//    rings past the shared memory): one thread per output sample finds the rank-th key by a radix select over
//    the key's bits, most significant first, counting at each bit the window's keys below the trial prefix (a
//    pass over the window read through the border), so it costs bits x n reads and needs no memory.
// Every one gives the rank-th sample in the order of core/rank_value.hpp, so they are bit-identical.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "core/rank_value.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_view.hpp"
#include "cuda/rank_select.cuh"
#include "cuda/launch_record.hpp"
#include "cuda/rank_filter.hpp"
#include "cuda/rank_kernels.hpp"

namespace apron::cuda {
namespace {

template <class T>
__device__ __forceinline__ std::uint32_t key_at(const DeviceView& v, long long x, long long y, int c, BorderMode mode,
                                                std::uint32_t outside) {
    const int xi = map_index(x, v.width, mode), yi = map_index(y, v.height, mode);
    if (xi < 0 || yi < 0) return outside;
    return rank_key(reinterpret_cast<const T*>(v.data + std::size_t(yi) * v.pitch)[std::size_t(xi) * v.channels + c]);
}

template <class T>
__global__ void rank_bits(DeviceView in, std::byte* out, std::size_t out_pitch, const int2* cells, int n, int rank,
                          BorderMode mode, std::uint32_t outside, int row0) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x, y = row0 + int(blockIdx.y * blockDim.y + threadIdx.y);
    if (k >= in.width * in.channels || y >= in.height) return;
    const int x = k / in.channels, c = k % in.channels;
    T* o = reinterpret_cast<T*>(out + std::size_t(y) * out_pitch) + k;
    *o = select_rank<T>(n, rank, [&](int t) { return key_at<T>(in, x + cells[t].x, y + cells[t].y, c, mode, outside); });
}

void launch_rank_bits(const RankPlan& p, ConstImageView in, ImageView out, cudaStream_t stream) {
    std::vector<int2> cells;
    for (const MorphChord& run : p.chords)
        for (int i = 0; i < run.length; ++i) cells.push_back(make_int2(run.dx + i, run.dy));
    int2* d_cells = nullptr;
    APRON_CUDA_CHECK(cudaMallocAsync(&d_cells, cells.size() * sizeof(int2), stream));
    APRON_CUDA_CHECK(cudaMemcpyAsync(d_cells, cells.data(), cells.size() * sizeof(int2), cudaMemcpyHostToDevice, stream));
    const dim3 block(64, 4);
    const unsigned blocks_y = unsigned((out.height() + 3) / 4);
    cudaError_t launched = cudaSuccess;
    for (unsigned by = 0; by < blocks_y && launched == cudaSuccess; by += 65535u) {  // grid.y is at most 65535
        const dim3 grid(unsigned((out.width() * out.channels() + 63) / 64), std::min(65535u, blocks_y - by));
        with_type(p.type, [&]<class T>() {
            rank_bits<T><<<grid, block, 0, stream>>>(device_view(in), out.data, out.pitch, d_cells, int(cells.size()),
                                                     p.step.rank, p.step.border, rank_key(store_pixel<T>(p.step.border_value)),
                                                     int(by) * 4);
        });
        launched = cudaGetLastError();
    }
    cudaFreeAsync(d_cells, stream);  // stream-ordered: after the kernel
    APRON_CUDA_CHECK(launched);
}

// ---- choosing ----------------------------------------------------------------------------------------------

// The element's extent relative to its anchor.
struct Extent {
    int lo = 0, hi = 0, dylo = 0, dyhi = 0;
};

Extent extent_of(const std::vector<MorphChord>& chords) {
    Extent e{chords[0].dx, chords[0].dx + chords[0].length - 1, chords[0].dy, chords[0].dy};
    for (const MorphChord& c : chords) {
        e.lo = std::min(e.lo, c.dx);
        e.hi = std::max(e.hi, c.dx + c.length - 1);
        e.dylo = std::min(e.dylo, c.dy);
        e.dyhi = std::max(e.dyhi, c.dy);
    }
    return e;
}

// A vertical run of set cells: column dx, rows dy0 .. dy1 (relative to the anchor).
struct VRun {
    int dx, dy0, dy1;
};

std::vector<VRun> vertical_runs(const Mask& e) {
    std::vector<VRun> runs;
    for (int i = 0; i < e.width; ++i)
        for (int j = 0; j < e.height; ++j) {
            if (e.at(i, j) == 0) continue;
            int k = j;
            while (k + 1 < e.height && e.at(i, k + 1) != 0) ++k;
            runs.push_back({i - e.anchor_x, j - e.anchor_y, k - e.anchor_y});
            j = k;
        }
    return runs;
}

enum class Form { tile, sort, hist, bits };

constexpr int hist_nt = 64;                            // threads (sample columns) a histogram block
constexpr std::size_t hist_smem_budget = 160u << 10;  // within every sm_80+ device's opt-in limit

// Shared memory of the histogram kernel for C channels and this extent (0: the element does not fit).
std::size_t hist_smem(PixelType t, int C, const Extent& e, int nt) {
    const std::size_t key = t == PixelType::u8 ? 1 : t == PixelType::u16 ? 2 : 4;
    const std::size_t hist = std::size_t(128) * nt * 4 * (t == PixelType::u8 ? 1 : 2);
    const std::size_t ring = std::size_t(e.dyhi - e.dylo + 2) * std::size_t(nt + (e.hi - e.lo) * C);
    return hist + 2 * ring * key;
}

int full_square_side(const RankPlan& p) {
    const Mask& m = p.step.element;
    if (m.width != m.height || (m.width != 3 && m.width != 5 && m.width != 7)) return 0;
    if (m.anchor_x != m.width / 2 || m.anchor_y != m.height / 2 || p.count != m.width * m.height) return 0;
    return m.width;
}

struct Pick {
    Form form = Form::bits;
    int side = 0;    // tile: W
    int bucket = 0;  // sort: the network's size
    int runs = 0;    // hist: vertical runs
};

Pick pick(const RankPlan& p, const ImageShape& shape) {
    Pick k;
    if (p.chords.empty() || p.count <= 0) return k;
    const Extent e = extent_of(p.chords);
    const bool small = e.hi - e.lo < 7 && e.dyhi - e.dylo < 7 && p.count <= rank::net_max_cells;
    if (p.algorithm == RankAlgorithm::network && small) {
        k.side = full_square_side(p);
        if (k.side && p.step.rank == p.count / 2) {
            k.form = Form::tile;
            return k;
        }
        k.form = Form::sort;
        k.bucket = p.count <= 9 ? 9 : p.count <= 16 ? 16 : p.count <= 25 ? 25 : p.count <= 36 ? 36 : 49;
        return k;
    }
    const int runs = int(vertical_runs(p.step.element).size());
    const int C = std::max(1, shape.channels);
    if (p.count <= 65535 && runs <= rank::hist_max_runs && hist_smem(p.type, C, e, hist_nt) <= hist_smem_budget) {
        k.form = Form::hist;
        k.runs = runs;
    }
    return k;
}

// ---- launching ---------------------------------------------------------------------------------------------

template <class T>
std::uint32_t outside_word(const RankPlan& p) {
    const T v = store_pixel<T>(p.step.border_value);
    if constexpr (std::is_same_v<T, float>) return rank_key(v);
    else return std::uint32_t(v);
}

// What the families' parameters (rank::NetParams, rank::HistParams) share: the views and their shape, the
// border (mode and the constant's word), the element's first column and row relative to the anchor.
template <class Params>
void set_window(Params& q, const RankPlan& p, const Extent& e, ConstImageView in, ImageView out) {
    q.in = in.data;
    q.in_pitch = in.pitch;
    q.out = out.data;
    q.out_pitch = out.pitch;
    q.width = in.width();
    q.height = in.height();
    q.channels = in.channels();
    q.samples = in.width() * in.channels();
    q.mode = p.step.border == BorderMode::constant ? -1 : int(p.step.border);
    q.outside = with_type(p.type, [&]<class T>() { return outside_word<T>(p); });
    q.lo = e.lo;
    q.dylo = e.dylo;
}

void launch_net(const RankPlan& p, const Pick& k, ConstImageView in, ImageView out, cudaStream_t stream) {
    const Extent e = extent_of(p.chords);
    const int C = in.channels();
    const bool tile = k.form == Form::tile;
    const bool pairs = p.type != PixelType::f32;
    const int G = tile ? rank::tile_g : rank::sort_g, TT = tile ? rank::tile_t : rank::sort_t;
    static constexpr int tile_txp[4] = {32, 16, 8, 8}, sort_txp[4] = {64, 32, 16, 16};
    rank::NetParams q{};
    set_window(q, p, e, in, out);
    q.hi = e.hi;
    q.dyhi = e.dyhi;
    q.txp = (tile ? tile_txp : sort_txp)[C - 1];
    q.ty = rank::net_threads / (q.txp * C);
    q.rows_per_thread = TT;
    q.npx = q.txp * G;
    q.half = q.ty * TT;
    q.sp = q.npx + e.hi - e.lo;
    q.plane = (q.sp + G - 1) / G;
    q.rs = G * q.plane;
    if (tile && C == 3)
        while (q.rs % 16 != 12) ++q.rs;  // the warp's fourth group (next thread row) on other banks
    q.sr = q.half + e.dyhi - e.dylo;
    q.cs = q.sr * q.rs;
    if (q.txp < 32)
        while (q.cs % 32 != q.txp) ++q.cs;  // a warp's channels on distinct banks
    q.rank = p.step.rank;
    q.count = p.count;
    if (!tile) {
        int n = 0;
        for (const MorphChord& c : p.chords)
            for (int i = 0; i < c.length; ++i) q.cells[n++] = (c.dy - e.dylo) * q.rs + (c.dx + i - e.lo);
    }
    const int rows_per_block = (pairs ? 2 : 1) * q.half;
    q.blocks_y = (q.height + rows_per_block - 1) / rows_per_block;
    const dim3 grid(unsigned((q.width + q.npx - 1) / q.npx), unsigned(std::min(q.blocks_y, 65535)));
    const std::size_t smem = std::size_t(C) * q.cs * 4;
    with_type(p.type, [&]<class T>() {
        if (tile) rank::launch_tile<T>(k.side, q, grid, smem, stream);
        else rank::launch_sort<T>(k.bucket, q, grid, smem, stream);
    });
}

void launch_hist(const RankPlan& p, ConstImageView in, ImageView out, cudaStream_t stream) {
    const Extent e = extent_of(p.chords);
    const int C = in.channels();
    rank::HistParams q{};
    set_window(q, p, e, in, out);
    q.nt = hist_nt;
    q.ring = e.dyhi - e.dylo + 2;
    q.rw = q.nt + (e.hi - e.lo) * C;
    q.rank = p.step.rank;
    q.count = p.count;
    const std::vector<VRun> runs = vertical_runs(p.step.element);
    q.nruns = int(runs.size());
    for (int r = 0; r < q.nruns; ++r) {
        const int col = (runs[r].dx - e.lo) * C;
        q.runs[r] = make_int2((runs[r].dy0 - e.dylo) * q.rw + col, (runs[r].dy1 - e.dylo + 1) * q.rw + col);
    }
    // Rows a block walks: long enough that its first window (n updates) costs little against the rows' 2 x runs
    // each, short enough for a few blocks per SM.
    const int blocks_x = (q.samples + q.nt - 1) / q.nt;
    int rows = 256;
    while (rows > 16 && double(blocks_x) * ((q.height + rows - 1) / rows) < 2048) rows /= 2;
    while ((q.height + rows - 1) / rows > 65535) rows *= 2;
    q.rows = rows;
    const dim3 grid(unsigned(blocks_x), unsigned((q.height + rows - 1) / rows));
    const std::size_t smem = hist_smem(p.type, C, e, q.nt);
    with_type(p.type, [&]<class T>() { rank::launch_hist<T>(q, grid, smem, stream); });
}

} // namespace

KernelChoice choose_rank(const RankPlan& p, const ImageShape& shape) {
    if (p.step.depth > 1) return {"cuda.rank_volume_bits", ""};  // a volume's window (rank_volume.cu)
    const Pick k = pick(p, shape);
    switch (k.form) {
    case Form::tile: {
        const std::string side = std::to_string(k.side);
        return {"cuda.rank_tile", side + "x" + side + " median"};
    }
    case Form::sort: return {"cuda.rank_sort", "n=" + std::to_string(p.count) + " sort=" + std::to_string(k.bucket)};
    case Form::hist: {
        const int passes = p.type == PixelType::u8 ? 0 : p.type == PixelType::u16 ? 1 : 3;
        return {"cuda.rank_hist", "runs=" + std::to_string(k.runs) + " byte_passes=" + std::to_string(passes)};
    }
    case Form::bits: break;
    }
    return {"cuda.rank_bits", ""};
}

void launch_rank(const RankPlan& p, ConstImageView in, ImageView out, cudaStream_t stream) {
    if (p.step.depth > 1) return launch_rank_volume(p, in, out, stream);
    if (in.empty()) return;
    const Pick k = pick(p, in.shape);
    record_launch(choose_rank(p, in.shape));
    switch (k.form) {
    case Form::tile:
    case Form::sort: return launch_net(p, k, in, out, stream);
    case Form::hist: return launch_hist(p, in, out, stream);
    case Form::bits: return launch_rank_bits(p, in, out, stream);
    }
}

} // namespace apron::cuda
