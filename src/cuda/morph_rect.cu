// Rectangle (and line) morphology on CUDA: dilate / erode with a full W x H structuring element, both
// passes fused in one kernel over a shared-memory tile, O(1) extrema per pixel whatever the size.
//
// Result (SPEC.md, Morphology): out(x,y) = max (min) over i < W, j < H of in(x + i - ax, y + j - ay),
// outside pixels ignored (the type's lowest / highest, the identity) or read through a border mode. Max
// and min are exact, so the result is bit-identical to the CPU and reference backends. f32 follows their
// fmax / fmin: NaN never wins and the result is clamped to [-FLT_MAX, FLT_MAX] (fmaxf / fminf over the
// window ignore NaN; one clamp at the end turns "all NaN" and -inf (+inf for erode) into the identity).
//
// Data layout. Every pass works on 32-bit words of shared memory: f32 one sample per word (FMNMX), u16
// two samples per word and u8 widened to u16 on staging, also two per word, so one VIMNMX.U16x2
// (__vmaxu2 / __vminu2) does two samples. Packed u8x4 would halve shared traffic, but __vmaxu4 is six
// instructions on sm_90 (no byte min/max unit): 1.5 per sample against 0.5 here.
//
// One block (256 threads) makes an output tile of 64 words (128 u8/u16 samples or 64 f32 samples) by TH
// rows (64, 32 or 16: the largest whose shared memory stays under ~96 KB). Phases, each ended by a barrier:
//  1. stage: input rows y0 - ay .. y0 + TH - 1 + (H - 1 - ay), samples from x0 - ax*C rounded down to 16
//     bytes, as 16-byte global loads (four in flight per thread); u8 is widened with two PRMT per 4
//     samples. Chunks that reach outside the image (or views that are not 16-byte aligned: ROIs) take a
//     per-sample path with the border rule (map_index for the five modes); only edge blocks meet it.
//  2. vertical: thread = one word column x 16 output rows. Running extremum of H rows (see `window`).
//  3. horizontal, word level: M[u] = ext_{j < L} V[u + j*Sw], Sw = C / gcd(WS, C) words (the next word of
//     the same channel and sample lane), thread = one row x 8 outputs of one lane class.
//  4. horizontal, sample level: a word of 2 samples (WS = 2) with C odd mixes lanes, so a window of W
//     pixels is the union of nshift <= 3 shifted copies of M (shift by one sample = one PRMT); PP = WS /
//     gcd(WS, C) pixels per word step, L = W / PP, nshift = PP + W % PP. Then u8 narrows (one PRMT) and
//     the tile leaves as 4- or 8-byte stores.
//
// `window` (R consecutive outputs per thread, window length k at run time): for k >= R all R windows
// share the core rows R-1 .. k-1; the head is a suffix scan of R-1 rows, the tail a prefix scan of R-1
// rows: k + 3R ops and k + R - 1 loads for R outputs, (k/R + 3) ops per output, van Herk / Gil-Werman
// with segments aligned to the thread's outputs. The integer path folds pairs into the 3-input
// VIMNMX3.U16x2 (__vimax3_u16x2, one instruction on sm_90): (k - R)/2 + 2R ops. For k < R the compile-time windows (k < 8) use doubling
// in registers: a plain sliding extremum costs k - 1 ops, doubling ~log2(k) + 1.
//
// Cost per output word (u8, C = 1, 31 x 31, TH = 64): global 2 bytes/pixel (halo re-reads hit L2:
// rows x1.47, columns x1.25); shared ~13 word accesses per 2 pixels; ~35 instructions per 2 pixels. The
// roofline target (u8, 2 bytes/pixel, ~2078 Gpix/s on H100) is therefore shared-memory / issue bound near
// 1100-1500 Gpix/s at 31x31 and closer to DRAM for small sizes (fewer window ops, fewer halo words).
//
// Fast path (morph_rect_fast_kernel, below): u8 / u16, one channel, W <= 16, H <= 64, views aligned (input
// 4 / 8 bytes, output 16 bytes). It makes every whole 256 x 64 output tile whose rows (with the vertical
// window) stay inside the image: columns that reach past the left / right edge are read per pixel through
// the border rule (EdgeLoader; V of a mapped pixel is V of its source column), interior columns with no
// border code. Tile origins at x = 0 or 128 mod 256, whichever covers more. The general kernel above
// then makes only the ring of its tiles around that rectangle (top and bottom row bands, a right strip
// narrower than 256): a 1-D grid enumerating the ring (`ring_tile`), 16-row tiles there. 288
// threads, two phases, one barrier, one shared round trip (V: 64 rows x 140 words, 35840 B static):
//  A. vertical in registers straight from global memory: thread = 4-pixel column x 16 rows, 4 strips x
//     72 threads (64 columns + up to 5 halo columns, all in one round). u8: LDG.32 + 2 PRMT widen to two
//     u16x2 words; u16: LDG.64. H <= 7: a VIMNMX3 chain per output row; else van Herk on the thread's 16
//     (or 2 x 8) rows. STS.64 per row.
//  B. horizontal in registers (warps 0-7): thread = one row x 16 output pixels, 16-byte LDS (a quarter
//     warp on 8 rows, pitch 140 = 12 mod 32 words: no conflicts), the odd-shifted words by one PRMT
//     each, W and E = (x0 - ax) & 3 at compile time: a VIMNMX3 chain over pixel-pair words (ptxas
//     reassociates: ~W/2 VIMNMX3 per 2 pixels); u8 narrows with one PRMT per 4 pixels; STG.128 (a row's
//     4 lanes write 64 contiguous bytes).
// SASS (sm_90, dilate u8 3x3): phase A ~193 instructions per 64-pixel task (18 LDG, 36 address, 36
// PRMT, 32 VIMNMX3, 16 STS, prologue), phase B ~125 per 64 pixels: ~5.5 thread-instructions per pixel
// counting idle lanes (the general kernel: 63). 15x15: ~10 (phase B ~6). The issue limit (~29 T
// thread-instructions/s on H100) is then 3-5 Tpix/s: the kernel should be DRAM bound (2 B/pixel).
// 56 registers (launch bounds 288 x 4): 4 blocks = 36 warps per SM; no spills for u8, u16 spills a few
// words in the H >= 8 paths (once per thread, outside the row loops).
//
// Sides up to 64 are taken (worst case f32, 4 channels, 64 x 64: 120 KB of shared memory at TH = 16);
// larger elements decline and run the executor's generic kernel.
#include "cuda/morph_rect.hpp"

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "apron/errors.hpp"
#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"

