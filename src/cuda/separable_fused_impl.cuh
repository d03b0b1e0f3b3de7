// Fused separable filter, kernel template (design notes at the top of separable_fused.cu; instantiated for the
// radius buckets of instantiated_sizes.hpp, one group of buckets per generated file so they compile in parallel).
//
// Written over samples, with the channel count C (1-4 interleaved) a compile-time stride: tap i of output
// sample s reads sample s + (i - R)*C of the same row.
//
// One block owns an output tile of TPX pixels x TH rows (all channels: TPX*C samples). Phase 1 (row
// pass): for each of the TH + 2R rows the column pass needs, each thread sums four consecutive pixels
// of every channel (4C consecutive samples) from a register window of 4C + 2RC samples read straight
// from global memory as 16-byte words (through L1: neighbouring windows overlap, so each input sector
// comes from DRAM/L2 about once), and stores them as C 16-byte words into the shared intermediate. Each
// window sample feeds up to 4 outputs, as at one channel (4 consecutive samples per thread would use
// each sample of an RGBA window once: L1-bound at 4 FMAs per 16-byte load).
// Phase 2 (column pass): each thread holds 4 x RY outputs in registers and reads each of its RY + 2R
// intermediate rows once as a 16-byte shared load. The intermediate never leaves the SM.
//
// Weights are padded to the bucket's 2R + 1 taps around the anchor (zeros outside the factor) and travel
// as a __grid_constant__ parameter, so the unrolled FMAs take them as constant-bank operands.
// Border maths: only in blocks whose window reaches outside the image (a column map in shared memory,
// map_index on the row once per intermediate row).
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/linear_finish.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_view.hpp"
#include "cuda/separable_fused.hpp"
#include "cuda/store_rows.cuh"

