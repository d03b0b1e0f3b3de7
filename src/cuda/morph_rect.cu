// Rectangle (and line) morphology on CUDA: dilate / erode with a full W x H structuring element, both
// passes fused in one kernel over a shared-memory tile, O(1) extrema per pixel whatever the size.
//
// Result (SPEC.md, Morphology): out(x,y) = max (min) over i < W, j < H of in(x + i - ax, y + j - ay),
// outside pixels ignored (the identity, core/morph_value.hpp) or read through a border mode. Max and min
// are exact, so the result is the CPU and reference backends' value. f32: NaN is a missing sample; fmaxf /
// fminf from the NaN identity skip it, and a window of NaN and ignored pixels only comes out NaN (-inf and
// +inf stay as they are): no clamp, no test.
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
// Fast path (morph_rect_fast_kernel in morph_rect_fast.cuh): u8 / u16, 1-4 channels (C a compile-time tap
// stride over samples), a window span (W - 1) * C + 1 <= 27 samples with W <= 16 (W up to 16, 14, 9, 7 for
// C = 1..4), H <= 64, views aligned (input 4 / 8 bytes, output 16 bytes). It makes every whole 256-sample
// x 64-row output tile whose rows (with the vertical window) stay inside the image: columns that reach
// past the left / right edge are read per sample through the border rule (EdgeLoader; V of a mapped
// pixel is V of its source pixel), interior columns with no border code. Tile origins at x = 0 or 128 mod 256, whichever covers more. The general kernel above
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
// 56 registers (launch bounds 288 x 4): 4 blocks = 36 warps per SM; 37888 B of static shared memory (V
// pitch 148 words for the colour spans). ptxas (sm_90, CUDA 13.0), every u8 instantiation (C = 1..4, each
// W, dilate and erode): 56 registers, no spill but C = 4 with W = 4 and 7 (4 bytes, once per thread).
//
// Sides up to 64 run here (worst case f32, 4 channels, 64 x 64: 120 KB of shared memory at TH = 16); larger
// elements, or tiles over the device's shared memory, run the separable passes (morph_rect_passes.cu).
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
#include "core/morph_value.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_limits.hpp"
#include "cuda/morph_rect_fast.hpp"
#include "cuda/stream_scratch.hpp"
#include "cuda/launch_record.hpp"
#include "cuda/morph_rect_ops.cuh"

namespace apron::cuda {
namespace {

using namespace morph;

constexpr int block_threads = 256;
constexpr int out_words = 64;      // output words per tile row
constexpr int group_words = 2;     // output words per thread and store in phase 4
constexpr int vertical_rows = 16;  // outputs per thread, vertical pass
constexpr int horizontal_words = 8;  // outputs per thread, word-level horizontal pass
constexpr int max_side = 64;
constexpr std::size_t preferred_smem = 96 * 1024;

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

// Rows before row y of plane blockIdx.z: a volume's planes (p.height rows each, one pitch, one after another)
// are filtered alone, as a batch in one launch (runs_planes); an image is plane 0.
__device__ __forceinline__ std::size_t plane_row(const Params& p, int y) {
    return std::size_t(blockIdx.z) * std::size_t(p.height) + std::size_t(y);
}

template <class T>
__device__ __forceinline__ const T* in_row(const Params& p, int y) {
    return reinterpret_cast<const T*>(p.in + plane_row(p, y) * p.in_pitch);
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
    return r[mapped_sample<int>(s, p.width, p.channels, BorderMode(p.mode))];
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
        T* row = reinterpret_cast<T*>(p.out + plane_row(p, y) * p.out_pitch) + xs;
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

template <class T, bool Dilate>
void launch(const Params& base, const Geometry& g, int blocks, int planes, cudaStream_t stream) {
    Params p = base;
    p.e = g.e, p.sw = g.sw, p.L = g.L, p.nshift = g.nshift, p.nq = g.nq, p.iw = g.iw, p.pt = g.pt, p.pm = g.pm;
    p.pv = g.pv, p.th = g.th, p.tr = g.tr, p.region = g.region;
    auto kernel = morph_rect_kernel<T, Dilate>;
    if (g.bytes > 48 * 1024)
        APRON_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(g.bytes)));
    if (blocks <= 0) return;
    kernel<<<dim3(unsigned(blocks), 1, unsigned(planes)), block_threads, g.bytes, stream>>>(p);
    APRON_CUDA_CHECK_LAUNCH("morph_rect");
}

// The fused kernel takes sides up to 64 whose tile (TH = 16, the shape of the ring around the fast
// rectangle) fits one block's shared memory; larger elements run the separable passes.
bool tiled_fits(int sample_bytes, int C, const Mask& e) {
    static const int limit = smem_optin_limit();
    return e.width <= max_side && e.height <= max_side &&
           make_geometry(sample_bytes, C, e.width, e.height, e.anchor_x, 16).bytes <= std::size_t(limit);
}

} // namespace

