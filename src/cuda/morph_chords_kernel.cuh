// The chord kernels of morph_chords.cu and their launch, instantiated per sample type in
// morph_chords_u8.cu, morph_chords_u16.cu and morph_chords_f32.cu so the three compile side by side (one file
// of 120 kernels took 98 s of the GPU machine's build). The method and the layout are described in
// morph_chords.cu.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "core/border_index.hpp"
#include "core/morph_value.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/morph_chords.hpp"
#include "plan/morph_decompose.hpp"

namespace apron::cuda::chords {

using u32 = std::uint32_t;

constexpr int block_threads = 256;
constexpr int rows_per_thread = 8;  // outputs per thread along y (16 halves the halo rows but doubles the kept tables)
constexpr int max_levels = 7;       // tables of 1, 2, .., 64 samples (chords up to max_chord_side)
constexpr int chunk_items = 4;      // doubling items per thread between two barriers
// Register-built tables: a thread makes `segment` consecutive positions of one staged row (u8/u16: 18,
// 9 words a plane; f32: 17; odd word strides between lanes, so no bank conflicts on the stores) from
// segment + (P-1)*C (+1) samples loaded from global memory, doubling in registers up to the largest
// table P; taken while (P-1)*C <= reg_reach_of(C) (C = 1: P <= 16; 2, 3, 4: P <= 8, 28 samples at most:
// u8 C = 1 needs 80 registers then, the others ~100, 2 blocks per SM).
constexpr int reg_reach = 28;
constexpr int reg_reach_of(int C) {
    int P = 1;
    while ((2 * P - 1) * C <= reg_reach) P *= 2;
    return (P - 1) * C;
}
template <bool Pairs> constexpr int segment = Pairs ? 18 : 17;

struct Params {
    const std::byte* in;
    std::size_t in_pitch;
    std::byte* out;
    std::size_t out_pitch;
    int width, height, samples;
    int mode;      // -1: outside pixels read `outside` (ignored: the identity; constant: the value); else a BorderMode
    u32 outside;   // sample bits (u8/u16 value, f32 bits)
    u32 identity;  // accumulator start: the identity in every lane
    int gx, th, tile_samples;   // words per tile row, rows per tile, output samples per tile row
    int rows, pitch, half;      // staged rows, words per staged row, words per plane (u8/u16)
    int sx_lo, y_lo;            // staged sample 0 and row 0 relative to the tile's first output sample / row
    int blocks_x;
    int planes;    // a volume's planes, as blockIdx.z (1 for an image)
    int levels;                    // tables 1, 2, .., 2^(levels-1)
    // Table 2^l is built (l >= 1) only where a chord reads it or a larger table needs it: staged rows
    // level_row0[l] .. + level_rows[l], and level_items[l] words per plane (u8/u16) or samples (f32) a row.
    int level_row0[max_levels], level_rows[max_levels], level_items[max_levels];
    int level_end[max_levels];     // chords [level_end[l-1], level_end[l]) read table 2^l
    // Register-built tables (Reg): table 2^l (if a chord reads it) at word store_base[l], its rows the staged
    // rows store_row0[l] .. + store_rows[l]; load: samples a segment reads.
    int store_base[max_levels], store_row0[max_levels], store_rows[max_levels];
    int positions, load;
    // The schedule (chord_schedule.hpp, morph_chords.cu's header): thread_loads takes every staged sample
    // through read_sample's border tests; staged_rows lets blocks whose staged region lies inside the image
    // load without them, and with raw_cols > 0 its register path stages the raw samples once, coalesced,
    // into shared memory (raw_rows staged rows at a time, raw_pitch samples a row, at word raw_base) and
    // builds its tables from there instead of from overlapping global loads.
    ChordSchedule schedule;
    int raw_base, raw_pitch, raw_cols, raw_rows;
    // staged_rows: the kept tables column-major, word w of table row q at store_base + w * rs + q (rs odd:
    // a warp's lanes, on consecutive columns, hit distinct banks), so a thread's 8 output rows are 8
    // consecutive words: the chord loop adds the row as an immediate offset; 0: row-major.
    int rs;
    // Word offset of a chord's first read relative to the thread's first output word (row0 * pitch + col):
    // table base, staged row and position; second read likewise, -1: one read (length a power of two).
    int chord_a[max_chords];
    int chord_b[max_chords];
    // Column-major tables: entry k stands for chord_run[k] chords of equal offsets on consecutive rows dy,
    // dy + 1, ..: the thread reads each of their rows once (see the chord loop).
    int chord_run[max_chords];
};

template <class T, bool Dilate>
__device__ __forceinline__ u32 ext(u32 a, u32 b) {
    if constexpr (std::is_same_v<T, float>)
        return __float_as_uint(morph_pick(Dilate, __uint_as_float(a), __uint_as_float(b)));
    else
        return Dilate ? __vmaxu2(a, b) : __vminu2(a, b);
}

template <class T, bool Dilate>
__device__ __forceinline__ u32 ext3(u32 a, u32 b, u32 c) {
    if constexpr (std::is_same_v<T, float>) return ext<T, Dilate>(ext<T, Dilate>(a, b), c);
    else return Dilate ? __vimax3_u16x2(a, b, c) : __vimin3_u16x2(a, b, c);
}

template <class T>
__device__ __forceinline__ u32 bits_of(T v) {
    if constexpr (std::is_same_v<T, float>) return __float_as_uint(v);
    else return u32(v);
}

// Rows before plane blockIdx.z of a volume (planes of p.height rows, one pitch, one after another): a
// volume's planes are filtered alone, as a batch in one launch (0 for an image).
__device__ __forceinline__ std::size_t plane_rows(const Params& p) { return std::size_t(blockIdx.z) * std::size_t(p.height); }

__device__ __forceinline__ int source_row(const Params& p, int gy) {
    if (gy >= 0 && gy < p.height) return gy;
    if (p.mode < 0) return -1;
    return map_index(gy, p.height, BorderMode(p.mode));
}

// Sample `s` of (virtual) row `row` (-1: outside) through the border rule, as word bits.
template <class T, int C>
__device__ __forceinline__ u32 read_sample(const Params& p, int row, int s) {
    if (row < 0) return p.outside;
    const T* r = reinterpret_cast<const T*>(p.in + (plane_rows(p) + std::size_t(row)) * p.in_pitch);
    if (s >= 0 && s < p.samples) return bits_of<T>(__ldg(r + s));
    if (p.mode < 0) return p.outside;
    return bits_of<T>(__ldg(r + mapped_sample<int>(s, p.width, C, BorderMode(p.mode))));
}

template <class T>
__device__ __forceinline__ T from_bits(u32 b) {
    if constexpr (std::is_same_v<T, float>) return __uint_as_float(b);
    else return T(b);
}

// read_sample without border tests, for blocks whose staged region lies inside the image.
template <class T>
__device__ __forceinline__ u32 read_inside(const Params& p, int row, int s) {
    return bits_of<T>(__ldg(reinterpret_cast<const T*>(p.in + (plane_rows(p) + std::size_t(row)) * p.in_pitch) + s));
}

// Raw staging: the words of positions 0 .. N-1 from sample s0 (even) of a raw staged row (4-byte aligned;
// staged to at least s0 + N + 9 samples for u8, s0 + N + 2 for u16). u8: one LDS.32 and one funnel shift
// per 4 samples, one PRMT per word; u16: one LDS.32 per even position, one PRMT per odd one (the high
// lane of its left neighbour and the low lane of its right one); f32: one LDS per position.
template <class T, int N>
__device__ __forceinline__ void raw_positions(const T* row, int s0, u32 (&v)[N]) {
    if constexpr (sizeof(T) == 1) {
        const u32* w = reinterpret_cast<const u32*>(row) + (s0 >> 2);
        const unsigned shift = unsigned(s0 & 3) * 8;  // 0 or 16
        constexpr int K = (N + 1) / 4 + 1;             // aligned words: samples 0 .. 4K-1 >= N+1
        u32 a[K];
#pragma unroll
        for (int k = 0; k < K; ++k) a[k] = __funnelshift_r(w[k], w[k + 1], shift);
        u32 even[N / 2 + 1];                           // positions 0, 2, .., N - 1 or N: samples (i, i+1) widened
#pragma unroll
        for (int j = 0; j <= N / 2; ++j) even[j] = __byte_perm(a[j / 2], 0, j & 1 ? 0x4342 : 0x4140);
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = i & 1 ? __byte_perm(even[i / 2], even[i / 2 + 1], 0x5432) : even[i / 2];
    } else if constexpr (sizeof(T) == 2) {
        const u32* w = reinterpret_cast<const u32*>(row + s0);
        u32 even[N / 2 + 1];
#pragma unroll
        for (int j = 0; j <= N / 2; ++j) even[j] = w[j];
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = i & 1 ? __byte_perm(even[i / 2], even[i / 2 + 1], 0x5432) : even[i / 2];
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = bits_of<T>(row[s0 + i]);
    }
}

// Register-built tables, level L onwards: stores positions 0 .. N-1 of v (table 2^L from position s0 of
// staged row r) where table 2^L is kept, then doubles v in registers for the next level.
template <class T, bool Dilate, int C, int L, int N, bool Transposed = false>
__device__ __forceinline__ void store_levels(const Params& p, u32* tile, u32 (&v)[N], int r, int s0) {
    constexpr bool pairs = sizeof(T) < 4;
    constexpr int seg = segment<pairs>;
    if constexpr (L < max_levels) {
        if (L >= p.levels) return;
        const int q = r - p.store_row0[L];
        if (q >= 0 && q < p.store_rows[L]) {
            if constexpr (Transposed) {
                u32* w = tile + p.store_base[L] + q;
#pragma unroll
                for (int i = 0; i < seg; ++i) {
                    if (s0 + i >= p.positions) break;
                    if constexpr (pairs) w[((i & 1) * p.half + s0 / 2 + (i >> 1)) * p.rs] = v[i];
                    else w[(s0 + i) * p.rs] = v[i];
                }
            } else {
                u32* w = tile + p.store_base[L] + q * p.pitch;
#pragma unroll
                for (int i = 0; i < seg; ++i) {
                    if (s0 + i >= p.positions) break;
                    if constexpr (pairs) w[(i & 1) * p.half + s0 / 2 + (i >> 1)] = v[i];
                    else w[s0 + i] = v[i];
                }
            }
        }
        constexpr int shift = (1 << L) * C;
        if constexpr (((2 << L) - 1) * C <= reg_reach_of(C)) {  // table 2^(L+1) fits the window
            if (L + 1 < p.levels) {
#pragma unroll
                for (int i = 0; i + shift < N; ++i) v[i] = ext<T, Dilate>(v[i], v[i + shift]);
                store_levels<T, Dilate, C, L + 1, N, Transposed>(p, tile, v, r, s0);
            }
        }
    }
}

// How the register path loads its samples (a template parameter, so each keeps its own register
// allocation): global_loads (thread_loads: every load through read_sample's border tests); for staged_rows
// raw_transposed (raw rows staged in shared memory once, the tables built from there column-major), and
// where shared memory is short raw_staging (the tables row-major) or inside_loads (no raw rows: global
// loads, which blocks inside the image make without border tests).
enum Stage { global_loads, inside_loads, raw_staging, raw_transposed };

// The register path held at 3 blocks per SM for C <= 3 (80 registers), 2 for C = 4: unbounded, ptxas's
// choice moves with unrelated code (global_loads' u8 C = 1 kernel took 80 registers, then 94 once the other
// stages were added; inside_loads 128-164 for C = 3, 4).
template <class T, bool Dilate, int C, bool Reg, int Stage>
__global__ void __launch_bounds__(block_threads, Reg ? (C <= 3 ? 3 : 2) : 1)
    morph_chords_kernel(const __grid_constant__ Params p) {
    constexpr bool pairs = sizeof(T) < 4;  // two samples per word
    extern __shared__ __align__(16) u32 tile[];
    const int tid = threadIdx.x;
    const int by = int(blockIdx.x) / p.blocks_x, bx = int(blockIdx.x) - by * p.blocks_x;
    const int x0 = bx * p.tile_samples, y0 = by * p.th;
    const int sx0 = x0 + p.sx_lo, gy0 = y0 + p.y_lo;
    const int col = tid % p.gx, row0 = (tid / p.gx) * rows_per_thread;
    u32 acc[rows_per_thread];
#pragma unroll
    for (int t = 0; t < rows_per_thread; ++t) acc[t] = p.identity;

    if constexpr (Reg) {
        // 1'. every kept table straight from global memory, doubling in registers
        constexpr int seg = segment<pairs>, N = seg + reg_reach_of(C) + (pairs ? 1 : 0);
        const int segs = (p.positions + seg - 1) / seg;
        // The staged region: rows gy0 .. + rows, samples sx0 .. + (segs - 1) * seg + N (every load of every
        // item, the unused tail included: loads past p.load only reach positions no table keeps), raw
        // staging: raw_cols (raw_positions' reach).
        const int span = Stage >= raw_staging ? p.raw_cols : (segs - 1) * seg + N;
        const bool inside = Stage != global_loads && gy0 >= 0 && gy0 + p.rows <= p.height && sx0 >= 0 && sx0 + span <= p.samples;
        if constexpr (Stage >= raw_staging) {
            // 1''. raw samples, one warp a row (lanes on consecutive samples: coalesced), raw_rows at a time;
            // then the tables of those rows from shared memory (uniform loop: kernel parameters only).
            T* raw = reinterpret_cast<T*>(tile + p.raw_base);
            const int warp = tid / 32, lane = tid % 32;
            // whole words from global memory, where the aligned words around the staged samples (3 bytes
            // before, up to 7 after) lie inside the row
            const int bytes = p.raw_cols * int(sizeof(T));
            const bool wide = inside && sx0 >= 3 && sx0 + p.raw_cols + 8 <= p.samples;
            for (int c0 = 0; c0 < p.rows; c0 += p.raw_rows) {
                const int crows = min(p.raw_rows, p.rows - c0);
                for (int q = warp; q < crows; q += block_threads / 32) {
                    T* dst = raw + q * p.raw_pitch;
                    if (wide) {
                        // 4 bytes a lane: aligned LDG.32 pairs (the second from the same lines) and one funnel
                        // shift into one STS.32, instead of a load and a store per sample
                        const auto at = reinterpret_cast<std::uintptr_t>(p.in + (plane_rows(p) + std::size_t(gy0 + c0 + q)) * p.in_pitch) +
                                        std::uintptr_t(sx0) * sizeof(T);
                        const u32* src = reinterpret_cast<const u32*>(at & ~std::uintptr_t(3));
                        const unsigned shift = unsigned(at & 3) * 8;
                        u32* to = reinterpret_cast<u32*>(dst);
                        for (int k = lane; k * 4 < bytes; k += 32) to[k] = __funnelshift_r(__ldg(src + k), __ldg(src + k + 1), shift);
                    } else if (inside) {
                        const T* src = reinterpret_cast<const T*>(p.in + (plane_rows(p) + std::size_t(gy0 + c0 + q)) * p.in_pitch) + sx0;
                        for (int s = lane; s < p.raw_cols; s += 32) dst[s] = __ldg(src + s);
                    } else {
                        const int row = source_row(p, gy0 + c0 + q);
                        for (int s = lane; s < p.raw_cols; s += 32) dst[s] = from_bits<T>(read_sample<T, C>(p, row, sx0 + s));
                    }
                }
                __syncthreads();
                for (int id = tid; id < crows * segs; id += block_threads) {
                    // row-major tables: a warp's items along a row (its stores on consecutive words);
                    // column-major: down a column (lanes on consecutive rows, raw_pitch odd in words)
                    const int q = Stage == raw_transposed ? id % crows : id / segs;
                    const int s0 = (Stage == raw_transposed ? id / crows : id - q * segs) * seg;
                    u32 v[N];
                    raw_positions<T, N>(raw + q * p.raw_pitch, s0, v);
                    store_levels<T, Dilate, C, 0, N, Stage == raw_transposed>(p, tile, v, c0 + q, s0);
                }
                __syncthreads();  // the next chunk's staging overwrites raw; the last one: tables complete
            }
        } else {
            for (int id = tid; id < p.rows * segs; id += block_threads) {
                const int r = id / segs, s0 = (id - r * segs) * seg;
                u32 v[N];
                if (Stage == inside_loads && inside) {
#pragma unroll
                    for (int i = 0; i < N; ++i) v[i] = i < p.load ? read_inside<T>(p, gy0 + r, sx0 + s0 + i) : 0u;
                } else {
                    const int row = source_row(p, gy0 + r);
#pragma unroll
                    for (int i = 0; i < N; ++i) v[i] = i < p.load ? read_sample<T, C>(p, row, sx0 + s0 + i) : 0u;
                }
                if constexpr (pairs) {
#pragma unroll
                    for (int i = 0; i + 1 < N; ++i) v[i] |= v[i + 1] << 16;  // word of position i: samples i, i+1
                }
                store_levels<T, Dilate, C, 0, N>(p, tile, v, r, s0);
            }
            __syncthreads();
        }
        // 2'. every chord
        constexpr bool transposed = Stage == raw_transposed;
        const int step = transposed ? 1 : p.pitch;  // words from one output row to the next
        const u32* base = tile + (transposed ? col * p.rs + row0 : row0 * p.pitch + col);
        for (int k = 0; k < p.level_end[max_levels - 1]; ++k) {
            const u32* a = base + p.chord_a[k];
            const int b = p.chord_b[k];
            const int run = transposed ? p.chord_run[k] : 1;
            if (transposed && run > 1) {
                // A run of chords on rows 0 .. run-1 (relative): output row t takes rows t .. t + run - 1 of
                // h(r) = ext(a[r], b[r]); each of the run + 7 rows read once, held in a window w[t] =
                // h(j + t) that moves down two rows a step (two chords per VIMNMX3): 2 reads per chord
                // instead of 16.
                const u32* bp = base + b;
                const auto h = [&](int r) { return b < 0 ? a[r] : ext<T, Dilate>(a[r], bp[r]); };
                u32 w[rows_per_thread + 1];
#pragma unroll
                for (int t = 0; t < rows_per_thread; ++t) w[t] = h(t);
                int j = 0;
                for (; j + 1 < run; j += 2) {
                    w[rows_per_thread] = h(j + rows_per_thread);
#pragma unroll
                    for (int t = 0; t < rows_per_thread; ++t) acc[t] = ext3<T, Dilate>(acc[t], w[t], w[t + 1]);
#pragma unroll
                    for (int t = 0; t + 1 < rows_per_thread; ++t) w[t] = w[t + 2];
                    if (j + 2 < run) w[rows_per_thread - 1] = h(j + 2 + rows_per_thread - 1);
                }
                if (j < run) {
#pragma unroll
                    for (int t = 0; t < rows_per_thread; ++t) acc[t] = ext<T, Dilate>(acc[t], w[t]);
                }
            } else if (b < 0) {
#pragma unroll
                for (int t = 0; t < rows_per_thread; ++t) acc[t] = ext<T, Dilate>(acc[t], a[t * step]);
            } else {
                const u32* bp = base + b;
#pragma unroll
                for (int t = 0; t < rows_per_thread; ++t) acc[t] = ext3<T, Dilate>(acc[t], a[t * step], bp[t * step]);
            }
        }
    } else {
        // 1. stage T_1
        const bool inside = p.schedule == ChordSchedule::staged_rows && gy0 >= 0 && gy0 + p.rows <= p.height && sx0 >= 0 &&
                            sx0 + p.pitch <= p.samples;
        if constexpr (pairs) {
            const int items = p.rows * p.half;  // item (r, m): samples 2m, 2m+1
            for (int id = tid; id < items; id += block_threads) {
                const int r = id / p.half, m = id - r * p.half;
                const int row = source_row(p, gy0 + r);
                const u32 a = inside ? read_inside<T>(p, row, sx0 + 2 * m) : read_sample<T, C>(p, row, sx0 + 2 * m);
                const u32 b = inside ? read_inside<T>(p, row, sx0 + 2 * m + 1) : read_sample<T, C>(p, row, sx0 + 2 * m + 1);
                u32* w = tile + r * p.pitch;
                w[m] = a | (b << 16);  // plane 0, word m: samples (2m, 2m+1)
                auto* odd = reinterpret_cast<unsigned short*>(w + p.half);  // plane 1, word m: (2m+1, 2m+2)
                odd[2 * m] = static_cast<unsigned short>(b);
                if (m > 0) odd[2 * m - 1] = static_cast<unsigned short>(a);
            }
        } else {
            const int items = p.rows * p.pitch;
            for (int id = tid; id < items; id += block_threads) {
                const int r = id / p.pitch, s = id - r * p.pitch;
                tile[r * p.pitch + s] = inside ? read_inside<T>(p, gy0 + r, sx0 + s) : read_sample<T, C>(p, source_row(p, gy0 + r), sx0 + s);
            }
        }
        __syncthreads();

        for (int level = 0; level < p.levels; ++level) {
            // 2a. chords of power 2^level (uniform loop: the bounds are kernel parameters)
            const int k0 = level ? p.level_end[level - 1] : 0, k1 = p.level_end[level];
            for (int k = k0; k < k1; ++k) {
                const u32* base = tile + row0 * p.pitch + col;
                const u32* a = base + p.chord_a[k];
                const int b = p.chord_b[k];
                if (b < 0) {
    #pragma unroll
                    for (int t = 0; t < rows_per_thread; ++t) acc[t] = ext<T, Dilate>(acc[t], a[t * p.pitch]);
                } else {
                    const u32* bp = base + b;
    #pragma unroll
                    for (int t = 0; t < rows_per_thread; ++t) acc[t] = ext3<T, Dilate>(acc[t], a[t * p.pitch], bp[t * p.pitch]);
                }
            }
            if (level + 1 == p.levels) break;
            // 2b. T_2p(s) = ext(T_p(s), T_p(s + p*C)), in place, forward along each row
            const int shift = (1 << level) * C;
            const int per_row = p.level_items[level + 1], r0 = p.level_row0[level + 1];
            const int items = p.level_rows[level + 1] * per_row;
            if constexpr (pairs) {
                // item (r, m): the words of s = 2m (plane 0) and 2m + 1 (plane 1)
                const int e0 = shift & 1, i0 = shift >> 1, e1 = (shift + 1) & 1, i1 = (shift + 1) >> 1;
                for (int chunk = 0; chunk < items; chunk += chunk_items * block_threads) {
                    u32 v0[chunk_items], v1[chunk_items];
    #pragma unroll
                    for (int u = 0; u < chunk_items; ++u) {
                        const int id = chunk + u * block_threads + tid;
                        if (id >= items) break;
                        const int q = id / per_row, m = id - q * per_row;
                        const u32* w = tile + (r0 + q) * p.pitch;
                        v0[u] = w[m];
                        v1[u] = w[p.half + m];
                        if (m + i0 < p.half) v0[u] = ext<T, Dilate>(v0[u], w[e0 * p.half + m + i0]);
                        if (m + i1 < p.half) v1[u] = ext<T, Dilate>(v1[u], w[e1 * p.half + m + i1]);
                    }
                    __syncthreads();
    #pragma unroll
                    for (int u = 0; u < chunk_items; ++u) {
                        const int id = chunk + u * block_threads + tid;
                        if (id >= items) break;
                        const int q = id / per_row, m = id - q * per_row;
                        tile[(r0 + q) * p.pitch + m] = v0[u];
                        tile[(r0 + q) * p.pitch + p.half + m] = v1[u];
                    }
                    __syncthreads();
                }
            } else {
                for (int chunk = 0; chunk < items; chunk += chunk_items * block_threads) {
                    u32 v[chunk_items];
    #pragma unroll
                    for (int u = 0; u < chunk_items; ++u) {
                        const int id = chunk + u * block_threads + tid;
                        if (id >= items) break;
                        const int q = id / per_row, s = id - q * per_row;
                        const u32* w = tile + (r0 + q) * p.pitch;
                        v[u] = w[s];
                        if (s + shift < p.pitch) v[u] = ext<T, Dilate>(v[u], w[s + shift]);
                    }
                    __syncthreads();
    #pragma unroll
                    for (int u = 0; u < chunk_items; ++u) {
                        const int id = chunk + u * block_threads + tid;
                        if (id >= items) break;
                        const int q = id / per_row, s = id - q * per_row;
                        tile[(r0 + q) * p.pitch + s] = v[u];
                    }
                    __syncthreads();
                }
            }
        }
    }

    // 3. store
    const int xs = x0 + col * (pairs ? 2 : 1);
    if (xs >= p.samples) return;
#pragma unroll
    for (int t = 0; t < rows_per_thread; ++t) {
        const int y = y0 + row0 + t;
        if (y >= p.height) break;
        T* out = reinterpret_cast<T*>(p.out + (plane_rows(p) + std::size_t(y)) * p.out_pitch) + xs;
        const u32 w = acc[t];
        if constexpr (!pairs) {
            *out = __uint_as_float(w);
        } else if (xs + 1 < p.samples && reinterpret_cast<std::uintptr_t>(out) % (2 * sizeof(T)) == 0) {
            if constexpr (sizeof(T) == 1)  // bytes 0 and 2: the two u8 samples
                *reinterpret_cast<unsigned short*>(out) = static_cast<unsigned short>(__byte_perm(w, 0, 0x0020));
            else
                *reinterpret_cast<u32*>(out) = w;
        } else {
            out[0] = T(w & 0xFFFFu);
            if (xs + 1 < p.samples) out[1] = T(w >> 16);
        }
    }
}

template <class T, bool Dilate, int C, bool Reg>
void launch_typed(Params& p, std::size_t bytes, int blocks, cudaStream_t stream) {
    auto kernel = morph_chords_kernel<T, Dilate, C, Reg, global_loads>;
    if constexpr (Reg) {
        if (p.raw_cols > 0 && p.rs > 0) kernel = morph_chords_kernel<T, Dilate, C, Reg, raw_transposed>;
        else if (p.raw_cols > 0) kernel = morph_chords_kernel<T, Dilate, C, Reg, raw_staging>;
        else if (p.schedule == ChordSchedule::staged_rows) kernel = morph_chords_kernel<T, Dilate, C, Reg, inside_loads>;
    }
    if (bytes > 48 * 1024)
        APRON_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    kernel<<<dim3(unsigned(blocks), 1, unsigned(p.planes)), block_threads, bytes, stream>>>(p);
    APRON_CUDA_CHECK_LAUNCH("morph_chords");
}

template <class T, bool Dilate, bool Reg>
void launch_channels(int C, Params& p, std::size_t bytes, int blocks, cudaStream_t stream) {
    switch (C) {
    case 1: return launch_typed<T, Dilate, 1, Reg>(p, bytes, blocks, stream);
    case 2: return launch_typed<T, Dilate, 2, Reg>(p, bytes, blocks, stream);
    case 3: return launch_typed<T, Dilate, 3, Reg>(p, bytes, blocks, stream);
    default: return launch_typed<T, Dilate, 4, Reg>(p, bytes, blocks, stream);
    }
}

// The kernel for one sample type: erosion or dilation, the register path or the shared-memory one, C channels.
template <class T>
void launch(bool dilate, bool reg, int C, Params& p, std::size_t bytes, int blocks, cudaStream_t stream) {
    if (reg) {
        if (dilate) launch_channels<T, true, true>(C, p, bytes, blocks, stream);
        else launch_channels<T, false, true>(C, p, bytes, blocks, stream);
    } else {
        if (dilate) launch_channels<T, true, false>(C, p, bytes, blocks, stream);
        else launch_channels<T, false, false>(C, p, bytes, blocks, stream);
    }
}

extern template void launch<std::uint8_t>(bool, bool, int, Params&, std::size_t, int, cudaStream_t);
extern template void launch<std::uint16_t>(bool, bool, int, Params&, std::size_t, int, cudaStream_t);
extern template void launch<float>(bool, bool, int, Params&, std::size_t, int, cudaStream_t);

} // namespace apron::cuda::chords
