// The fused volume pass (separable_volume.hpp), kernel template. Opt-in (APRON_VOLUME_FUSED=1): measured
// slower than the two passes it replaces (H200, 1024 x 1024 x 256 u16, sigma (2, 2, 1): 2.9 ms against
// 1.54 ms; f32 2.2 against 1.58), see docs/perf-notes.md "Volumes on the GPU" for what was tried and why.
//
// Bytes and flops (H200, 1024 x 1024 x 256 u16, Gaussian sigma (2, 2, 1): taps 13 x 13 x 7): two passes
// move 12 bytes a voxel (u16 in, f32 intermediate out and in, u16 out), 3.2 GB, 0.78 ms at 4.1 TB/s; this
// pass moves 4 bytes (1.07 GB, 0.26 ms) plus the z halo's planes read again (2 RZ / TZ, TZ = 64: 9 %).
// Work a voxel: the row pass 13 FMAs x (TY + 2R) / TY, the column pass 13, z 7: about 36 FMAs, 9.7 G,
// 0.29 ms at 33.4 T FMA/s; shared memory about 4.75 B written and 16 B read a voxel (RY = 4).
//
// One block owns a tile of 64 pixels x TY rows (TY = 16 RY) of planes z0 .. z0 + TZ - 1, and walks the input
// planes z0 - RZ .. z0 + TZ - 1 + RZ in order. For each plane: the row pass (each thread four consecutive
// pixels of a row, from a window of 16-byte words read through L1, as separable_fused) into a shared
// intermediate of TY + 2R rows (double-buffered: one barrier a plane); then the column pass gives each
// thread RY x 4 values of the plane's filter P. P(zi) is tap k of output plane zi + RZ - k: the N = 2 RZ + 1
// outputs in flight are accumulators in registers, rotated by unrolling the plane loop N times (the slot
// of each (plane, tap) is then a constant), and the oldest is finished and stored once its last tap is in.
// Every output's taps are added in ascending order, as every backend adds them, whatever the tiling.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cuda_pipeline.h>

#include "core/border_index.hpp"
#include "core/linear_finish.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_view.hpp"
#include "cuda/separable_volume.hpp"
#include "cuda/store_rows.cuh"