bool morph_rect_supports(const MorphPlan& plan) {
    if (plan.algorithm != MorphAlgorithm::separable_rect) return false;
    const Mask& e = plan.step.element;
    if (e.width < 1 || e.height < 1) return false;
    for (double w : e.weights)
        if (w == 0) return false;
    // Any size: the passes' horizontal block (one staged row at worst) must fit shared memory for every
    // channel count (sm_90, 4 channels: widths up to ~14000, beyond apron's mask limit).
    static const int limit = smem_optin_limit();
    for (int C = 1; C <= max_channels; ++C)
        if (morph_rect_passes_smem(C, e.width) > std::size_t(limit)) return false;
    return true;
}

namespace {

// A colour rectangle wider than the fast kernel's span (morph_fast_max_width(C): 14, 9, 7 samples' worth
// for 2, 3, 4 channels) runs as a chain of fast passes: W x H is the Minkowski sum of W1 x H and
// horizontal segments W2 x 1, W3 x 1, .. (W1 + W2 + .. - (k - 1) = W), each within the fast kernel's span.
// Every pass's image is whole: its interior tiles come from the fast kernel on the previous pass's image
// (tiles whose reads stay inside the row: an image beyond the row is not the previous pass's), and its ring
// from the general kernel on the input with the rectangle made so far (the same values: extrema are exact).
// Each pass reads and writes the image once (2 bytes a sample for u8), where the general kernel's staged
// tile at 15x15 on RGB made 100 Gpix/s against 394 for a fast 7x7.
constexpr int max_chain_width = morph_fast_max_side;  // past it, the general kernel

bool wide_colour_takes(PixelType type, int C, int W, int H) {
    return (type == PixelType::u8 || type == PixelType::u16) && C >= 2 && C <= 4 && W > morph_fast_max_width(C) &&
           W <= max_chain_width && H >= 1 && H <= morph_fast_max_height;
}

MorphPlan with_rect(const MorphPlan& plan, int W, int H, int ax, int ay) {
    MorphPlan q = plan;
    Mask m(W, H, std::vector<double>(std::size_t(W) * std::size_t(H), 1.0));
    m.anchor_x = ax;
    m.anchor_y = ay;
    q.step.element = std::move(m);
    return q;
}

// The fast kernel's pass, if any, before the general kernel makes the rest: `plan` on `in`; reads_inside:
// only tiles whose reads stay inside the row.
struct FastPass {
    const MorphPlan& plan;
    ConstImageView in;
    bool reads_inside;
};

// One rectangle: the fast kernel's interior tiles (fast's plan and input, or these), then the general kernel
// (plan, in) for every other tile. Records its launch where `fast` is null (a chain records itself).
template <class T>
void run_rect(const MorphPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream, const FastPass* fast) {
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
    // Outside pixels: the identity when ignored, the border value (as the type stores it) for constant.
    T outside;
    if (plan.step.border == BorderMode::constant) outside = store_pixel<T>(plan.step.border_value);
    else outside = morph_identity<T>(dilate);
    if constexpr (std::is_same_v<T, float>) {
        u32 bits;
        std::memcpy(&bits, &outside, 4);
        p.outside = bits;
    } else {
        p.outside = u32(outside);
    }
    if (!tiled_fits(bytes, C, e)) {
        record_launch({"cuda.morph_rect", "passes"});
        return launch_morph_rect_passes(plan, in, out, p.mode, p.outside, stream);
    }
    // Interior tiles of the common case first, then the general kernel for the rest (it skips tiles the
    // fast kernel made; where they meet, both write the same exact values).
    if constexpr (sizeof(T) <= 2) {  // interior: no outside row, any border
        const FastPass own{plan, in, false};
        const FastPass& f = fast ? *fast : own;
        const MorphRectFastRegion r =
            launch_morph_rect_fast<T>(f.plan, f.in, out, p.mode, p.outside, stream, f.reads_inside);
        p.fx0 = r.x0, p.fx1 = r.x1, p.fy0 = r.y0, p.fy1 = r.y1;
    }
    if (!fast) record_launch({"cuda.morph_rect", p.fx1 > p.fx0 ? "fast" : ""});  // a chain records itself
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
    const int planes = in.shape.depth;  // one launch for a volume's planes (launch_morph_rect)
    if (dilate) launch<T, true>(p, g, blocks, planes, stream);
    else launch<T, false>(p, g, blocks, planes, stream);
}

// The chain of fast passes for a wide colour rectangle (see wide_colour_takes), through one or two
// stream-ordered temporaries (cuda/stream_scratch.hpp).
template <class T>
void run_wide_colour(const MorphPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream) {
    const Mask& e = plan.step.element;
    const int C = in.channels(), Wmax = morph_fast_max_width(C);
    const std::size_t pitch = (std::size_t(in.width()) * C * sizeof(T) + 255) / 256 * 256;
    const std::size_t bytes = pitch * std::size_t(in.height());
    const int passes = 1 + (e.width - 2) / (Wmax - 1);  // Wmax, then segments adding up to Wmax - 1 each
    const Scratch tmp[2] = {{passes > 1 ? bytes : 0, stream, "a rectangle chain's image"},
                            {passes > 2 ? bytes : 0, stream, "a rectangle chain's second image"}};
    auto image = [&](int i) { return ImageView{static_cast<std::byte*>(tmp[i].get()), in.shape, pitch, Memory::device}; };
    // Pass 1: W1 x H with the vertical window, whole (fast interior and general ring) from the input.
    int made = Wmax, anchor = std::min(e.anchor_x, Wmax - 1);
    ImageView dst = passes == 1 ? out : image(0);
    const MorphPlan first = with_rect(plan, made, e.height, anchor, e.anchor_y);
    const FastPass whole{first, in, false};
    run_rect<T>(first, in, dst, stream, &whole);
    for (int k = 1; k < passes; ++k) {
        const ConstImageView src = dst;
        const int w = std::min(Wmax, e.width - made + 1);
        const int a = std::min(e.anchor_x - anchor, w - 1);
        made += w - 1;
        anchor += a;
        dst = k == passes - 1 ? out : image(k % 2);
        const MorphPlan segment = with_rect(plan, w, 1, a, 0);
        const FastPass fast{segment, src, true};
        run_rect<T>(with_rect(plan, made, e.height, anchor, e.anchor_y), in, dst, stream, &fast);
    }
}

} // namespace

