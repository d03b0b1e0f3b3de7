#pragma once
// Rank filters over large windows on CUDA: sliding histograms (rank_kernels.hpp describes the layout;
// rank_filter.cu chooses the geometry). Included by rank_hist.cu.
//
// A thread owns one output sample column and walks down the block's rows; its histogram of the window's keys
// (256 bins of the key's top byte: the u8 value, the u16 high byte, the f32 key's top byte; u16 counts, two
// bins a word, the words of one bin pair of the block's threads side by side so a warp's accesses fall on 32
// distinct banks whatever its keys) changes per row by one key leaving and one entering per vertical run of the
// element: 2 x 31 updates for a 31 x 31 square or disk:15, whatever the area. Updates are shared-memory
// atomic adds (no result read: they pipeline, and a thread's later reads see them). The bin m holding the rank
// and lt, the count of keys in bins below m, move with the updates; after them a walk of a few bins (the rank's
// bin rarely moves far between rows) finds the new m. u16 and f32 resolve the remaining bytes by scanning the
// window's keys of that bin (one pass per byte, into a second histogram, cleared after). f32: NaN keys are
// missing, counted apart, never in a bin; the rank is rank_among(r, valid, n), NaN where none is valid.
//
// Counts (u8, C = 1, 31 x 31 or disk:15, per output): 62 ring reads, 62 atomic adds, ~17 thread-instructions
// per vertical run: ~124 shared-memory accesses (the limit: 8.4 T a second on the H200, so ~68 Gpix/s), ~530
// instructions (~63 Gpix/s at 33 T a second); plus the ring's staging (one row of nt + 30 C samples a block
// row, two stores each) and the block's first window (961 updates over its rows).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "apron/border.hpp"
#include "core/border_index.hpp"
#include "core/rank_value.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/rank_kernels.hpp"

