#pragma once
// The fast rectangle-morphology kernel, included by morph_rect_fast.cu (the host side) and the four files of
// its kernels, one per pixel type and operation (morph_rect_fast_u8_dilate.cu, ...), which compile in
// parallel. u8 / u16, 1-4 interleaved channels, the channel count C a compile-time stride: the kernel works on samples. The vertical pass does not know C
// (columns of samples); the horizontal pass takes W taps C samples apart. A sample-pair word with C odd
// mixes channels, but both samples of an output word then have their taps at the same offsets j*C, so
// the word of samples o, o + 1 (one PRMT from two aligned words when o is odd) serves both at once.
//
// Cost per output word (2 samples), u8, from the instruction mix of the gray kernel (see morph_rect.cu):
// phase A is C-agnostic (per sample the same as gray); phase B is one VIMNMX3 per two taps, (W - 1) / 2 per
// word for C >= 3 and less for C <= 2 (shared pairs), plus one PRMT per shifted word: RGB 7x7 3 VIMNMX3 +
// ~1 PRMT per word against gray 7x7's ~3.3 (pairs and chain): the same per sample, so colour should run at
// gray's per-sample rate (DRAM bound: 2 bytes per sample).
#include <cstddef>
#include <cstdint>

#include "apron/errors.hpp"
#include "core/border_index.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/morph_rect_fast.hpp"
#include "cuda/morph_rect_ops.cuh"