namespace apron::cuda {
namespace {

using u32 = std::uint32_t;

constexpr int block_threads = 256;
constexpr int out_words = 64;      // output words per tile row
constexpr int group_words = 2;     // output words per thread and store in phase 4
constexpr int vertical_rows = 16;  // outputs per thread, vertical pass
constexpr int horizontal_words = 8;  // outputs per thread, word-level horizontal pass
constexpr int max_side = 64;
constexpr std::size_t preferred_smem = 96 * 1024;

// ---- extremum of packed words ----------------------------------------------------------------------
struct MaxU16 {
    static __device__ __forceinline__ u32 op(u32 a, u32 b) { return __vmaxu2(a, b); }
    static __device__ __forceinline__ u32 op3(u32 a, u32 b, u32 c) { return __vimax3_u16x2(a, b, c); }
};
struct MinU16 {
    static __device__ __forceinline__ u32 op(u32 a, u32 b) { return __vminu2(a, b); }
    static __device__ __forceinline__ u32 op3(u32 a, u32 b, u32 c) { return __vimin3_u16x2(a, b, c); }
};
struct MaxF32 {
    static __device__ __forceinline__ u32 op(u32 a, u32 b) {
        return __float_as_uint(fmaxf(__uint_as_float(a), __uint_as_float(b)));
    }
    static __device__ __forceinline__ u32 op3(u32 a, u32 b, u32 c) { return op(op(a, b), c); }
};
struct MinF32 {
    static __device__ __forceinline__ u32 op(u32 a, u32 b) {
        return __float_as_uint(fminf(__uint_as_float(a), __uint_as_float(b)));
    }
    static __device__ __forceinline__ u32 op3(u32 a, u32 b, u32 c) { return op(op(a, b), c); }
};

template <class T, bool Dilate>
using OpFor = std::conditional_t<std::is_same_v<T, float>, std::conditional_t<Dilate, MaxF32, MinF32>,
                                 std::conditional_t<Dilate, MaxU16, MinU16>>;

constexpr int floor_log2_c(int v) { return v <= 1 ? 0 : 1 + floor_log2_c(v / 2); }

// Doubling, level by level at compile time: on return v[i] is the extremum of the P samples from i, for
// i <= N - P. Ascending i reads v[i + h] before it is overwritten.
template <int N, int H, int P, class Op>
__device__ __forceinline__ void double_levels(u32 (&v)[N]) {
    if constexpr (H < P) {
#pragma unroll
        for (int i = 0; i + 2 * H <= N; ++i) v[i] = Op::op(v[i], v[i + H]);
        double_levels<N, 2 * H, P, Op>(v);
    }
}

// o[t] = ext_{j < K} b[(t + j) * s], K known at compile time (K < R): doubling in registers.
template <int R, int K, class Op>
__device__ __forceinline__ void window_small(const u32* b, int s, u32 (&o)[R]) {
    constexpr int N = R + K - 1;
    u32 v[N];
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = b[i * s];
    constexpr int P = 1 << floor_log2_c(K);
    double_levels<N, 1, P, Op>(v);
#pragma unroll
    for (int t = 0; t < R; ++t) o[t] = K == P ? v[t] : Op::op(v[t], v[t + K - P]);
}

template <int R, int K, class Op>
__device__ __forceinline__ void window_small_dispatch(const u32* b, int s, int k, u32 (&o)[R]) {
    if (k == K) return window_small<R, K, Op>(b, s, o);
    if constexpr (K + 1 < R) window_small_dispatch<R, K + 1, Op>(b, s, k, o);
}

// o[t] = ext_{j < k} b[(t + j) * s] for t < R, k >= R: the windows share rows R-1 .. k-1; each adds a
// suffix of rows t .. R-2 and a prefix of rows k .. k+t-1 (van Herk / Gil-Werman on the thread's segment).
template <int R, class Op>
__device__ __forceinline__ void window_core(const u32* b, int s, int k, u32 (&o)[R]) {
    o[R - 2] = b[(R - 2) * s];
#pragma unroll
    for (int t = R - 3; t >= 0; --t) o[t] = Op::op(b[t * s], o[t + 1]);
    u32 c = b[(R - 1) * s];
    int j = R;
#pragma unroll 2
    for (; j + 1 < k; j += 2) c = Op::op3(c, b[j * s], b[(j + 1) * s]);  // one VIMNMX3 per two rows
    if (j < k) c = Op::op(c, b[j * s]);
    const u32* tail = b + k * s;
    o[0] = Op::op(o[0], c);
    u32 p = tail[0];
#pragma unroll
    for (int t = 1; t < R - 1; ++t) {
        if (t > 1) p = Op::op(p, tail[(t - 1) * s]);
        o[t] = Op::op3(o[t], c, p);
    }
    o[R - 1] = Op::op3(c, p, tail[(R - 2) * s]);
}

// Reads rows 0 .. R + k - 2 of b (stride s words).
template <int R, class Op>
__device__ __forceinline__ void window(const u32* b, int s, int k, u32 (&o)[R]) {
    static_assert(R >= 8 && (R & (R - 1)) == 0);
    if (k >= R) return window_core<R, Op>(b, s, k, o);
    if constexpr (R > 8) {
        u32 lo[R / 2], hi[R / 2];
        window<R / 2, Op>(b, s, k, lo);
        window<R / 2, Op>(b + (R / 2) * s, s, k, hi);
#pragma unroll
        for (int t = 0; t < R / 2; ++t) o[t] = lo[t], o[R / 2 + t] = hi[t];
    } else {
        window_small_dispatch<R, 1, Op>(b, s, k, o);
    }
}

// ---- the kernel ----------------------------------------------------------------------------------
struct Params {
    const std::byte* in;
    std::size_t in_pitch;
    std::byte* out;
    std::size_t out_pitch;
    int width, height, channels, samples;
    int ax, ay, mh;
    int mode;     // -1: outside pixels read `outside` (ignored: the identity, or constant); else a BorderMode
    u32 outside;  // sample bits (u8/u16 value, f32 bits)
    // geometry (make_geometry)
    int e, sw, L, nshift, nq, iw, pt, pm, pv, th, tr;
    int region;  // words of the tile / M region; V follows
    bool in_vec, out_vec;
    int fx0, fx1, fy0, fy1;  // output rectangle the fast kernel makes (samples, rows): tiles inside it skip
    // 1-D grid over the tiles outside the inner tile rectangle [tx0, tx1) x [ty0, ty1) (those the fast
    // kernel made; empty: all tiles): rows above it, then the left and right parts of its rows, then below.
    int gbx, tx0, tx1, ty0, ty1;
};

__device__ __forceinline__ void ring_tile(const Params& p, int id, int& bx, int& by) {
    const int top = p.ty0 * p.gbx, side = p.gbx - (p.tx1 - p.tx0), mid = (p.ty1 - p.ty0) * side;
    if (id < top) {
        by = id / p.gbx;
        bx = id - by * p.gbx;
    } else if (id - top < mid) {
        id -= top;
        const int r = id / side, c = id - r * side;
        by = p.ty0 + r;
        bx = c < p.tx0 ? c : c - p.tx0 + p.tx1;
    } else {
        id -= top + mid;
        const int r = id / p.gbx;
        by = p.ty1 + r;
        bx = id - r * p.gbx;
    }
}

template <class T>
__device__ __forceinline__ const T* in_row(const Params& p, int y) {
    return reinterpret_cast<const T*>(p.in + std::size_t(y) * p.in_pitch);
}

__device__ __forceinline__ int source_row(const Params& p, int gy) {
    if (gy >= 0 && gy < p.height) return gy;
    if (p.mode < 0) return -1;
    return map_index(gy, p.height, BorderMode(p.mode));
}

template <class T>
__device__ __forceinline__ T outside_value(const Params& p) {
    if constexpr (std::is_same_v<T, float>) return __uint_as_float(p.outside);
    else return T(p.outside);
}

// One sample of (virtual) row `row` (-1: outside) at sample index s, through the border rule.
template <class T>
__device__ __forceinline__ T read_sample(const Params& p, int row, int s) {
    if (row < 0) return outside_value<T>(p);
    const T* r = in_row<T>(p, row);
    if (s >= 0 && s < p.samples) return r[s];
    if (p.mode < 0) return outside_value<T>(p);
    const int C = p.channels;
    const int px = s >= 0 ? s / C : -((-s + C - 1) / C);  // floor division
    const int ch = s - px * C;
    return r[map_index(px, p.width, BorderMode(p.mode)) * C + ch];
}

// 16 bytes of input into tile words (u8: 16 samples -> 8 words of two u16 lanes).
template <class T>
__device__ __forceinline__ void store_chunk(u32* dst, uint4 v) {
    if constexpr (sizeof(T) == 1) {
        auto* d = reinterpret_cast<uint4*>(dst);
        d[0] = make_uint4(__byte_perm(v.x, 0, 0x4140), __byte_perm(v.x, 0, 0x4342), __byte_perm(v.y, 0, 0x4140),
                          __byte_perm(v.y, 0, 0x4342));
        d[1] = make_uint4(__byte_perm(v.z, 0, 0x4140), __byte_perm(v.z, 0, 0x4342), __byte_perm(v.w, 0, 0x4140),
                          __byte_perm(v.w, 0, 0x4342));
    } else {
        *reinterpret_cast<uint4*>(dst) = v;
    }
}

template <class T>
__device__ __forceinline__ void store_sample(u32* dst, int q, T v) {
    if constexpr (std::is_same_v<T, float>) dst[q] = __float_as_uint(v);
    else reinterpret_cast<unsigned short*>(dst)[q] = static_cast<unsigned short>(v);
}

template <class T>
__device__ __forceinline__ T lane(const u32 (&w)[group_words], int i) {
    if constexpr (std::is_same_v<T, float>) return __uint_as_float(w[i]);
    else return T((w[i >> 1] >> ((i & 1) * 16)) & 0xFFFFu);
}

template <class T, bool Dilate>
__global__ void __launch_bounds__(block_threads) morph_rect_kernel(const Params p) {
    using Op = OpFor<T, Dilate>;
    constexpr int WS = sizeof(T) == 4 ? 1 : 2;   // samples per word
    constexpr int VS = 16 / int(sizeof(T));      // samples per 16-byte chunk
    constexpr int OS = out_words * WS;           // output samples per tile row
    constexpr int GS = group_words * WS;         // samples per phase-4 group
    extern __shared__ __align__(16) u32 smem[];
    u32* const tile = smem;        // tr x pt: staged input; later th x pm: M
    u32* const vert = smem + p.region;  // th x pv: vertical extrema
    const int tid = threadIdx.x;
    int tbx, tby;
    ring_tile(p, int(blockIdx.x), tbx, tby);
    const int x0 = tbx * OS, y0 = tby * p.th;
    const int sbase = x0 - p.ax * p.channels - p.e;  // multiple of VS
    const int gy0 = y0 - p.ay;
    if (x0 >= p.fx0 && min(x0 + OS, p.samples) <= p.fx1 && y0 >= p.fy0 && min(y0 + p.th, p.height) <= p.fy1) return;

    // 1. stage
    {
        const int cpr = p.iw * WS / VS, chunks = p.tr * cpr;
        for (int b = tid; b < chunks; b += 4 * block_threads) {
            uint4 v[4];
            bool fast[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int id = b + u * block_threads;
                fast[u] = false;
                v[u] = make_uint4(0, 0, 0, 0);
                if (id < chunks) {
                    const int r = id / cpr, cc = id - r * cpr;
                    const int row = source_row(p, gy0 + r), gs = sbase + cc * VS;
                    if (p.in_vec && row >= 0 && gs >= 0 && gs + VS <= p.samples) {
                        v[u] = __ldg(reinterpret_cast<const uint4*>(in_row<T>(p, row) + gs));
                        fast[u] = true;
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int id = b + u * block_threads;
                if (id >= chunks) break;
                const int r = id / cpr, cc = id - r * cpr;
                u32* dst = tile + r * p.pt + cc * (VS / WS);
                if (fast[u]) {
                    store_chunk<T>(dst, v[u]);
                } else {
                    const int row = source_row(p, gy0 + r), gs = sbase + cc * VS;
                    for (int q = 0; q < VS; ++q) store_sample<T>(dst, q, read_sample<T>(p, row, gs + q));
                }
            }
        }
    }
    __syncthreads();

    // 2. vertical: V[r][col] = ext of tile rows r .. r + mh - 1
    {
        const int tasks = p.iw * (p.th / vertical_rows);
        for (int id = tid; id < tasks; id += block_threads) {
            const int q = id / p.iw, col = id - q * p.iw;
            u32 o[vertical_rows];
            window<vertical_rows, Op>(tile + q * vertical_rows * p.pt + col, p.pt, p.mh, o);
            u32* d = vert + q * vertical_rows * p.pv + col;
#pragma unroll
            for (int t = 0; t < vertical_rows; ++t) d[t * p.pv] = o[t];
        }
    }
    __syncthreads();

    // 3. horizontal, word level: M[r][u] = ext_{j < L} V[r][u + j*sw] (M over the dead tile)
    {
        const int tasks = p.th * p.sw * p.nq;
        for (int id = tid; id < tasks; id += block_threads) {
            const int r = id % p.th, rest = id / p.th;
            const int c = rest % p.sw, qq = rest / p.sw;
            const int u0 = c + p.sw * horizontal_words * qq;
            u32 o[horizontal_words];
            window<horizontal_words, Op>(vert + r * p.pv + u0, p.sw, p.L, o);
            u32* d = tile + r * p.pm + u0;
#pragma unroll
            for (int t = 0; t < horizontal_words; ++t) d[t * p.sw] = o[t];
        }
    }
    __syncthreads();

    // 4. sample level shifts, narrowing, stores
    // Half a warp per row, two rows per warp: a thread reads words 2g .. 2g + 3, so 16 lanes cover the banks
    // of one parity and the next row (odd pitch) the other: no bank conflicts.
    static_assert(out_words / group_words == 32);
    for (int id = tid; id < p.th * 32; id += block_threads) {
        const int r = 2 * (id >> 6) + ((id >> 4) & 1), g = (id & 15) + 16 * ((id >> 5) & 1);
        const int y = y0 + r, xs = x0 + g * GS;
        if (y >= p.height || xs >= p.samples) continue;
        const u32* m = tile + r * p.pm;
        u32 w[group_words];
#pragma unroll
        for (int h = 0; h < group_words; ++h) {
            const int wi = g * group_words + h;
            u32 acc;
            if constexpr (WS == 1) {
                acc = m[wi + p.e];  // f32: one sample per word, no shifts (nshift == 1)
                acc = Dilate ? __float_as_uint(fmaxf(__uint_as_float(acc), -FLT_MAX))
                             : __float_as_uint(fminf(__uint_as_float(acc), FLT_MAX));
            } else {
                const int q0 = wi * 2 + p.e;
                acc = 0;
                for (int sh = 0; sh < p.nshift; ++sh) {
                    const int qpos = q0 + sh * p.channels, u = qpos >> 1;
                    const u32 x = (qpos & 1) ? __byte_perm(m[u], m[u + 1], 0x5432) : m[u];
                    acc = sh ? Op::op(acc, x) : x;
                }
            }
            w[h] = acc;
        }
        T* row = reinterpret_cast<T*>(p.out + std::size_t(y) * p.out_pitch) + xs;
        if (p.out_vec && xs + GS <= p.samples) {
            if constexpr (sizeof(T) == 1) *reinterpret_cast<u32*>(row) = __byte_perm(w[0], w[1], 0x6420);
            else *reinterpret_cast<uint2*>(row) = make_uint2(w[0], w[1]);
        } else {
#pragma unroll
            for (int i = 0; i < GS; ++i)
                if (xs + i < p.samples) row[i] = lane<T>(w, i);
        }
    }
}

// ---- fast path: u8 / u16, one channel, interior tiles, W <= 16 ----------------------------------------
// Tile: 256 output pixels x 64 rows, 256 threads.
//  A. vertical, in registers: thread = one aligned 4-pixel column (u8: one 32-bit load, widened to two
//     u16x2 words by two PRMT; u16: one 64-bit load) x 16 output rows, straight from global memory (no
//     staging, no border code: interior tiles only). Running extremum of H rows: k <= 7 a VIMNMX3 chain,
//     k >= 8 van Herk / Gil-Werman segments aligned to the thread's 16 rows. Result to shared memory, V
//     (u16x2 words, row pitch 140 words), shifted by one word when needed so the thread's windows in B
//     start at word 8*g (or one pixel later: parity P).
//  B. horizontal, in registers: thread = one row x 8 output words (16 pixels); loads its words with
//     16-byte LDS (rows of a quarter warp on distinct banks), builds the odd-shifted words (one PRMT),
//     W compile time: W <= 5 a VIMNMX3 chain over pixel-pair words, else pairs D = max(even, odd) then a
//     chain over D. u8 narrows with one PRMT per 4 pixels, 16-byte global stores (a row's 4 threads of a
//     warp write 64 contiguous bytes).
constexpr int fast_tw = 256;  // output pixels per tile row
constexpr int fast_th = 64;   // output rows per tile
constexpr int fast_r = 16;    // rows per thread, vertical
constexpr int fast_g = 8;     // output words (2 pixels) per thread, horizontal
constexpr int fast_max_w = 16;
constexpr int fast_cols = 72;      // phase A columns per strip: 64 + the halo (<= 69 needed)
constexpr int fast_threads = 288;  // 4 strips x 72 columns, all in one round; phase B: the first 256
constexpr int fast_pv = 140;  // V pitch in words: >= 2 * 69 (stores), 140 (16-byte reads); == 4 mod 8: no conflicts

struct FastParams {
    const std::byte* in;
    std::size_t in_pitch;
    std::byte* out;
    std::size_t out_pitch;
    int xs, ys;    // first tile's output origin (xs a multiple of 128, ys of 64)
    int ax, ay, mh;
    int cols;      // 4-pixel columns staged per tile row
    int width;
    int mode;      // as Params: -1 outside pixels read `outside`, else a BorderMode
    u32 outside;
};

struct Pair {
    u32 a, b;
};

template <class Op>
struct PairOp {
    static __device__ __forceinline__ Pair op(Pair x, Pair y) { return {Op::op(x.a, y.a), Op::op(x.b, y.b)}; }
    static __device__ __forceinline__ Pair op3(Pair x, Pair y, Pair z) {
        return {Op::op3(x.a, y.a, z.a), Op::op3(x.b, y.b, z.b)};
    }
};

// o[t] = ext_{j < K} ld(t + j), K < 8 at compile time: a VIMNMX3 chain per output.
template <int R, int K, class P, class Ld>
__device__ __forceinline__ void vsmall(const Ld& ld, Pair (&o)[R]) {
    if constexpr (R > 8 && K >= 4) {  // two halves: fewer rows live at once
        Pair h[R / 2];
        vsmall<R / 2, K, P>(ld, h);
#pragma unroll
        for (int t = 0; t < R / 2; ++t) o[t] = h[t];
        vsmall<R / 2, K, P>(ld.down(R / 2), h);
#pragma unroll
        for (int t = 0; t < R / 2; ++t) o[R / 2 + t] = h[t];
    } else {
        Pair r[R + K - 1];
#pragma unroll
        for (int i = 0; i < R + K - 1; ++i) r[i] = ld(i);
#pragma unroll
        for (int t = 0; t < R; ++t) {
            Pair acc = r[t];
            int j = 1;
#pragma unroll
            for (; j + 1 < K; j += 2) acc = P::op3(acc, r[t + j], r[t + j + 1]);
            if (j < K) acc = P::op(acc, r[t + j]);
            o[t] = acc;
        }
    }
}

// k >= R: van Herk / Gil-Werman on the thread's R rows (see window_core).
template <int R, class P, class Ld>
__device__ __forceinline__ void vcore(const Ld& ld, int k, Pair (&o)[R]) {
    o[R - 2] = ld(R - 2);
#pragma unroll
    for (int t = R - 3; t >= 0; --t) o[t] = P::op(ld(t), o[t + 1]);
    Pair c = ld(R - 1);
    int j = R;
#pragma unroll 2
    for (; j + 1 < k; j += 2) c = P::op3(c, ld(j), ld(j + 1));
    if (j < k) c = P::op(c, ld(j));
    o[0] = P::op(o[0], c);
    Pair q = ld(k);
#pragma unroll
    for (int t = 1; t < R - 1; ++t) {
        if (t > 1) q = P::op(q, ld(k + t - 1));
        o[t] = P::op3(o[t], c, q);
    }
    o[R - 1] = P::op3(c, q, ld(k + R - 2));
}

template <class T>
struct ColumnLoader {
    const std::byte* base;  // row 0 of the strip, the thread's column
    unsigned pitch;         // bytes
    __device__ __forceinline__ Pair operator()(int j) const {
        const std::byte* p = base + (unsigned long long)pitch * unsigned(j);
        if constexpr (sizeof(T) == 1) {
            const u32 w = __ldg(reinterpret_cast<const unsigned int*>(p));
            return {__byte_perm(w, 0, 0x4140), __byte_perm(w, 0, 0x4342)};
        } else {
            const uint2 w = __ldg(reinterpret_cast<const uint2*>(p));
            return {w.x, w.y};
        }
    }
    __device__ __forceinline__ ColumnLoader down(int rows) const {
        return {base + (unsigned long long)pitch * unsigned(rows), pitch};
    }
};

// A column that reaches outside the image (left / right tiles): per pixel, its border-mapped source column
// (V of a mapped pixel is V of its source column: the vertical window is inside the image) or the
// outside value (ignored: the identity; constant).
template <class T>
struct EdgeLoader {
    const std::byte* base;  // row 0 of the strip, column 0 of the image
    unsigned pitch;
    int x[4];  // source pixel of each lane, -1: outside value
    u32 outside;
    __device__ __forceinline__ Pair operator()(int j) const {
        const T* r = reinterpret_cast<const T*>(base + (unsigned long long)pitch * unsigned(j));
        u32 v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = x[i] >= 0 ? u32(r[x[i]]) : outside;
        return {v[0] | (v[1] << 16), v[2] | (v[3] << 16)};
    }
    __device__ __forceinline__ EdgeLoader down(int rows) const {
        EdgeLoader c = *this;
        c.base += (unsigned long long)pitch * unsigned(rows);
        return c;
    }
};

// V rows 0 .. 15 of the thread's column: o[t] = ext_{j < mh} ld(t + j).
template <class P, class Ld>
__device__ __forceinline__ void fast_vertical(const Ld& ld, int mh, Pair (&o)[fast_r]) {
    switch (mh) {
    case 1: vsmall<fast_r, 1, P>(ld, o); break;
    case 2: vsmall<fast_r, 2, P>(ld, o); break;
    case 3: vsmall<fast_r, 3, P>(ld, o); break;
    case 4: vsmall<fast_r, 4, P>(ld, o); break;
    case 5: vsmall<fast_r, 5, P>(ld, o); break;
    case 6: vsmall<fast_r, 6, P>(ld, o); break;
    case 7: vsmall<fast_r, 7, P>(ld, o); break;
    default:
        if (mh >= fast_r) {
            vcore<fast_r, P>(ld, mh, o);
        } else {
            Pair h[fast_r / 2];
            vcore<fast_r / 2, P>(ld, mh, h);
#pragma unroll
            for (int t = 0; t < fast_r / 2; ++t) o[t] = h[t];
            vcore<fast_r / 2, P>(ld.down(fast_r / 2), mh, h);
#pragma unroll
            for (int t = 0; t < fast_r / 2; ++t) o[fast_r / 2 + t] = h[t];
        }
    }
}

// E = (x0 - ax) & 3: V word VB + i (VB = E / 2) holds the pixels 2i - PAR, 2i - PAR + 1 (PAR = E & 1) of the
// thread's windows.
template <int W, int E, class T, class Op>
__device__ __forceinline__ void fast_horizontal(const u32* vs, const FastParams& p, int x0, int y0, int tid) {
    constexpr int G = fast_g, PAR = E & 1, VB = E >> 1;
    constexpr int NS = PAR + 2 * (G - 1) + W;  // pixel-pair words of offsets 0 .. NS-1 (from the window start)
    constexpr int NV = NS / 2 + 1;
    constexpr int N4 = (VB + NV + 3) / 4;
    // Warp w: rows 8w .. 8w + 7 (lane & 7), groups 4i + (lane >> 3) in iteration i.
    static_assert(fast_th == 8 * 8 && fast_tw / (2 * G) == 16);  // 8 warps
    const int r = (tid >> 5) * 8 + (tid & 7), grp0 = (tid >> 3) & 3;
    const u32* const vrow = vs + r * fast_pv + grp0 * G;
    std::byte* const orow = p.out + std::size_t(y0 + r) * p.out_pitch + std::size_t(x0 + grp0 * 2 * G) * sizeof(T);
#pragma unroll
    for (int it = 0; it < 4; ++it) {
        const u32* row = vrow + it * 4 * G;
        u32 w[N4 * 4], v[NV];
#pragma unroll
        for (int i = 0; i < N4; ++i) {
            const uint4 q = reinterpret_cast<const uint4*>(row)[i];
            w[4 * i] = q.x, w[4 * i + 1] = q.y, w[4 * i + 2] = q.z, w[4 * i + 3] = q.w;
        }
#pragma unroll
        for (int i = 0; i < NV; ++i) v[i] = w[VB + i];
        u32 sh[NV];  // sh[i]: pixels 2i + 1, 2i + 2
#pragma unroll
        for (int i = 0; i + 1 < NV; ++i) sh[i] = __byte_perm(v[i], v[i + 1], 0x5432);
        auto s = [&](int o) { return (o & 1) ? sh[o >> 1] : v[o >> 1]; };  // o compile time after unrolling
        u32 o[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const int b = PAR + 2 * g;
            u32 acc;
            if constexpr (W <= 5) {
                acc = s(b);
                int j = 1;
#pragma unroll
                for (; j + 1 < W; j += 2) acc = Op::op3(acc, s(b + j), s(b + j + 1));
                if (j < W) acc = Op::op(acc, s(b + j));
            } else {
                // D(m) = ext(s(b + 2m), s(b + 2m + 1)); the same D serves W / 2 outputs (CSE).
                auto d = [&](int m) { return Op::op(s(b + 2 * m), s(b + 2 * m + 1)); };
                acc = d(0);
                int m = 1;
#pragma unroll
                for (; m + 1 < W / 2; m += 2) acc = Op::op3(acc, d(m), d(m + 1));
                if (m < W / 2) acc = Op::op(acc, d(m));
                if (W & 1) acc = Op::op(acc, s(b + W - 1));
            }
            o[g] = acc;
        }
        std::byte* out = orow + it * 8 * G * sizeof(T);
        if constexpr (sizeof(T) == 1) {
            *reinterpret_cast<uint4*>(out) =
                make_uint4(__byte_perm(o[0], o[1], 0x6420), __byte_perm(o[2], o[3], 0x6420),
                           __byte_perm(o[4], o[5], 0x6420), __byte_perm(o[6], o[7], 0x6420));
        } else {
            reinterpret_cast<uint4*>(out)[0] = make_uint4(o[0], o[1], o[2], o[3]);
            reinterpret_cast<uint4*>(out)[1] = make_uint4(o[4], o[5], o[6], o[7]);
        }
    }
}

template <class T, bool Dilate, int W>
__global__ void __launch_bounds__(fast_threads, 4) morph_rect_fast_kernel(const FastParams p) {
    using Op = OpFor<T, Dilate>;
    using P = PairOp<Op>;
    __shared__ __align__(16) u32 vs[fast_th * fast_pv];  // V
    const int tid = threadIdx.x;
    const int x0 = p.xs + int(blockIdx.x) * fast_tw, y0 = p.ys + int(blockIdx.y) * fast_th;
    const int sx = x0 - p.ax;  // V pixel 0 = input pixel sx (may be < 0: left tiles)
    const int e = sx & 3;  // staged from cx = sx - e
    const int cx = sx - e;

    // A. vertical
    // Strip q = tid / 72 (rows 16q .. 16q + 15), column tid % 72: one round, no halo tail.
    static_assert(fast_th / fast_r * fast_cols == fast_threads && fast_tw / 4 + 5 <= fast_cols);
    const int q = tid / fast_cols, col = tid - q * fast_cols;
    if (col < p.cols) {
        const std::byte* rows = p.in + std::size_t(y0 - p.ay + q * fast_r) * p.in_pitch;
        const int gx = cx + 4 * col;
        u32* d = vs + q * fast_r * fast_pv + 2 * col;
        if (gx >= 0 && gx + 4 <= p.width) {
            Pair o[fast_r];
            fast_vertical<P>(ColumnLoader<T>{rows + std::size_t(gx) * sizeof(T), unsigned(p.in_pitch)}, p.mh, o);
#pragma unroll
            for (int t = 0; t < fast_r; ++t) *reinterpret_cast<uint2*>(d + t * fast_pv) = make_uint2(o[t].a, o[t].b);
        } else {
            // Edge columns (a few per edge tile): plain running extremum, few registers.
            EdgeLoader<T> ld{rows, unsigned(p.in_pitch), {}, p.outside};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int xi = gx + i;
                ld.x[i] = xi >= 0 && xi < p.width ? xi : p.mode < 0 ? -1 : map_index(xi, p.width, BorderMode(p.mode));
            }
#pragma unroll 1
            for (int t = 0; t < fast_r; ++t) {
                Pair acc = ld(t);
#pragma unroll 1
                for (int j = 1; j < p.mh; ++j) acc = P::op(acc, ld(t + j));
                *reinterpret_cast<uint2*>(d + t * fast_pv) = make_uint2(acc.a, acc.b);
            }
        }
    }
    __syncthreads();

    // B. horizontal, narrowing, stores (warps 0 .. 7)
    if (tid >= 256) return;
    switch (e) {
    case 0: fast_horizontal<W, 0, T, Op>(vs, p, x0, y0, tid); break;
    case 1: fast_horizontal<W, 1, T, Op>(vs, p, x0, y0, tid); break;
    case 2: fast_horizontal<W, 2, T, Op>(vs, p, x0, y0, tid); break;
    default: fast_horizontal<W, 3, T, Op>(vs, p, x0, y0, tid); break;
    }
}

// ---- host side -----------------------------------------------------------------------------------
struct Geometry {
    int e, sw, L, nshift, nq, iw, pt, pm, pv, th, tr, region;
    std::size_t bytes;
};

int round_up(int v, int m) { return (v + m - 1) / m * m; }

Geometry make_geometry(int sample_bytes, int C, int mw, int mh, int ax, int th) {
    const int WS = sample_bytes == 4 ? 1 : 2, VS = 16 / sample_bytes, OS = out_words * WS;
    Geometry g{};
    g.e = positive_mod(-(long long)ax * C, VS);
    const int d = std::gcd(WS, C), pp = WS / d;
    g.sw = C / d;
    if (mw < pp) {
        g.L = 1;
        g.nshift = mw;
    } else {
        g.L = mw / pp;
        g.nshift = pp + (mw - pp * g.L);
    }
    // M words phase 4 reads: up to sample OS-1 + e + (nshift-1) C, plus the next word when shifting.
    const int mwn = (OS - 1 + g.e + (g.nshift - 1) * C) / WS + 1 + (pp > 1 ? 1 : 0);
    g.nq = ((mwn + g.sw - 1) / g.sw + horizontal_words - 1) / horizontal_words;
    g.iw = round_up(g.e + OS + (mw - 1) * C, VS) / WS;  // staged words per row (a multiple of 4)
    g.pt = g.iw;
    // Odd pitches: phase 3 maps consecutive threads to consecutive rows (no bank conflicts).
    g.pm = (g.sw * horizontal_words * g.nq) | 1;
    g.pv = std::max(g.iw, g.sw * (horizontal_words * g.nq + g.L - 1)) | 1;
    g.th = th;
    g.tr = th + mh - 1;
    g.region = round_up(std::max(g.tr * g.pt, g.th * g.pm), 4);
    g.bytes = 4 * (std::size_t(g.region) + std::size_t(g.th) * g.pv);
    return g;
}

Geometry choose_geometry(int sample_bytes, int C, int mw, int mh, int ax, int height) {
    Geometry g{};
    for (int th : {64, 32, 16}) {
        if (th > 16 && height <= th / 2) continue;  // a short image needs no tall tile
        g = make_geometry(sample_bytes, C, mw, mh, ax, th);
        if (g.bytes <= preferred_smem) return g;
    }
    return make_geometry(sample_bytes, C, mw, mh, ax, 16);
}

int smem_optin_limit() {
    int device = 0, limit = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
        cudaGetLastError();
        return 48 * 1024;
    }
    return limit;
}

template <class T, bool Dilate>
void launch(const Params& base, const Geometry& g, int blocks, cudaStream_t stream) {
    Params p = base;
    p.e = g.e, p.sw = g.sw, p.L = g.L, p.nshift = g.nshift, p.nq = g.nq, p.iw = g.iw, p.pt = g.pt, p.pm = g.pm;
    p.pv = g.pv, p.th = g.th, p.tr = g.tr, p.region = g.region;
    auto kernel = morph_rect_kernel<T, Dilate>;
    if (g.bytes > 48 * 1024)
        APRON_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(g.bytes)));
    if (blocks <= 0) return;
    kernel<<<unsigned(blocks), block_threads, g.bytes, stream>>>(p);
    APRON_CUDA_CHECK_LAUNCH("morph_rect");
}