namespace apron::cuda {
namespace sep {

constexpr int threads = 256;
constexpr int fixed_store_radius = 8;  // buckets with a store_rows<In> instantiation (see launch)
constexpr int rows_per_thread = 8;  // RY: column-pass outputs per thread along y (x4 along x)

// Tile geometry for C channels. The intermediate holds one row of IW 16-byte items per tile row, the
// row's TPX*C samples in image order (item k: samples 4k .. 4k+3), so a warp's 16-byte accesses to one
// row are contiguous (no bank conflicts) and the column pass, per sample, is the same for every C. IW is
// a multiple of 8 for every C (a quarter-warp never straddles rows). 64, 64, 96 and 64 samples per row:
// the same intermediate and halo rows per output sample as at one channel (3 channels: 10 row groups).
struct Geometry {
    int tpx;     // tile width in pixels
    int iw;      // 16-byte items per intermediate row (C * tpx / 4)
    int ng;      // row groups of the column pass (threads / iw)
    __host__ __device__ constexpr int th() const { return ng * rows_per_thread; }
};

__host__ __device__ constexpr Geometry geometry(int channels) {
    switch (channels) {
    case 1: return {64, 16, 16};
    case 2: return {32, 16, 16};
    case 3: return {32, 24, 10};
    default: return {16, 16, 16};
    }
}

template <class Acc>
struct Vec4T;
template <> struct Vec4T<float> { using type = float4; };
template <> struct Vec4T<int> { using type = int4; };
template <class Acc> using Vec4 = typename Vec4T<Acc>::type;

template <int R, class Acc>
struct Taps {
    Acc row[2 * R + 1];
    Acc col[2 * R + 1];
};

template <class Acc, class In>
__device__ __forceinline__ Acc to_acc(In v) {
    if constexpr (std::is_same_v<Acc, float>) return sample_to_float(v);
    else return int(v);
}

// Four consecutive samples from a 4-sample aligned address, as accumulator values.
template <class Acc, class In>
__device__ __forceinline__ void load4(const In* p, Acc (&v)[4]) {
    if constexpr (sizeof(In) == 4) {
        const float4 f = __ldg(reinterpret_cast<const float4*>(p));
        v[0] = to_acc<Acc>(f.x), v[1] = to_acc<Acc>(f.y), v[2] = to_acc<Acc>(f.z), v[3] = to_acc<Acc>(f.w);
    } else if constexpr (sizeof(In) == 2) {
        const ushort4 f = __ldg(reinterpret_cast<const ushort4*>(p));
        v[0] = to_acc<Acc>(In(f.x)), v[1] = to_acc<Acc>(In(f.y)), v[2] = to_acc<Acc>(In(f.z)), v[3] = to_acc<Acc>(In(f.w));
    } else {
        const uchar4 f = __ldg(reinterpret_cast<const uchar4*>(p));
        v[0] = to_acc<Acc>(In(f.x)), v[1] = to_acc<Acc>(In(f.y)), v[2] = to_acc<Acc>(In(f.z)), v[3] = to_acc<Acc>(In(f.w));
    }
}

__device__ __forceinline__ float fmaf_acc(float w, float v, float a) { return fmaf(w, v, a); }
__device__ __forceinline__ int fmaf_acc(int w, int v, int a) { return w * v + a; }

template <class Out, class Acc>
__device__ __forceinline__ Out finish_one(Acc acc, bool exact, const LinearFinish& f) {
    if constexpr (std::is_same_v<Acc, int>) return finish_exact<Out>(static_cast<std::int64_t>(acc), f);
    else return exact ? finish_exact32<Out>(static_cast<int>(acc), f) : finish_float<Out, float>(acc, f);
}

struct Params {
    DeviceView in;
    std::byte* out;
    std::size_t out_pitch;
    PixelType out_type;
    BorderMode mode;
    LinearFinish finish;
    Geometry g;
    int block_row0;  // blockIdx.y offset (grids of more than 65535 block rows go in several launches)
    bool exact;    // float accumulator holding exact integers: finish_exact
    bool vec_in;   // rows 4-sample aligned: vector loads in interior blocks
    bool vec_out;  // output rows 4-sample aligned: vector stores
};

// Halo of the row window in samples (R*C), rounded up to whole 16-byte words.
template <int R, int C>
constexpr int aligned_halo() {
    return (R * C + 3) / 4 * 4;
}

// 4 blocks per SM (64 registers) for f32 images (memory-bound at small radii: occupancy keeps loads in
// flight). Integer images, whose exact finish holds 64-bit values, spilled under that cap (R = 1-3 int32,
// 14-20 u8/u16 f32) and get 3 (85 registers); they are compute-bound (2-4 bytes per pixel).
template <class In>
constexpr int min_blocks() {
    return std::is_same_v<In, float> ? 4 : 3;
}

// Fixed: void, or In for a float finish into In (store_rows; instantiated for radii up to fixed_store_radius).
template <int R, class In, class Acc, int C, class Fixed>
__global__ void __launch_bounds__(threads, min_blocks<In>())
    separable_fused(const Params p, const __grid_constant__ Taps<R, Acc> w, Acc outside) {
    constexpr int K = 2 * R + 1;
    constexpr int HA = aligned_halo<R, C>();
    constexpr int RY = rows_per_thread;
    constexpr int GS = 4 * C;  // samples of a row-pass group: 4 pixels
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Acc* mid = reinterpret_cast<Acc*>(smem_raw);
    constexpr Geometry g = geometry(C);  // compile-time tile shape (p.g is the same, for the launch)
    const int W = p.in.width, H = p.in.height, samples = W * C;
    // Plane blockIdx.z of a volume (planes of H rows, one pitch, one after another): a batch of planes in
    // one launch (0 for an image). Its first row is added where a row is addressed: pointers to the plane
    // held through the kernel cost two registers each, and u8 gray (85 registers) lost 12 % at sigma 2-3.
    const int TH = g.th(), TR = TH + 2 * R, MP = 4 * g.iw;  // MP: intermediate row pitch in elements
    int* colmap = reinterpret_cast<int*>(mid + std::size_t(TR) * MP);
    const int x0 = blockIdx.x * g.tpx, y0 = (p.block_row0 + int(blockIdx.y)) * TH;
    const int xs0 = x0 * C;  // first sample of the tile
    const bool interior = xs0 - HA >= 0 && xs0 + g.tpx * C + HA <= samples && y0 - R >= 0 && y0 + TH + R <= H;
    if (!interior) {
        for (int e = threadIdx.x; e < g.tpx + 2 * R; e += threads) colmap[e] = map_index(x0 - R + e, W, p.mode);
        __syncthreads();
    }

    // ---- row pass: group gi (pixels 4 gi .. 4 gi + 3, all channels) of rows gr0, gr0 + rows_step, ... ----
    constexpr int groups = g.tpx / 4, rows_step = threads / groups;  // groups divides 256 for every C
    const int gi = threadIdx.x % groups, gr0 = threadIdx.x / groups;
    const int px0 = 4 * gi;
    // Window element j (0 .. GS + 2 HA - 1) is sample (x0 + px0)*C - HA + j of the row; tap i of output o reads
    // element L0 + o + i*C. The taps run in order (i ascending, as every backend adds them), each reading GS
    // consecutive elements from a ring of NB 4-element words fetched once each, as the window slides by C.
    // (Looping over the words and testing which (tap, output) pairs each element serves took 1872 tests per
    // row at R = 24, C = 3, more than nvcc unrolls: the tests ran at run time, 5.5 Gpix/s against 116 gray.)
    constexpr int L0 = HA - R * C;       // 0..3
    constexpr int NB = (GS + 3) / 4 + 1;  // words one tap's GS elements can span
    for (int r = gr0; r < TR; r += rows_step) {
        Acc a[GS];
#pragma unroll
        for (int o = 0; o < GS; ++o) a[o] = Acc(0);
        const int vy = y0 - R + r;
        const int sy = interior ? vy : map_index(vy, H, p.mode);
        const In* row = reinterpret_cast<const In*>(p.in.data + (std::size_t(blockIdx.z) * H + (sy < 0 ? 0 : sy)) * p.in.pitch);
        const In* src = row + ((x0 + px0) * C - HA);  // element 0 (4-aligned in interior rows)
        const int xb = x0 + px0 - R;                   // pixel of element L0
        // One branch-free copy of the taps per way of fetching (word loads, or samples through the border
        // map), so the loads of a row can be issued ahead of the FMAs that need them.
        auto taps = [&](auto words) {
            Acc ring[NB][4];
            auto fetch = [&](int m) {
                if constexpr (decltype(words)::value) {
                    load4<Acc>(src + 4 * m, ring[m % NB]);
                } else {
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int l = 4 * m + e - L0;  // pixel xb + l / C, channel l % C
                        if (l < 0 || l >= GS + 2 * R * C) continue;  // no tap reads it
                        const int sx = interior ? xb + l / C : colmap[px0 + l / C];
                        ring[m % NB][e] =
                            (sx < 0 || sy < 0) ? outside : to_acc<Acc>(__ldg(row + std::size_t(sx) * C + l % C));
                    }
                }
            };
#pragma unroll
            for (int m = 0; m <= (L0 + GS - 1) / 4; ++m) fetch(m);
#pragma unroll
            for (int i = 0; i < K; ++i) {
                const int j0 = L0 + i * C;  // the window advances by C <= 4 elements: at most one new word
                if (i > 0 && (j0 + GS - 1) / 4 != (j0 - C + GS - 1) / 4) fetch((j0 + GS - 1) / 4);
                // A zero tap (the bucket's padding, or a zero of the factor) is skipped, as the reference skips it:
                // 0 x NaN or 0 x inf would put a sample outside the mask into the sum (SPEC: NaN spreads only
                // through the mask). The weights are the launch's, so the test is uniform: no divergence.
                if (w.row[i] == Acc(0)) continue;
#pragma unroll
                for (int o = 0; o < GS; ++o) a[o] = fmaf_acc(w.row[i], ring[((j0 + o) / 4) % NB][(j0 + o) % 4], a[o]);
            }
        };
        if (interior && p.vec_in) taps(std::true_type{});
        else taps(std::false_type{});
#pragma unroll
        for (int c = 0; c < C; ++c) {
            Vec4<Acc> o;
            o.x = a[4 * c], o.y = a[4 * c + 1], o.z = a[4 * c + 2], o.w = a[4 * c + 3];
            *reinterpret_cast<Vec4<Acc>*>(mid + std::size_t(r) * MP + px0 * C + 4 * c) = o;
        }
    }
    __syncthreads();