namespace apron::cuda {
namespace vol {

constexpr int threads = 256;
constexpr int tile_x = 64;      // pixels of a tile row: 16 items of 4
constexpr int items = tile_x / 4;
constexpr int row_groups = threads / items;  // 16

template <int R, int RZ>
struct Taps {
    float row[2 * R + 1];
    float col[2 * R + 1];
    float z[2 * RZ + 1];
};

struct Params {
    DeviceView in;   // one plane's geometry (width, height, pitch); planes follow one another
    int depth;
    int z_tile;      // output planes of a block (TZ)
    std::byte* out;
    std::size_t out_pitch;
    PixelType out_type;
    BorderMode mode;    // the plane step's border (x and y)
    BorderMode mode_z;  // the z step's
    float outside;      // the plane step's constant, as a sample
    float outside_z;    // the z step's constant: the intermediate value of a plane outside the volume
    LinearFinish plane_finish;  // into the f32 intermediate
    LinearFinish finish;        // the z step's, into out_type
    bool vec_in, vec_out;
};

// Four samples as one word of the staged input tile.
template <class In> struct Word;
template <> struct Word<std::uint8_t> { using type = uchar4; };
template <> struct Word<std::uint16_t> { using type = ushort4; };
template <> struct Word<float> { using type = float4; };
template <class W>
__device__ __forceinline__ float element(const W& w, int e) {
    return sample_to_float(e == 0 ? w.x : e == 1 ? w.y : e == 2 ? w.z : w.w);
}

// Geometry of one block's shared memory for plane bucket R and RY rows a thread.
template <int R, int RY, class In>
struct Tile {
    static constexpr int TY = row_groups * RY, TR = TY + 2 * R;
    static constexpr int HA = (R + 3) / 4 * 4;            // the row window's halo in whole words
    static constexpr int words = (tile_x + 2 * HA) / 4;   // words of a staged input row
    static constexpr std::size_t input_bytes = sizeof(In) * 4 * words * TR;  // one plane's staged rows
    static constexpr std::size_t mid_bytes = sizeof(float) * TR * tile_x;     // one plane's row pass
    // Two staged planes (the next is staged while this one is filtered), one row pass (its readers are done
    // before the next plane's first barrier), and the edge blocks' column map.
    static constexpr std::size_t bytes = 2 * input_bytes + mid_bytes + sizeof(int) * (tile_x + 2 * HA);
};

template <int R, int RZ, int RY, class In>
__global__ void __launch_bounds__(threads, RY <= 2 ? 2 : 1)
    separable_volume(const Params p, const __grid_constant__ Taps<R, RZ> w) {
    using T = Tile<R, RY, In>;
    using Raw = typename Word<In>::type;
    constexpr int K = 2 * R + 1, N = 2 * RZ + 1, TR = T::TR, HA = T::HA, L0 = HA - R;
    constexpr int NW = (L0 + K + 2) / 4 + 1;  // words of a window that its taps read
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Raw* staged = reinterpret_cast<Raw*>(smem_raw);                              // [2][TR][words]
    float* mid = reinterpret_cast<float*>(smem_raw + 2 * T::input_bytes);        // [TR][tile_x]
    int* colmap = reinterpret_cast<int*>(smem_raw + 2 * T::input_bytes + T::mid_bytes);
    const int W = p.in.width, H = p.in.height, D = p.depth;
    const int x0 = blockIdx.x * tile_x, y0 = blockIdx.y * T::TY;
    const int zs = blockIdx.z * p.z_tile, ze = min(D, zs + p.z_tile);
    const bool interior = x0 - HA >= 0 && x0 + tile_x + HA <= W && y0 - R >= 0 && y0 + T::TY + R <= H;
    const bool fast = interior && p.vec_in;  // whole aligned words: staged by cp.async
    if (!fast)  // the staged columns' samples (interior blocks of unaligned rows too)
        for (int e = threadIdx.x; e < tile_x + 2 * HA; e += threads) colmap[e] = map_index(x0 - HA + e, W, p.mode);
    __syncthreads();
    const std::size_t plane_bytes = std::size_t(H) * p.in.pitch;

    // Plane zm's rows y0 - R .. y0 + TY + R - 1, samples x0 - HA .. x0 + tile_x + HA - 1, into staged buffer b:
    // asynchronous copies in interior blocks (in flight while the previous plane is filtered), samples
    // through the border maps in edge blocks. Nothing for zm < 0 (the z constant).
    auto stage = [&](int zm, int b) {
        if (zm < 0) return;
        const std::byte* plane = p.in.data + std::size_t(zm) * plane_bytes;
        Raw* dst = staged + b * TR * T::words;
        if (fast) {
            for (int e = threadIdx.x; e < TR * T::words; e += threads) {
                const int r = e / T::words, c = e % T::words;
                const In* src = reinterpret_cast<const In*>(plane + std::size_t(y0 - R + r) * p.in.pitch) + (x0 - HA + 4 * c);
                __pipeline_memcpy_async(dst + e, src, sizeof(Raw));
            }
            __pipeline_commit();
            return;
        }
        In* d = reinterpret_cast<In*>(dst);
        for (int e = threadIdx.x; e < TR * 4 * T::words; e += threads) {
            const int r = e / (4 * T::words), c = e % (4 * T::words);
            const int sy = map_index(y0 - R + r, H, p.mode), sx = colmap[c];
            d[e] = sy < 0 || sx < 0 ? In(p.outside) : __ldg(reinterpret_cast<const In*>(plane + std::size_t(sy) * p.in.pitch) + sx);
        }
    };

    const int gi = threadIdx.x % items, gr0 = threadIdx.x / items;  // row pass: pixels 4 gi.., rows gr0 + 16 j
    const int k = threadIdx.x % items, r0 = threadIdx.x / items;    // column pass: item k, rows r0 RY ..

    // The filter of plane zm (or the z constant where zm < 0) at this thread's RY x 4 samples, from staged
    // buffer b through the intermediate; `next` (the plane after it) is staged meanwhile into the other buffer,
    // whose last reader was the previous plane's row pass. zm and next are the block's: every thread
    // reaches both barriers.
    auto plane_filter = [&](int zm, int next, int b, float (&P)[RY][4]) {
        if (fast) __pipeline_wait_prior(0);
        __syncthreads();  // plane zm staged
        float* m = mid;
        if (zm >= 0) {
            const Raw* src = staged + b * TR * T::words;
            for (int r = gr0; r < TR; r += row_groups) {
                Raw win[NW];
#pragma unroll
                for (int q = 0; q < NW; ++q) win[q] = src[r * T::words + gi + q];
                float a[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
                for (int i = 0; i < K; ++i) {
                    if (w.row[i] == 0.0f) continue;  // zero taps skipped, as the reference skips them
#pragma unroll
                    for (int o = 0; o < 4; ++o) {
                        const int e = L0 + i + o;
                        a[o] = fmaf(w.row[i], element(win[e / 4], e % 4), a[o]);
                    }
                }
                *reinterpret_cast<float4*>(m + r * tile_x + 4 * gi) = make_float4(a[0], a[1], a[2], a[3]);
            }
        }
        stage(next, b ^ 1);
        __syncthreads();  // the row pass in m
        if (zm < 0) {
#pragma unroll
            for (int r = 0; r < RY; ++r)
#pragma unroll
                for (int q = 0; q < 4; ++q) P[r][q] = p.outside_z;
            return;
        }
        float acc[RY][4];
#pragma unroll
        for (int r = 0; r < RY; ++r)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[r][q] = 0.f;
        const float* base = m + r0 * RY * tile_x + 4 * k;
#pragma unroll
        for (int t = 0; t < RY + 2 * R; ++t) {
            const float4 f = *reinterpret_cast<const float4*>(base + t * tile_x);
            const float v[4] = {f.x, f.y, f.z, f.w};
#pragma unroll
            for (int r = 0; r < RY; ++r) {
                const int j = t - r;
                if (j < 0 || j >= K || w.col[j] == 0.0f) continue;
#pragma unroll
                for (int q = 0; q < 4; ++q) acc[r][q] = fmaf(w.col[j], v[q], acc[r][q]);
            }
        }
#pragma unroll
        for (int r = 0; r < RY; ++r)
#pragma unroll
            for (int q = 0; q < 4; ++q) P[r][q] = finish_float<float, float>(acc[r][q], p.plane_finish);
    };

    const OutputRows rows_out{nullptr, p.out_pitch, p.out_type, W, H, p.vec_out, false, p.finish};
    float out[N][RY][4];  // out[(zo - zs) mod N]: the outputs in flight
    const int planes = (ze - zs) + 2 * RZ;  // input planes zs - RZ .. ze - 1 + RZ
    stage(map_index(zs - RZ, D, p.mode_z), 0);
    for (int g = 0; g * N < planes; ++g) {
#pragma unroll
        for (int s = 0; s < N; ++s) {
            const int n = g * N + s;
            if (n >= planes) break;  // uniform over the block
            const int zi = zs - RZ + n;
            float P[RY][4];
            plane_filter(map_index(zi, D, p.mode_z), n + 1 < planes ? map_index(zi + 1, D, p.mode_z) : -1, n & 1, P);
            // P is tap kz of output zi + RZ - kz, in slot (s - kz) mod N; tap 0 starts an output.
#pragma unroll
            for (int kz = 0; kz < N; ++kz) {
                float(&o)[RY][4] = out[((s - kz) % N + N) % N];
                const float wz = w.z[kz];
#pragma unroll
                for (int r = 0; r < RY; ++r)
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        if (kz == 0) o[r][q] = 0.f;
                        if (wz != 0.0f) o[r][q] = fmaf(wz, P[r][q], o[r][q]);
                    }
            }
            // Tap N - 1 completes output zi - RZ, slot (s - N + 1) mod N = (s + 1) mod N.
            const int zo = zi - RZ;
            const int xs = x0 + 4 * k;
            if (zo >= zs && zo < ze && xs < W) {
                OutputRows o = rows_out;
                o.data = p.out + std::size_t(zo) * H * p.out_pitch;
                store_rows<void>(o, y0 + r0 * RY, xs, out[(s + 1) % N]);
            }
        }
    }
}

// Weights padded with zeros to the buckets' 2R + 1 and 2RZ + 1 taps around the anchors.
template <int R, int RZ>
Taps<R, RZ> padded_taps(const LinearPlan& plane, const LinearPlan& along_z) {
    Taps<R, RZ> t{};
    const Mask& m = plane.step.mask;
    for (int i = 0; i < m.width; ++i) t.row[R - m.anchor_x + i] = float(plane.separable->row[std::size_t(i)]);
    for (int j = 0; j < m.height; ++j) t.col[R - m.anchor_y + j] = float(plane.separable->column[std::size_t(j)]);
    const Mask& z = along_z.step.mask;
    for (int j = 0; j < z.height; ++j) t.z[RZ - z.anchor_y + j] = float(z.weights[std::size_t(j)]);
    return t;
}

int multiprocessors();

template <int R, int RZ, int RY, class In>
void launch(const LinearPlan& plane, const LinearPlan& along_z, ConstImageView in, ImageView out, cudaStream_t stream) {
    Params p;
    p.in = device_view(in);
    p.depth = in.shape.depth;
    p.out = out.data;
    p.out_pitch = out.pitch;
    p.out_type = along_z.out;
    p.mode = plane.step.border;
    p.mode_z = along_z.step.border;
    p.outside = sample_to_float(store_pixel<In>(plane.step.border_value));
    p.outside_z = store_pixel<float>(along_z.step.border_value);
    p.plane_finish = plane.finish;
    p.finish = along_z.finish;
    const std::size_t isz = sizeof(In), osz = bytes_per_sample(along_z.out);
    p.vec_in = reinterpret_cast<std::uintptr_t>(in.data) % (4 * isz) == 0 && in.pitch % (4 * isz) == 0;
    p.vec_out = reinterpret_cast<std::uintptr_t>(out.data) % (4 * osz) == 0 && out.pitch % (4 * osz) == 0;
    constexpr int TY = Tile<R, RY, In>::TY;
    const int gx = (in.width() + tile_x - 1) / tile_x, gy = (in.height() + TY - 1) / TY;
    // Planes a block: as many as keep about four blocks a multiprocessor busy, 8 to 64 (the z halo's
    // 2 RZ planes are read again by each block).
    const long long want = std::max(1LL, (long long)p.depth * gx * gy / (4LL * multiprocessors()));
    p.z_tile = int(std::clamp(want, 8LL, 64LL));
    const int gz = (p.depth + p.z_tile - 1) / p.z_tile;
    const std::size_t smem = Tile<R, RY, In>::bytes;
    auto kernel = separable_volume<R, RZ, RY, In>;
    APRON_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<dim3(unsigned(gx), unsigned(gy), unsigned(gz)), threads, smem, stream>>>(p, padded_taps<R, RZ>(plane, along_z));
    APRON_CUDA_CHECK_LAUNCH("separable_volume");
}

// The reach of the plane's factors and of z's column from their anchors.
inline int plane_reach(const Mask& m) {
    return std::max({m.anchor_x, m.width - 1 - m.anchor_x, m.anchor_y, m.height - 1 - m.anchor_y});
}
inline int z_reach(const Mask& m) { return std::max(m.anchor_y, m.height - 1 - m.anchor_y); }
constexpr int max_plane_reach = 8;  // the largest bucket below
constexpr int max_z_reach = 3;

template <int R, class In>
void launch_plane_bucket(const LinearPlan& plane, const LinearPlan& along_z, ConstImageView in, ImageView out,
                         cudaStream_t stream, int rz, int rows) {
    auto go = [&]<int RZ>() {
        if (rows == 4) launch<R, RZ, 4, In>(plane, along_z, in, out, stream);
        else launch<R, RZ, 2, In>(plane, along_z, in, out, stream);
    };
    if (rz <= 1) go.template operator()<1>();
    else if (rz == 2) go.template operator()<2>();
    else go.template operator()<3>();
}

// The smallest buckets covering the plans' reaches (R 2, 4, 6, 8; RZ 1, 2, 3); `rows`: RY (4, else 2: two
// blocks a multiprocessor; 4 held 230 registers at RZ = 3, one block, and ran at half the speed).
template <class In>
void launch_bucketed(const LinearPlan& plane, const LinearPlan& along_z, ConstImageView in, ImageView out,
                     cudaStream_t stream, int rows) {
    const int r = plane_reach(plane.step.mask), rz = z_reach(along_z.step.mask);
    if (r <= 2) launch_plane_bucket<2, In>(plane, along_z, in, out, stream, rz, rows);
    else if (r <= 4) launch_plane_bucket<4, In>(plane, along_z, in, out, stream, rz, rows);
    else if (r <= 6) launch_plane_bucket<6, In>(plane, along_z, in, out, stream, rz, rows);
    else launch_plane_bucket<8, In>(plane, along_z, in, out, stream, rz, rows);
}

} // namespace vol
} // namespace apron::cuda