namespace apron::cuda {
namespace rect_fast {

using namespace morph;

// Tile: 256 output samples x 64 rows, 288 threads.
//  A. vertical, in registers: thread = one aligned 4-sample column (u8: one 32-bit load, widened to two
//     u16x2 words by two PRMT; u16: one 64-bit load) x 16 output rows, straight from global memory (no
//     staging, no border code: interior tiles only). Running extremum of H rows: k <= 7 a VIMNMX3 chain,
//     k >= 8 van Herk / Gil-Werman segments aligned to the thread's 16 rows. Result to shared memory, V
//     (u16x2 words, row pitch 148 words), from the 4-sample column that holds the first window's start.
//  B. horizontal, in registers: thread = one row x 8 output words (16 samples); loads its words with
//     16-byte LDS (rows of a quarter warp on distinct banks), builds the odd-shifted words (one PRMT),
//     W and C compile time: a VIMNMX3 chain over the taps j*C (C = 1, 2 with W > 5: pairs D first, shared
//     by outputs C words apart). u8 narrows with one PRMT per 4 samples, 16-byte global stores (a row's 4
//     threads of a warp write 64 contiguous bytes).
constexpr int fast_tw = 256;  // output samples per tile row
constexpr int fast_th = 64;   // output rows per tile
constexpr int fast_r = 16;    // rows per thread, vertical
constexpr int fast_g = 8;     // output words (2 samples) per thread, horizontal
constexpr int fast_cols = 72;      // phase A columns per strip: 64 + the halo (<= 72 for spans <= 27)
constexpr int fast_threads = 288;  // 4 strips x 72 columns, all in one round; phase B: the first 256
// V pitch in words: >= 2 * 72 (stores) and >= 120 + 24 (phase B's 16-byte reads at spans <= 27);
// pitch / 4 odd: the 8 rows of a quarter warp's 16-byte reads start on distinct bank quads.
constexpr int fast_pv = 148;
static_assert(fast_pv >= 2 * fast_cols && (fast_pv / 4) % 2 == 1);

struct FastParams {
    const std::byte* in;
    std::size_t in_pitch;
    std::byte* out;
    std::size_t out_pitch;
    int xs, ys;    // first tile's output origin (xs a multiple of 128 samples, ys of 64 rows)
    int ax, ay, mh;
    int cols;      // 4-sample columns staged per tile row
    int width, samples;  // pixels, samples (width * C) per row
    int height;          // rows of a plane (a volume's planes are blockIdx.z: one launch)
    int mode;      // -1: outside pixels read `outside`, else a BorderMode
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

// A column that reaches outside the image (left / right tiles): per sample, the same channel of its
// border-mapped source pixel (V of a mapped pixel is V of its source pixel: the vertical window is inside
// the image) or the outside value (ignored: the identity; constant).
template <class T>
struct EdgeLoader {
    const std::byte* base;  // row 0 of the strip, column 0 of the image
    unsigned pitch;
    int x[4];  // source sample of each lane, -1: outside value
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
            van_herk_segment<fast_r, 2, P>(ld, mh, o);
        } else {
            Pair h[fast_r / 2];
            van_herk_segment<fast_r / 2, 2, P>(ld, mh, h);
#pragma unroll
            for (int t = 0; t < fast_r / 2; ++t) o[t] = h[t];
            van_herk_segment<fast_r / 2, 2, P>(ld.down(fast_r / 2), mh, h);
#pragma unroll
            for (int t = 0; t < fast_r / 2; ++t) o[fast_r / 2 + t] = h[t];
        }
    }
}

// E = (x0 - ax*C) & 3: V word VB + i (VB = E / 2) holds the samples 2i - PAR, 2i - PAR + 1 (PAR = E & 1) of
// the thread's windows; output word g takes the taps 2g + j*C, j < W (both its samples: same channels).
template <int C, int W, int E, class T, class Op>
__device__ __forceinline__ void fast_horizontal(const u32* vs, const FastParams& p, int x0, int y0, int tid) {
    constexpr int G = fast_g, PAR = E & 1, VB = E >> 1;
    constexpr int NS = PAR + 2 * (G - 1) + (W - 1) * C + 1;  // sample-pair words of offsets 0 .. NS-1
    constexpr int NV = NS / 2 + 1;
    constexpr int N4 = (VB + NV + 3) / 4;
    // Warp w: rows 8w .. 8w + 7 (lane & 7), groups 4i + (lane >> 3) in iteration i.
    static_assert(fast_th == 8 * 8 && fast_tw / (2 * G) == 16);  // 8 warps
    const int r = (tid >> 5) * 8 + (tid & 7), grp0 = (tid >> 3) & 3;
    const u32* const vrow = vs + r * fast_pv + grp0 * G;
    static_assert(8 * (4 * 3 + 3) + 4 * N4 <= fast_pv);  // the last group's 16-byte reads stay in the row
    std::byte* const orow = p.out + (std::size_t(blockIdx.z) * std::size_t(p.height) + std::size_t(y0 + r)) * p.out_pitch +
                            std::size_t(x0 + grp0 * 2 * G) * sizeof(T);
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
        u32 sh[NV];  // sh[i]: samples 2i + 1, 2i + 2
#pragma unroll
        for (int i = 0; i + 1 < NV; ++i) sh[i] = __byte_perm(v[i], v[i + 1], 0x5432);
        auto s = [&](int o) { return (o & 1) ? sh[o >> 1] : v[o >> 1]; };  // o compile time after unrolling
        u32 o[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const int b = PAR + 2 * g;
            u32 acc;
            if constexpr (W <= 5 || C >= 3) {
                acc = s(b);
                int j = 1;
#pragma unroll
                for (; j + 1 < W; j += 2) acc = Op::op3(acc, s(b + j * C), s(b + (j + 1) * C));
                if (j < W) acc = Op::op(acc, s(b + j * C));
            } else {
                // D(m) = ext(s(b + 2mC), s(b + (2m + 1)C)): output g + C reuses D(m + 1) of output g (CSE), so
                // C = 1 shares each D among 8 outputs, C = 2 among 4; for C >= 3 a plain chain is as cheap.
                auto d = [&](int m) { return Op::op(s(b + 2 * m * C), s(b + (2 * m + 1) * C)); };
                acc = d(0);
                int m = 1;
#pragma unroll
                for (; m + 1 < W / 2; m += 2) acc = Op::op3(acc, d(m), d(m + 1));
                if (m < W / 2) acc = Op::op(acc, d(m));
                if (W & 1) acc = Op::op(acc, s(b + (W - 1) * C));
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

template <class T, bool Dilate, int C, int W>
__global__ void __launch_bounds__(fast_threads, 4) morph_rect_fast_kernel(const FastParams p) {
    static_assert((W - 1) * C + 1 <= morph_fast_max_span);
    using Op = OpFor<T, Dilate>;
    using P = PairOp<Op>;
    __shared__ __align__(16) u32 vs[fast_th * fast_pv];  // V
    const int tid = threadIdx.x;
    const int x0 = p.xs + int(blockIdx.x) * fast_tw, y0 = p.ys + int(blockIdx.y) * fast_th;
    const int sx = x0 - p.ax * C;  // V sample 0 = input sample sx (may be < 0: left tiles)
    const int e = sx & 3;  // staged from cx = sx - e
    const int cx = sx - e;

    // A. vertical
    // Strip q = tid / 72 (rows 16q .. 16q + 15), column tid % 72: one round, no halo tail.
    static_assert(fast_th / fast_r * fast_cols == fast_threads && (3 + fast_tw - 1 + morph_fast_max_span + 3) / 4 <= fast_cols);
    const int q = tid / fast_cols, col = tid - q * fast_cols;
    if (col < p.cols) {
        const std::byte* rows =
            p.in + (std::size_t(blockIdx.z) * std::size_t(p.height) + std::size_t(y0 - p.ay + q * fast_r)) * p.in_pitch;
        const int gx = cx + 4 * col;
        u32* d = vs + q * fast_r * fast_pv + 2 * col;
        if (gx >= 0 && gx + 4 <= p.samples) {
            Pair o[fast_r];
            fast_vertical<P>(ColumnLoader<T>{rows + std::size_t(gx) * sizeof(T), unsigned(p.in_pitch)}, p.mh, o);
#pragma unroll
            for (int t = 0; t < fast_r; ++t) *reinterpret_cast<uint2*>(d + t * fast_pv) = make_uint2(o[t].a, o[t].b);
        } else {
            // Edge columns (a few per edge tile): plain running extremum, few registers.
            EdgeLoader<T> ld{rows, unsigned(p.in_pitch), {}, p.outside};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int si = gx + i;
                if (si >= 0 && si < p.samples) {
                    ld.x[i] = si;
                } else if (p.mode < 0) {
                    ld.x[i] = -1;
                } else {
                    ld.x[i] = mapped_sample<int>(si, p.width, C, BorderMode(p.mode));
                }
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
    case 0: fast_horizontal<C, W, 0, T, Op>(vs, p, x0, y0, tid); break;
    case 1: fast_horizontal<C, W, 1, T, Op>(vs, p, x0, y0, tid); break;
    case 2: fast_horizontal<C, W, 2, T, Op>(vs, p, x0, y0, tid); break;
    default: fast_horizontal<C, W, 3, T, Op>(vs, p, x0, y0, tid); break;
    }
}


template <class T, bool Dilate, int C, int W = 1>
void launch_fast_w(int w, const FastParams& fp, dim3 grid, cudaStream_t stream) {
    if constexpr (W <= morph_fast_max_width(C)) {
        if (w != W) return launch_fast_w<T, Dilate, C, W + 1>(w, fp, grid, stream);
        morph_rect_fast_kernel<T, Dilate, C, W><<<grid, fast_threads, 0, stream>>>(fp);
        APRON_CUDA_CHECK_LAUNCH("morph_rect_fast");
    }
}

// One dispatcher for the channel counts: the kernel is one template over samples with C a stride.
template <class T, bool Dilate>
void launch_fast_c(int channels, int w, const FastParams& fp, dim3 grid, cudaStream_t stream) {
    switch (channels) {
    case 1: return launch_fast_w<T, Dilate, 1>(w, fp, grid, stream);
    case 2: return launch_fast_w<T, Dilate, 2>(w, fp, grid, stream);
    case 3: return launch_fast_w<T, Dilate, 3>(w, fp, grid, stream);
    default: return launch_fast_w<T, Dilate, 4>(w, fp, grid, stream);
    }
}

// Instantiated per sample type and operation in morph_rect_fast_{u8,u16}_{dilate,erode}.cu, which compile
// side by side (one file per type took 80 s of the GPU machine's build).
extern template void launch_fast_c<std::uint8_t, true>(int, int, const FastParams&, dim3, cudaStream_t);
extern template void launch_fast_c<std::uint8_t, false>(int, int, const FastParams&, dim3, cudaStream_t);
extern template void launch_fast_c<std::uint16_t, true>(int, int, const FastParams&, dim3, cudaStream_t);
extern template void launch_fast_c<std::uint16_t, false>(int, int, const FastParams&, dim3, cudaStream_t);

} // namespace rect_fast

// The fast kernel's tiles (aligned views, W <= morph_fast_max_width(C), H <= 64) whose reads stay inside
// the image rows and whose outputs are whole.
template <class T>
MorphRectFastRegion launch_morph_rect_fast(const MorphPlan& plan, ConstImageView in, ImageView out, int mode,
                                           std::uint32_t outside, cudaStream_t stream, bool reads_inside) {
    static_assert(sizeof(T) <= 2);
    using namespace rect_fast;
    const Mask& el = plan.step.element;
    const int W = el.width, H = el.height, C = in.channels();
    if (C < 1 || C > 4 || W > morph_fast_max_width(C) || H > morph_fast_max_height) return {};
    const auto in_addr = reinterpret_cast<std::uintptr_t>(in.data);
    const auto out_addr = reinterpret_cast<std::uintptr_t>(out.data);
    const std::size_t la = sizeof(T) == 1 ? 4 : 8;
    if (in_addr % la || in.pitch % la || out_addr % 16 || out.pitch % 16 || in.pitch > 0x7fffffffu) return {};
    const int width = in.width(), height = in.height(), samples = width * C, ax = el.anchor_x, ay = el.anchor_y;
    const int span = (W - 1) * C + 1;
    const int e = positive_mod(-(long long)ax * C, 4);
    const int cols = (e + fast_tw - 1 + span + 3) / 4;
    int xoff = 0;
    // Columns outside the image are read through the border rule (EdgeLoader): any x0 whose outputs
    // are whole.
    auto x_ok = [&](int bx) {
        const int x0 = xoff + bx * fast_tw;
        if (reads_inside && (x0 - ax * C < 0 || x0 + fast_tw + (W - 1 - ax) * C > samples)) return false;
        return x0 >= 0 && x0 + fast_tw <= samples;
    };
    auto y_ok = [&](int by) {
        const int y0 = by * fast_th;
        return y0 - ay >= 0 && y0 + fast_th <= height && y0 - ay + fast_th + H - 1 <= height;
    };
    // Tiles start at x = xoff + 256 i samples, xoff 0 or 128 (the general kernel's tile width): whichever
    // leaves the narrower edge ring to the general kernel.
    int bx0 = 0, bx1 = 0, best_off = 0;
    for (int off : {0, 128}) {
        xoff = off;
        int b0 = 0;
        while (off + b0 * fast_tw < samples && !x_ok(b0)) ++b0;
        int b1 = b0;
        while (x_ok(b1)) ++b1;
        if (b1 - b0 > bx1 - bx0) bx0 = b0, bx1 = b1, best_off = off;
    }
    int by0 = 0;
    while (by0 * fast_th < height && !y_ok(by0)) ++by0;
    int by1 = by0;
    while (y_ok(by1)) ++by1;
    if (bx1 <= bx0 || by1 <= by0) return {};
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
    fp.samples = samples;
    fp.height = height;
    fp.mode = mode;
    fp.outside = outside;
    const dim3 grid(unsigned(bx1 - bx0), unsigned(by1 - by0), unsigned(in.shape.depth));  // a volume's planes
    if (plan.step.kind == MorphKind::dilate) rect_fast::launch_fast_c<T, true>(C, W, fp, grid, stream);
    else rect_fast::launch_fast_c<T, false>(C, W, fp, grid, stream);
    return {xs, xs + (bx1 - bx0) * fast_tw, by0 * fast_th, by1 * fast_th};
}

} // namespace apron::cuda