template <class T, bool Dilate, int W = 1>
void launch_fast_w(int w, const FastParams& fp, dim3 grid, cudaStream_t stream) {
    if constexpr (W <= fast_max_w) {
        if (w != W) return launch_fast_w<T, Dilate, W + 1>(w, fp, grid, stream);
        morph_rect_fast_kernel<T, Dilate, W><<<grid, fast_threads, 0, stream>>>(fp);
        APRON_CUDA_CHECK_LAUNCH("morph_rect_fast");
    }
}

// The fast kernel's tiles (u8 / u16, one channel, W <= 16, aligned views) whose reads stay inside the image
// and whose outputs are whole: returns the output rectangle it makes (empty: none), after launching it.
template <class T>
void launch_fast(const MorphPlan& plan, ConstImageView in, ImageView out, bool dilate, Params& p,
                 cudaStream_t stream) {
    p.fx0 = p.fx1 = p.fy0 = p.fy1 = 0;
    if constexpr (sizeof(T) == 4) {
        return;
    } else {
        const Mask& el = plan.step.element;
        const int W = el.width, H = el.height;
        if (in.channels() != 1 || W > fast_max_w || H > max_side) return;
        const auto in_addr = reinterpret_cast<std::uintptr_t>(in.data);
        const auto out_addr = reinterpret_cast<std::uintptr_t>(out.data);
        const std::size_t la = sizeof(T) == 1 ? 4 : 8;
        if (in_addr % la || in.pitch % la || out_addr % 16 || out.pitch % 16 || in.pitch > 0x7fffffffu) return;
        const int width = in.width(), height = in.height(), ax = el.anchor_x, ay = el.anchor_y;
        const int e = positive_mod(-(long long)ax, 4);
        const int cols = (e + fast_tw - 1 + W + 3) / 4;
        int xoff = 0;
        // Columns outside the image are read through the border rule (EdgeLoader): any x0 whose outputs
        // are whole.
        auto x_ok = [&](int bx) {
            const int x0 = xoff + bx * fast_tw;
            return x0 >= 0 && x0 + fast_tw <= width;
        };
        auto y_ok = [&](int by) {
            const int y0 = by * fast_th;
            return y0 - ay >= 0 && y0 + fast_th <= height && y0 - ay + fast_th + H - 1 <= height;
        };
        // Tiles start at x = xoff + 256 i, xoff 0 or 128 (the general kernel's tile width): whichever
        // leaves the narrower edge ring to the general kernel.
        int bx0 = 0, bx1 = 0, best_off = 0;
        for (int off : {0, 128}) {
            xoff = off;
            int b0 = 0;
            while (off + b0 * fast_tw < width && !x_ok(b0)) ++b0;
            int b1 = b0;
            while (x_ok(b1)) ++b1;
            if (b1 - b0 > bx1 - bx0) bx0 = b0, bx1 = b1, best_off = off;
        }
        int by0 = 0;
        while (by0 * fast_th < height && !y_ok(by0)) ++by0;
        int by1 = by0;
        while (y_ok(by1)) ++by1;
        if (bx1 <= bx0 || by1 <= by0) return;
        const int xs = best_off + bx0 * fast_tw;
        FastParams fp{};
        fp.in = in.data;
        fp.in_pitch = in.pitch;
        fp.out = out.data;
        fp.out_pitch = out.pitch;
        fp.xs = xs;
        fp.ys = by0 * fast_th;
        fp.ax = ax;
        fp.ay = ay;
        fp.mh = H;
        fp.cols = cols;
        fp.width = width;
        fp.mode = p.mode;
        fp.outside = p.outside;
        const dim3 grid(unsigned(bx1 - bx0), unsigned(by1 - by0));
        if (dilate) launch_fast_w<T, true>(W, fp, grid, stream);
        else launch_fast_w<T, false>(W, fp, grid, stream);
        p.fx0 = xs;
        p.fx1 = xs + (bx1 - bx0) * fast_tw;
        p.fy0 = by0 * fast_th;
        p.fy1 = by1 * fast_th;
    }
}

} // namespace