namespace apron::cuda::rank {

using u32 = std::uint32_t;

template <class T>
using RingKey = std::conditional_t<std::is_same_v<T, float>, u32, T>;
template <class T>
inline constexpr int fine_passes = std::is_same_v<T, float> ? 3 : sizeof(T) == 2 ? 1 : 0;
template <class T>
inline constexpr int top_shift = 8 * fine_passes<T>;

// Image row y of the ring into slots `slot` and `slot + ring`: the row maps once, each sample's column once.
template <class T>
__device__ __forceinline__ void hist_stage(const HistParams& p, RingKey<T>* ring, int slot, int y, int sx0) {
    const T* row = nullptr;  // null: the constant border's row
    if (y >= 0 && y < p.height) row = reinterpret_cast<const T*>(p.in + std::size_t(y) * p.in_pitch);
    else if (p.mode >= 0) row = reinterpret_cast<const T*>(p.in + std::size_t(map_index(y, p.height, BorderMode(p.mode))) * p.in_pitch);
    RingKey<T>* a = ring + std::size_t(slot) * p.rw;
    RingKey<T>* b = a + std::size_t(p.ring) * p.rw;
    for (int j = int(threadIdx.x); j < p.rw; j += p.nt) {
        int m = sx0 + j;
        if (m < 0 || m >= p.samples) m = p.mode < 0 ? -1 : mapped_sample<int>(m, p.width, p.channels, BorderMode(p.mode));
        RingKey<T> k = RingKey<T>(p.outside);
        if (row && m >= 0) {
            const T v = __ldg(row + m);
            if constexpr (std::is_same_v<T, float>) k = rank_key(v);
            else k = v;
        }
        a[j] = k;
        b[j] = k;
    }
}

// A thread's bin b of a histogram (words (b >> 1) * nt + tid, halves b & 1).
__device__ __forceinline__ unsigned short* hist_bin(u32* hist, int nt, int tid, u32 b) {
    return reinterpret_cast<unsigned short*>(hist + std::size_t(b >> 1) * nt + tid) + (b & 1u);
}
__device__ __forceinline__ void hist_add(u32* hist, int nt, int tid, u32 b, int d) {
    const u32 inc = 1u << ((b & 1u) * 16);
    atomicAdd(hist + std::size_t(b >> 1) * nt + tid, d > 0 ? inc : 0u - inc);  // u16 halves: no carry (counts stay in range)
}

template <class T>
__global__ void __launch_bounds__(128) rank_hist_kernel(const HistParams p) {
    extern __shared__ __align__(16) u32 smem[];
    using K = RingKey<T>;
    constexpr bool f32 = std::is_same_v<T, float>;
    constexpr int shift = top_shift<T>;
    const int nt = p.nt, tid = int(threadIdx.x);
    u32* coarse = smem;
    u32* fine = coarse + 128 * nt;
    K* ring = reinterpret_cast<K*>(fine + (fine_passes<T> ? 128 * nt : 0));
    const int C = p.channels;
    const int x0 = int(blockIdx.x) * nt, sx = x0 + tid;
    const int sx0 = x0 + p.lo * C;  // ring column 0
    const int y_begin = int(blockIdx.y) * p.rows;
    const int y_end = min(y_begin + p.rows, p.height);
    if (y_begin >= y_end) return;

    for (int w = tid; w < 128 * nt * (fine_passes<T> ? 2 : 1); w += nt) smem[w] = 0;
    for (int j = 0; j < p.ring; ++j) hist_stage<T>(p, ring, j, y_begin + p.dylo - 1 + j, sx0);
    __syncthreads();

    int top = 0;           // the ring slot of row y + dylo - 1
    u32 m = 0;             // the bin of the rank
    int lt = 0, miss = 0;  // keys in bins below m; f32: NaN keys in the window
    const auto update = [&](u32 key, int d) {
        if constexpr (f32) {
            if (key == rank_missing_key) {
                miss += d;
                return;
            }
        }
        const u32 b = key >> shift;
        hist_add(coarse, nt, tid, b, d);
        lt += b < m ? d : 0;
    };
    // the first window: every cell of every vertical run
    {
        const K* base = ring + tid;
        for (int r = 0; r < p.nruns; ++r) {
            const int2 o = p.runs[r];
            for (int at = o.x + p.rw; at <= o.y; at += p.rw) update(base[at], 1);
        }
    }
    T* out_col = reinterpret_cast<T*>(p.out) + sx;
    for (int y = y_begin;; ) {
        const K* base = ring + std::size_t(top) * p.rw + tid;
        const int valid = p.count - miss;
        u32 key = rank_missing_key;  // f32 without a valid sample: NaN
        if (valid > 0) {
            const int want = f32 ? rank_among(p.rank, valid, p.count) : p.rank;
            while (lt > want) {
                --m;
                lt -= *hist_bin(coarse, nt, tid, m);
            }
            for (int h; lt + (h = *hist_bin(coarse, nt, tid, m)) <= want;) {
                lt += h;
                ++m;
            }
            key = m;
            if constexpr (fine_passes<T> > 0) {
                int k = want - lt;  // the rank among the keys of bin m
#pragma unroll 1
                for (int pass = 1; pass <= fine_passes<T>; ++pass) {
                    const int s = shift - 8 * pass;
                    for (int r = 0; r < p.nruns; ++r) {
                        const int2 o = p.runs[r];
                        for (int at = o.x + p.rw; at <= o.y; at += p.rw) {
                            const u32 v = base[at];
                            if ((v >> (s + 8)) == key && (!f32 || v != rank_missing_key)) hist_add(fine, nt, tid, (v >> s) & 255u, 1);
                        }
                    }
                    int cum = 0;
                    u32 d = 0;
                    for (int h; cum + (h = *hist_bin(fine, nt, tid, d)) <= k; ++d) cum += h;
                    k -= cum;
                    key = (key << 8) | d;
#pragma unroll 4
                    for (int w = 0; w < 128; ++w) fine[std::size_t(w) * nt + tid] = 0;
                }
            }
        }
        if (sx < p.samples) *reinterpret_cast<T*>(reinterpret_cast<std::byte*>(out_col) + std::size_t(y) * p.out_pitch) = rank_value<T>(key);
        if (++y >= y_end) break;
        // slide down one row: row y + dyhi (the window's new bottom row) replaces row y + dylo - 2, which left
        __syncthreads();
        hist_stage<T>(p, ring, top, y + p.dylo + p.ring - 2, sx0);
        __syncthreads();
        top = top + 1 == p.ring ? 0 : top + 1;
        const K* b2 = ring + std::size_t(top) * p.rw + tid;
        int r = 0;
        for (; r + 1 < p.nruns; r += 2) {
            const int2 o0 = p.runs[r], o1 = p.runs[r + 1];
            const u32 a0 = b2[o0.x], c0 = b2[o0.y], a1 = b2[o1.x], c1 = b2[o1.y];
            update(a0, -1);
            update(c0, 1);
            update(a1, -1);
            update(c1, 1);
        }
        if (r < p.nruns) {
            const int2 o = p.runs[r];
            update(b2[o.x], -1);
            update(b2[o.y], 1);
        }
    }
}

template <class T>
void launch_hist(const HistParams& p, dim3 grid, std::size_t smem, cudaStream_t stream) {
    if (smem > 48 * 1024)
        APRON_CUDA_CHECK(cudaFuncSetAttribute(rank_hist_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    rank_hist_kernel<T><<<grid, unsigned(p.nt), smem, stream>>>(p);
    APRON_CUDA_CHECK_LAUNCH("rank_hist");
}

} // namespace apron::cuda::rank
