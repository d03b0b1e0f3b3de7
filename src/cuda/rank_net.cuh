#pragma once
// Rank filters over small windows (up to 7 x 7 cells) on CUDA: min/max networks in registers over a tile staged
// in shared memory. Included by rank_net_u8.cu, rank_net_u16.cu and rank_net_f32.cu (one sample type each, so
// they compile side by side); rank_filter.cu chooses the form and the geometry (rank_kernels.hpp).
//
// Staging (both forms). The block's tile plus the element's halo is read once, through the border rule
// (map_index; the constant border's value), into shared memory, planar: channel c of a staged row in its own
// plane, so a thread works on one channel with the taps one word apart whatever the channel count. u8 and u16
// samples are widened to 16-bit lanes and two rows `half` apart share a word (lane 0 row y, lane 1 row
// y + half): VIMNMX.U16x2 (__vminu2 / __vmaxu2, one instruction on sm_90; packed u8x4 takes six) computes
// two outputs at once. f32 samples are staged as their order keys (core/rank_value.hpp: unsigned order is
// IEEE totalOrder, NaN the largest key), compared as u32, and turned back into the very sample's bits.
//
// rank_tile: medians of full W x W squares (W = 3, 5, 7). A thread makes 4 adjacent pixels x 2 rows (x 2 lanes
// for u8/u16) with one generated network (rank_networks.cuh, after Adams 2021: sorted pieces shared between the
// 8 windows, merges trimmed to the ranks that can still be the median, unused comparators dropped): 19.0,
// 65.8, 143.8 min/max per output for 3x3, 5x5, 7x7, against 38, 214, 586 for one window alone. f32: a thread
// whose tile holds a NaN (a missing sample, SPEC.md) takes each of its outputs by a radix select over the
// window's keys instead (rank_among picks the rank among the valid ones).
//
// rank_sort: any element within 7 x 7 and any rank (percentile, rank, elements with holes, off-centre anchors,
// even sizes). A thread gathers its window's n words into registers (the cells' offsets are kernel
// parameters: constant-bank operands), pads them to the bucket size with the largest word, sorts them with
// Batcher's odd-even merge sort (bucket 49: 394 compare-exchanges) and picks the rank. f32: NaN keys sort last;
// the valid count v gives the rank rank_among(r, v, n), which the sort serves as well (NaN when v = 0).
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "apron/border.hpp"
#include "core/border_index.hpp"
#include "core/rank_value.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/rank_kernels.hpp"
#include "cuda/rank_networks.cuh"