bool morph_rect_supports(const MorphPlan& plan) {
    if (plan.algorithm != MorphAlgorithm::separable_rect) return false;
    const Mask& e = plan.step.element;
    if (e.width < 1 || e.height < 1 || e.width > max_side || e.height > max_side) return false;
    for (double w : e.weights)
        if (w == 0) return false;
    // The largest tile this element needs (4 channels, TH = 16) must fit one block's shared memory.
    static const int limit = smem_optin_limit();
    const int bytes = int(bytes_per_sample(plan.type));
    std::size_t worst = 0;
    for (int C = 1; C <= max_channels; ++C)
        worst = std::max(worst, make_geometry(bytes, C, e.width, e.height, e.anchor_x, 16).bytes);
    return worst <= std::size_t(limit);
}

void launch_morph_rect(const MorphPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream) {
    if (in.empty()) return;
    const Mask& e = plan.step.element;
    const int C = in.channels();
    const int bytes = int(bytes_per_sample(plan.type));
    Geometry g = choose_geometry(bytes, C, e.width, e.height, e.anchor_x, in.height());
    const bool dilate = plan.step.kind == MorphKind::dilate;
    Params p{};
    p.in = in.data;
    p.in_pitch = in.pitch;
    p.out = out.data;
    p.out_pitch = out.pitch;
    p.width = in.width();
    p.height = in.height();
    p.channels = C;
    p.samples = in.width() * C;
    p.ax = e.anchor_x;
    p.ay = e.anchor_y;
    p.mh = e.height;
    const bool mapped = plan.step.border && *plan.step.border != BorderMode::constant;
    p.mode = mapped ? int(*plan.step.border) : -1;
    p.in_vec = reinterpret_cast<std::uintptr_t>(in.data) % 16 == 0 && in.pitch % 16 == 0;
    const std::size_t store_bytes = bytes == 1 ? 4 : 8;  // phase 4: 4 u8, 4 u16 or 2 f32 samples
    p.out_vec = reinterpret_cast<std::uintptr_t>(out.data) % store_bytes == 0 && out.pitch % store_bytes == 0;
    const int samples_per_block = out_words * (bytes == 4 ? 1 : 2);
    const int blocks_x = (p.samples + samples_per_block - 1) / samples_per_block;
    with_type(plan.type, [&]<class T>() {
        // Outside pixels: the identity when ignored, the border value (as the type stores it) for constant.
        T outside;
        if (plan.step.border == BorderMode::constant) outside = store_pixel<T>(plan.step.border_value);
        else outside = T(dilate ? lowest_value<T>() : highest_value<T>());
        if constexpr (std::is_same_v<T, float>) {
            u32 bits;
            std::memcpy(&bits, &outside, 4);
            p.outside = bits;
        } else {
            p.outside = u32(outside);
        }
        // Interior tiles of the common case first, then the general kernel for the rest (it skips tiles the
        // fast kernel made; where they meet, both write the same exact values).
        launch_fast<T>(plan, in, out, dilate, p, stream);  // interior: no outside pixel, any border
        // The general kernel then makes only the ring of tiles around the fast rectangle, in short tiles
        // (16 rows: more, quicker blocks for a small amount of work). fx0, fx1 are multiples of 128 samples
        // (its tile width), fy0, fy1 of 64 rows.
        if (p.fx1 > p.fx0) g = make_geometry(bytes, C, e.width, e.height, e.anchor_x, 16);
        const int blocks_y = (in.height() + g.th - 1) / g.th;
        p.gbx = blocks_x;
        if (p.fx1 > p.fx0) {
            p.tx0 = p.fx0 / samples_per_block;
            p.tx1 = p.fx1 / samples_per_block;
            p.ty0 = p.fy0 / g.th;
            p.ty1 = p.fy1 / g.th;
        }
        const int blocks = blocks_x * blocks_y - (p.tx1 - p.tx0) * (p.ty1 - p.ty0);
        if (dilate) launch<T, true>(p, g, blocks, stream);
        else launch<T, false>(p, g, blocks, stream);
    });
}

} // namespace apron::cuda