const char* morph_rect_form(const MorphPlan& plan, int channels) {
    const Mask& e = plan.step.element;
    if (!tiled_fits(int(bytes_per_sample(plan.type)), channels, e)) return "passes";
    if (wide_colour_takes(plan.type, channels, e.width, e.height)) return "fast chain";
    return morph_rect_fast_path_takes(plan.type, channels, e.width, e.height) ? "fast" : "";
}

bool morph_rect_fast_path_takes(PixelType type, int channels, int se_width, int se_height) {
    return (type == PixelType::u8 || type == PixelType::u16) && channels >= 1 && channels <= 4 && se_width >= 1 &&
           se_height >= 1 && se_width <= morph_fast_max_width(channels) && se_height <= morph_fast_max_height;
}

bool morph_rect_batches_planes(const MorphPlan& plan, int channels) {
    const Mask& e = plan.step.element;
    const int bytes = int(bytes_per_sample(plan.type));
    return tiled_fits(bytes, channels, e) && !wide_colour_takes(plan.type, channels, e.width, e.height);
}

void launch_morph_rect(const MorphPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream) {
    if (in.empty()) return;
    const Mask& e = plan.step.element;
    // A volume: its planes as blockIdx.z of the tiled kernels (run_rect); the separable passes and the chain of
    // fast passes, whose temporaries are one plane's, launch once per plane.
    if (in.shape.depth > 1 && !morph_rect_batches_planes(plan, in.channels())) {
        for (int z = 0; z < in.shape.depth; ++z) launch_morph_rect(plan, in.plane(z), out.plane(z), stream);
        return;
    }
    with_type(plan.type, [&]<class T>() {
        if constexpr (sizeof(T) <= 2) {
            const std::size_t la = sizeof(T) == 1 ? 4 : 8;
            const bool aligned = reinterpret_cast<std::uintptr_t>(in.data) % la == 0 && in.pitch % la == 0 &&
                                 reinterpret_cast<std::uintptr_t>(out.data) % 16 == 0 && out.pitch % 16 == 0;
            if (aligned && wide_colour_takes(plan.type, in.channels(), e.width, e.height) &&
                tiled_fits(int(sizeof(T)), in.channels(), e)) {
                record_launch({"cuda.morph_rect", "fast chain"});
                return run_wide_colour<T>(plan, in, out, stream);
            }
        }
        run_rect<T>(plan, in, out, stream, nullptr);
    });
}

} // namespace apron::cuda