namespace apron::cuda::rank {

using u32 = std::uint32_t;

template <class T>
inline constexpr bool pairs = sizeof(T) < 4;

// Ordered minimum and maximum of two staged words: two u16 lanes (u8/u16 samples) or one f32 key.
struct PairOp {
    static __device__ __forceinline__ u32 mn(u32 a, u32 b) { return __vminu2(a, b); }
    static __device__ __forceinline__ u32 mx(u32 a, u32 b) { return __vmaxu2(a, b); }
};
struct KeyOp {
    static __device__ __forceinline__ u32 mn(u32 a, u32 b) { return min(a, b); }
    static __device__ __forceinline__ u32 mx(u32 a, u32 b) { return max(a, b); }
};
template <class T>
using OpFor = std::conditional_t<pairs<T>, PairOp, KeyOp>;

// Row y of the image as the staging reads it: itself, its border-mapped row, or nullptr (the constant border).
template <class T>
__device__ __forceinline__ const T* net_row(const NetParams& p, int y) {
    if (y < 0 || y >= p.height) {
        if (p.mode < 0) return nullptr;
        y = map_index(y, p.height, BorderMode(p.mode));
    }
    return reinterpret_cast<const T*>(p.in + std::size_t(y) * p.in_pitch);
}

// A staged lane: the u8/u16 value or the f32 key of in-row sample m of `row` (the constant border's where the
// row or the sample lies outside under `constant`: row null or m < 0).
template <class T>
__device__ __forceinline__ u32 net_lane(const NetParams& p, const T* row, int m) {
    if (!row || m < 0) return p.outside;
    const T v = __ldg(row + m);
    if constexpr (pairs<T>) return u32(v);
    else return rank_key(v);
}

// Stages the block's tile: staged row r is image row y0 + dylo + r (lane 1: + half), staged pixel q is image
// pixel x0 + lo + q; word (c, r, q) at c * cs + r * rs + (q % G) * plane + q / G. One warp a row (the row maps
// once), a lane V = G adjacent pixels of one channel (G = 4: each store of a warp then falls on consecutive
// words): inside the image V loads a lane without border tests, else each pixel through the border rule.
template <class T, int G>
__device__ __forceinline__ void net_stage(const NetParams& p, u32* tile, int x0, int y0) {
    constexpr int V = G;
    const int C = p.channels, groups = (p.sp + V - 1) / V;
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, warps = int(blockDim.x) / 32;
    const int px0 = x0 + p.lo;  // image pixel of staged pixel 0
    for (int r = warp; r < p.sr; r += warps) {
        const T* ra = net_row<T>(p, y0 + p.dylo + r);
        const T* rb = pairs<T> ? net_row<T>(p, y0 + p.dylo + r + p.half) : nullptr;
        const bool rows_inside = ra && (!pairs<T> || rb);
        for (int c = 0; c < C; ++c) {
            u32* row = tile + c * p.cs + r * p.rs;
            for (int g = lane; g < groups; g += 32) {
                const int q = V * g, px = px0 + q;
                u32 w[V];
                if (rows_inside && px >= 0 && px + V <= p.width) {
                    const int m = px * C + c;
#pragma unroll
                    for (int k = 0; k < V; ++k) {
                        w[k] = net_lane<T>(p, ra, m + k * C);
                        if constexpr (pairs<T>) w[k] |= net_lane<T>(p, rb, m + k * C) << 16;
                    }
                } else {
#pragma unroll
                    for (int k = 0; k < V; ++k) {
                        int m = px + k;
                        if (m < 0 || m >= p.width) m = p.mode < 0 ? -1 : map_index(m, p.width, BorderMode(p.mode));
                        if (m >= 0) m = m * C + c;
                        w[k] = net_lane<T>(p, ra, m);
                        if constexpr (pairs<T>) w[k] |= net_lane<T>(p, rb, m) << 16;
                    }
                }
#pragma unroll
                for (int k = 0; k < V; ++k)
                    if (q + k < p.sp) row[((q + k) % G) * p.plane + (q + k) / G] = w[k];
            }
        }
    }
}

// The sample a word's lane holds, as T.
template <class T>
__device__ __forceinline__ T net_value(u32 w, int lane) {
    if constexpr (pairs<T>) return T(lane ? (w >> 16) : (w & 0xFFFFu));
    else return rank_value<float>(w);
}

// Stores a thread's outputs: o[t * G + g] is pixel x0 + i * G + g of row ya + t (lane 1: + half), channel c.
// One channel with G contiguous, aligned, in-range pixels: one vector store a row.
template <class T, int G, int TT>
__device__ __forceinline__ void net_store(const NetParams& p, const u32 (&o)[G * TT], int px0, int ya, int c) {
    const int C = p.channels;
#pragma unroll
    for (int lane = 0; lane < (pairs<T> ? 2 : 1); ++lane)
#pragma unroll
        for (int t = 0; t < TT; ++t) {
            const int y = ya + t + lane * p.half;
            if (y >= p.height) continue;
            T* row = reinterpret_cast<T*>(p.out + std::size_t(y) * p.out_pitch);
            if constexpr (G == 4) {
                T* at = row + px0;
                if (C == 1 && px0 + G <= p.width && reinterpret_cast<std::uintptr_t>(at) % (G * sizeof(T)) == 0) {
                    if constexpr (sizeof(T) == 1) {
                        const unsigned sel = lane ? 0x6262u : 0x4040u;  // byte 0 (lane 0) or 2 (lane 1) of each word
                        const u32 lo = __byte_perm(o[t * G], o[t * G + 1], sel & 0x00FFu);
                        const u32 hi = __byte_perm(o[t * G + 2], o[t * G + 3], sel & 0x00FFu);
                        *reinterpret_cast<u32*>(at) = __byte_perm(lo, hi, 0x5410);
                    } else if constexpr (sizeof(T) == 2) {
                        const unsigned sel = lane ? 0x7632u : 0x5410u;
                        *reinterpret_cast<uint2*>(at) = make_uint2(__byte_perm(o[t * G], o[t * G + 1], sel),
                                                                   __byte_perm(o[t * G + 2], o[t * G + 3], sel));
                    } else {
                        *reinterpret_cast<float4*>(at) =
                            make_float4(rank_value<float>(o[t * G]), rank_value<float>(o[t * G + 1]),
                                        rank_value<float>(o[t * G + 2]), rank_value<float>(o[t * G + 3]));
                    }
                    continue;
                }
            }
#pragma unroll
            for (int g = 0; g < G; ++g)
                if (px0 + g < p.width) row[std::size_t(px0 + g) * C + c] = net_value<T>(o[t * G + g], lane);
        }
}

// The median rule of the window of output (g, t) of a thread's tile (keys at base, as the tile kernel reads
// them), for a thread whose tile holds NaN: the rank among the valid keys (rank_among) by a radix select over
// their bits (missing keys, the largest, are never below a trial); NaN where none is valid.
static __device__ __noinline__ u32 window_select(const u32* base, int rs, int plane, int g, int t, int w, int rank) {
    const int n = w * w;
    const auto key = [&](int j) {
        const int k = g + j % w;
        return base[(t + j / w) * rs + (k % tile_g) * plane + k / tile_g];
    };
    int valid = 0;
    for (int j = 0; j < n; ++j) valid += key(j) != rank_missing_key;
    if (valid == 0) return rank_missing_key;
    const int want = rank_among(rank, valid, n);
    u32 result = 0;
    for (int b = 31; b >= 0; --b) {
        const u32 trial = result | (1u << b);
        int below = 0;
        for (int j = 0; j < n; ++j) below += key(j) < trial;
        if (below <= want) result = trial;
    }
    return result;
}

template <class T, int W>
__device__ __forceinline__ void median_network(const auto& ld, u32 (&o)[tile_g * tile_t]) {
    if constexpr (W == 3) rank_net::median_3x3<OpFor<T>>(ld, o);
    else if constexpr (W == 5) rank_net::median_5x5<OpFor<T>>(ld, o);
    else rank_net::median_7x7<OpFor<T>>(ld, o);
}

template <class T, int W>
__global__ void __launch_bounds__(net_threads, 2) rank_tile_kernel(const NetParams p) {
    extern __shared__ u32 tile[];
    constexpr int G = tile_g, TT = tile_t;
    const int C = p.channels, tid = int(threadIdx.x);
    const int i = tid % p.txp, rest = tid / p.txp, c = rest % C, ty = rest / C;
    const int x0 = int(blockIdx.x) * p.npx;
    for (int by = int(blockIdx.y); by < p.blocks_y; by += int(gridDim.y)) {
        const int y0 = by * (pairs<T> ? 2 : 1) * p.half;
        if (by != int(blockIdx.y)) __syncthreads();  // the last tile's reads are done
        net_stage<T, G>(p, tile, x0, y0);
        __syncthreads();
        if (ty >= p.ty) continue;
        const u32* base = tile + c * p.cs + ty * TT * p.rs + i;
        bool missing = false;  // f32: a NaN in the thread's tile
        const auto ld = [&](int k, int y) {
            const u32 v = base[y * p.rs + (k % G) * p.plane + k / G];
            if constexpr (!pairs<T>) missing |= v == rank_missing_key;
            return v;
        };
        u32 o[G * TT];
        median_network<T, W>(ld, o);
        if constexpr (!pairs<T>) {
            if (missing) {
#pragma unroll
                for (int t = 0; t < TT; ++t)
#pragma unroll
                    for (int g = 0; g < G; ++g) o[t * G + g] = window_select(base, p.rs, p.plane, g, t, W, p.rank);
            }
        }
        net_store<T, G, TT>(p, o, x0 + i * G, y0 + ty * TT, c);
    }
}

// Batcher's odd-even merge sort of n words as a list of compare-exchanges (any n: pairs past the end are left
// out), made at compile time.
template <int N>
struct Batcher {
    static constexpr int count = [] {
        int m = 0;
        for (int p = 1; p < N; p <<= 1)
            for (int k = p; k >= 1; k >>= 1)
                for (int j = k % p; j + k < N; j += 2 * k)
                    for (int i = 0; i < k; ++i)
                        if (i + j + k < N && (i + j) / (2 * p) == (i + j + k) / (2 * p)) ++m;
        return m;
    }();
    static constexpr std::array<std::pair<int, int>, std::size_t(count)> pairs_ = [] {
        std::array<std::pair<int, int>, std::size_t(count)> a{};
        int m = 0;
        for (int p = 1; p < N; p <<= 1)
            for (int k = p; k >= 1; k >>= 1)
                for (int j = k % p; j + k < N; j += 2 * k)
                    for (int i = 0; i < k; ++i)
                        if (i + j + k < N && (i + j) / (2 * p) == (i + j + k) / (2 * p)) a[std::size_t(m++)] = {i + j, i + j + k};
        return a;
    }();
};

template <class Op, int N, int I>
__device__ __forceinline__ void compare_exchange(u32 (&v)[N]) {
    constexpr std::pair<int, int> e = Batcher<N>::pairs_[I];
    const u32 a = v[e.first], b = v[e.second];
    v[e.first] = Op::mn(a, b);
    v[e.second] = Op::mx(a, b);
}

template <class Op, int N, int... I>
__device__ __forceinline__ void sort_words(u32 (&v)[N], std::integer_sequence<int, I...>) {
    (compare_exchange<Op, N, I>(v), ...);
}

template <class T, int N>
__global__ void __launch_bounds__(net_threads, 2) rank_sort_kernel(const NetParams p) {
    extern __shared__ u32 tile[];
    constexpr int TT = sort_t;
    const int C = p.channels, tid = int(threadIdx.x);
    const int i = tid % p.txp, rest = tid / p.txp, c = rest % C, ty = rest / C;
    const int x0 = int(blockIdx.x) * p.npx;
    for (int by = int(blockIdx.y); by < p.blocks_y; by += int(gridDim.y)) {
        const int y0 = by * (pairs<T> ? 2 : 1) * p.half;
        if (by != int(blockIdx.y)) __syncthreads();
        net_stage<T, sort_g>(p, tile, x0, y0);
        __syncthreads();
        if (ty >= p.ty) continue;
        const int px = x0 + i;
        if (px >= p.width) continue;
        const u32* base = tile + c * p.cs + ty * TT * p.rs + i;
        for (int t = 0; t < TT; ++t) {
            const int ya = y0 + ty * TT + t;
            if (ya >= p.height) break;
            u32 v[N];
            int valid = 0;
#pragma unroll
            for (int j = 0; j < N; ++j) {
                v[j] = j < p.count ? base[t * p.rs + p.cells[j]] : 0xFFFFFFFFu;
                if constexpr (!pairs<T>) valid += j < p.count && v[j] != rank_missing_key;
            }
            int want = p.rank;
            if constexpr (!pairs<T>) want = valid ? rank_among(p.rank, valid, p.count) : 0;  // 0: NaN (sorted first)
            sort_words<OpFor<T>, N>(v, std::make_integer_sequence<int, Batcher<N>::count>{});
            u32 r = v[0];
#pragma unroll
            for (int j = 1; j < N; ++j) r = j == want ? v[j] : r;
            T* row = reinterpret_cast<T*>(p.out + std::size_t(ya) * p.out_pitch);
            row[std::size_t(px) * C + c] = net_value<T>(r, 0);
            if constexpr (pairs<T>) {
                if (ya + p.half < p.height)
                    reinterpret_cast<T*>(p.out + std::size_t(ya + p.half) * p.out_pitch)[std::size_t(px) * C + c] = net_value<T>(r, 1);
            }
        }
    }
}

template <class K>
void set_smem(K kernel, std::size_t smem) {
    if (smem > 48 * 1024) APRON_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
}

template <class T>
void launch_tile(int w, const NetParams& p, dim3 grid, std::size_t smem, cudaStream_t stream) {
    auto kernel = w == 3 ? rank_tile_kernel<T, 3> : w == 5 ? rank_tile_kernel<T, 5> : rank_tile_kernel<T, 7>;
    set_smem(kernel, smem);
    kernel<<<grid, net_threads, smem, stream>>>(p);
    APRON_CUDA_CHECK_LAUNCH("rank_tile");
}

template <class T>
void launch_sort(int bucket, const NetParams& p, dim3 grid, std::size_t smem, cudaStream_t stream) {
    auto kernel = bucket <= 9 ? rank_sort_kernel<T, 9>
                : bucket <= 16 ? rank_sort_kernel<T, 16>
                : bucket <= 25 ? rank_sort_kernel<T, 25>
                : bucket <= 36 ? rank_sort_kernel<T, 36>
                               : rank_sort_kernel<T, 49>;
    set_smem(kernel, smem);
    kernel<<<grid, net_threads, smem, stream>>>(p);
    APRON_CUDA_CHECK_LAUNCH("rank_sort");
}

} // namespace apron::cuda::rank