    // ---- column pass: rows r0 * RY .. + RY of the tile, samples 4k .. 4k+3 --------------------------
    const int k = threadIdx.x % g.iw, r0 = threadIdx.x / g.iw;  // item and row group of this thread
    if (r0 >= g.ng) return;
    Acc acc[RY][4];
#pragma unroll
    for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[r][q] = Acc(0);
    const Acc* base = mid + std::size_t(r0) * RY * MP + 4 * k;
#pragma unroll
    for (int t = 0; t < RY + 2 * R; ++t) {
        const Vec4<Acc> f = *reinterpret_cast<const Vec4<Acc>*>(base + t * MP);
        const Acc v[4] = {f.x, f.y, f.z, f.w};
#pragma unroll
        for (int r = 0; r < RY; ++r) {
            const int j = t - r;
            if (j < 0 || j >= K || w.col[j] == Acc(0)) continue;  // zero taps skipped, as in the row pass
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[r][q] = fmaf_acc(w.col[j], v[q], acc[r][q]);
        }
    }
    const int xs = xs0 + 4 * k;
    if (xs >= samples) return;
    store_rows<Fixed>(OutputRows{p.out + std::size_t(blockIdx.z) * H * p.out_pitch, p.out_pitch, p.out_type, samples, H, p.vec_out, p.exact, p.finish},
                      y0 + r0 * RY, xs, acc);
}

// Shared memory of one block: the intermediate and the column map of edge blocks.
template <int R, class Acc>
std::size_t shared_bytes(const Geometry& g) {
    return sizeof(Acc) * std::size_t(g.th() + 2 * R) * std::size_t(4 * g.iw) + sizeof(int) * std::size_t(g.tpx + 2 * R);
}

// Bucket radius R: the factors padded with zeros to 2R + 1 taps centred on the anchor.
template <int R, class Acc>
Taps<R, Acc> padded_taps(const LinearPlan& p) {
    Taps<R, Acc> t{};
    const Mask& m = p.step.mask;
    for (int i = 0; i < m.width; ++i) {
        const double v = p.exact ? double(p.integer_separable->row[std::size_t(i)]) : p.separable->row[std::size_t(i)];
        t.row[R - m.anchor_x + i] = Acc(v);
    }
    for (int j = 0; j < m.height; ++j) {
        const double v = p.exact ? double(p.integer_separable->column[std::size_t(j)]) : p.separable->column[std::size_t(j)];
        t.col[R - m.anchor_y + j] = Acc(v);
    }
    return t;
}

template <int R, class In, class Acc, int C>
void launch(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream) {
    Params p;
    p.in = device_view(in);
    p.out = out.data;
    p.out_pitch = out.pitch;
    p.out_type = plan.out;
    p.mode = plan.step.border;
    p.finish = plan.finish;
    p.g = geometry(in.channels());
    p.exact = plan.exact;
    if constexpr (std::is_same_v<Acc, float>) {
        const KernelFinish f = kernel_finish(plan.exact, plan.finish, plan.out);
        p.exact = f.exact;
        p.finish = f.finish;
    }
    const std::size_t isz = sizeof(In), osz = bytes_per_sample(plan.out);
    p.vec_in = reinterpret_cast<std::uintptr_t>(in.data) % (4 * isz) == 0 && in.pitch % (4 * isz) == 0;
    p.vec_out = reinterpret_cast<std::uintptr_t>(out.data) % (4 * osz) == 0 && out.pitch % (4 * osz) == 0;
    const Taps<R, Acc> taps = padded_taps<R, Acc>(plan);
    const Acc outside = Acc(store_pixel<In>(plan.step.border_value));
    const std::size_t smem = shared_bytes<R, Acc>(p.g);
    auto kernel = separable_fused<R, In, Acc, C, void>;
    // The fixed store for the smaller radii (sigma up to ~2), where the store is a large share of the work;
    // every bucket twice would double the largest share of the CUDA build. On 2-4 channels only: u8 gray
    // Gaussians measured 7 % slower with it (sigma 0.6 463 -> 425 Gpix/s, H200), RGB 23 % faster.
    if constexpr (std::is_same_v<Acc, float> && R <= fixed_store_radius && C > 1)
        if (!p.exact && plan.in == plan.out) kernel = separable_fused<R, In, Acc, C, In>;
    APRON_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    const int block_rows = (in.height() + p.g.th() - 1) / p.g.th();
    for (int b = 0; b < block_rows; b += 65535) {
        p.block_row0 = b;
        // z: a volume's planes (ImageView::plane), each filtered alone, in one launch.
        const dim3 grid(unsigned((in.width() + p.g.tpx - 1) / p.g.tpx), unsigned(std::min(65535, block_rows - b)),
                        unsigned(in.shape.depth));
        kernel<<<grid, threads, smem, stream>>>(p, taps, outside);
        APRON_CUDA_CHECK_LAUNCH("separable_fused");
    }
}

} // namespace sep

// One radius bucket and channel count, float accumulation (float plans, and exact plans whose sums stay
// below 2^24), every input type. Instantiated per group of buckets (instantiated_sizes.hpp) and per channel
// count in files src/cuda/CMakeLists.txt generates.
template <int R, int C>
void launch_separable_fused_f32(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream) {
    with_type(p.in, [&]<class In>() { sep::launch<R, In, float, C>(p, in, out, stream); });
}

// One radius bucket and channel count, int32 accumulation (exact plans with integer input whose bound is
// below 2^31).
template <int R, int C>
void launch_separable_fused_i32(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream) {
    if (p.in == PixelType::u8) sep::launch<R, std::uint8_t, int, C>(p, in, out, stream);
    else sep::launch<R, std::uint16_t, int, C>(p, in, out, stream);
}

} // namespace apron::cuda
