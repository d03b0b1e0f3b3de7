// Direct 2D correlation, tiled (kernel template; instantiated by direct_tiled_k*.cu, one group of mask
// sizes per file so they compile in parallel): a block stages its input tile with the halo in shared memory (as f32,
// converted once), then each thread slides down a column of RY outputs, holding them in registers while
// every input row of the window is read once and multiplied by the mask rows it meets.
//
// Weights travel as a __grid_constant__ kernel parameter: the loops are unrolled over the compile-time
// mask size, so every weight is an immediate constant-bank operand of its FFMA (no load per tap).
// Border maths (map_index) runs only in blocks whose tile reaches outside the image.
//
// Exact plans with an f32 accumulator use the same kernel: products and partial sums are integers below
// 2^24, so the float arithmetic (FMA included) is exact, and finish_exact gives the shared result.
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/linear_finish.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_view.hpp"
#include "cuda/direct_tiled.hpp"

namespace apron::cuda {
namespace tiled {

constexpr int block_x = 32, block_y = 8;

template <int K>
struct Weights {
    float w[K * K];
};

// Output rows per thread: more rows reuse each shared-memory load across more FMAs, fewer keep the
// unrolled code small for big masks (RY * K * K FFMAs per thread).
template <int K>
constexpr int rows_per_thread() {
    return K <= 9 ? 8 : K <= 17 ? 4 : 2;
}

template <class In>
__device__ __forceinline__ float load_sample(const DeviceView& v, int x_sample, int y) {
    return sample_to_float(reinterpret_cast<const In*>(v.data + std::size_t(y) * v.pitch)[x_sample]);
}

template <class Out>
__device__ __forceinline__ void store(std::byte* out, std::size_t pitch, int y, int xs, float acc, bool exact,
                                      const LinearFinish& f) {
    Out* row = reinterpret_cast<Out*>(out + std::size_t(y) * pitch);
    row[xs] = exact ? finish_exact32<Out>(static_cast<int>(acc), f) : finish_float<Out, float>(acc, f);
}

template <int K, class In>
__global__ void __launch_bounds__(block_x* block_y)
    direct_tiled(DeviceView in, std::byte* out, std::size_t out_pitch, PixelType out_type,
                 const __grid_constant__ Weights<K> w, BorderMode mode, float outside, LinearFinish finish, bool exact,
                 int row_begin, int row_end) {
    constexpr int RY = rows_per_thread<K>();
    constexpr int R = K / 2;  // odd square masks: anchor at the centre
    constexpr int tile_h = block_y * RY + K - 1;
    extern __shared__ float tile[];
    const int C = in.channels;
    const int tile_w = block_x + (K - 1) * C;  // in samples
    const int samples = in.width * C;
    const int x0 = blockIdx.x * block_x;        // first output sample of the block
    const int y0 = row_begin + blockIdx.y * block_y * RY;  // first output row of the block
    const int gx0 = x0 - R * C, gy0 = y0 - R;   // first input sample/row of the tile

    const bool interior = gx0 >= 0 && gy0 >= 0 && gx0 + tile_w <= samples && gy0 + tile_h <= in.height;
    if (interior) {
        // Every load of the thread is issued before the first store to shared memory, so each thread
        // keeps up to rows x cols loads in flight (a plain loop waits for each load before the next:
        // measured 33 % of bandwidth at 3x3 that way).
        constexpr int rows = (tile_h + block_y - 1) / block_y;
        constexpr int cols = (block_x + (K - 1) * max_channels + block_x - 1) / block_x;
        float v[rows][cols];
#pragma unroll
        for (int a = 0; a < rows; ++a)
#pragma unroll
            for (int b = 0; b < cols; ++b) {
                const int r = threadIdx.y + a * block_y, c = threadIdx.x + b * block_x;
                if (r < tile_h && c < tile_w) v[a][b] = load_sample<In>(in, gx0 + c, gy0 + r);
            }
#pragma unroll
        for (int a = 0; a < rows; ++a)
#pragma unroll
            for (int b = 0; b < cols; ++b) {
                const int r = threadIdx.y + a * block_y, c = threadIdx.x + b * block_x;
                if (r < tile_h && c < tile_w) tile[r * tile_w + c] = v[a][b];
            }
    } else {
        for (int r = threadIdx.y; r < tile_h; r += block_y) {
            const int sy = map_index(gy0 + r, in.height, mode);
            for (int c = threadIdx.x; c < tile_w; c += block_x) {
                const int gs = gx0 + c;
                const int px = gs >= 0 ? gs / C : -((-gs + C - 1) / C);  // floor division
                const int ch = gs - px * C;
                const int sx = map_index(px, in.width, mode);
                tile[r * tile_w + c] = (sx < 0 || sy < 0) ? outside : load_sample<In>(in, sx * C + ch, sy);
            }
        }
    }
    __syncthreads();

    float acc[RY];
#pragma unroll
    for (int r = 0; r < RY; ++r) acc[r] = 0.0f;
    const float* base = tile + threadIdx.y * RY * tile_w + threadIdx.x;
#pragma unroll
    for (int t = 0; t < RY + K - 1; ++t) {
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const float v = base[t * tile_w + i * C];
#pragma unroll
            for (int r = 0; r < RY; ++r) {
                const int j = t - r;
                if (j >= 0 && j < K) acc[r] = fmaf(w.w[j * K + i], v, acc[r]);
            }
        }
    }

    const int xs = x0 + threadIdx.x;
    if (xs >= samples) return;
#pragma unroll
    for (int r = 0; r < RY; ++r) {
        const int y = y0 + threadIdx.y * RY + r;
        if (y >= row_end) break;
        switch (out_type) {
        case PixelType::u8: store<std::uint8_t>(out, out_pitch, y, xs, acc[r], exact, finish); break;
        case PixelType::u16: store<std::uint16_t>(out, out_pitch, y, xs, acc[r], exact, finish); break;
        case PixelType::f32: store<float>(out, out_pitch, y, xs, acc[r], exact, finish); break;
        }
    }
}

// ---- single channel: four outputs per thread along x -------------------------------------------
// Each thread owns a 4 x RY block of outputs. A row of its window is RX + K - 1 consecutive tile values,
// read with 16-byte shared loads (a warp's reads are contiguous: no bank conflicts) and held in registers
// while 4 x K FMAs per contributing output row consume them; outputs leave as one 4-sample store.
constexpr int rx = 4;

template <int K>
constexpr int rows_per_thread_rx() {
    return K <= 9 ? 8 : K <= 17 ? 4 : K <= 23 ? 2 : 1;
}

template <class Out>
__device__ __forceinline__ Out finish_one(float acc, bool exact, const LinearFinish& f) {
    return exact ? finish_exact32<Out>(static_cast<int>(acc), f) : finish_float<Out, float>(acc, f);
}

// Four consecutive outputs of one row: one vector store when all four exist (rows start 256-byte aligned
// and x is a multiple of 4), scalar stores at the right edge.
template <class Out>
__device__ __forceinline__ void store4(std::byte* out, std::size_t pitch, int y, int xs, int samples, const float (&acc)[rx],
                                       bool exact, const LinearFinish& f) {
    Out* row = reinterpret_cast<Out*>(out + std::size_t(y) * pitch) + xs;
    Out v[rx];
#pragma unroll
    for (int q = 0; q < rx; ++q) v[q] = finish_one<Out>(acc[q], exact, f);
    if (xs + rx <= samples) {
        if constexpr (sizeof(Out) == 1) *reinterpret_cast<uchar4*>(row) = make_uchar4(v[0], v[1], v[2], v[3]);
        else if constexpr (sizeof(Out) == 2) *reinterpret_cast<ushort4*>(row) = make_ushort4(v[0], v[1], v[2], v[3]);
        else *reinterpret_cast<float4*>(row) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
        for (int q = 0; q < rx && xs + q < samples; ++q) row[q] = v[q];
    }
}

// Four samples of an integer row in one load (u8: 4 bytes, u16: 8 bytes), unpacked to f32 by byte
// permutes into the magic-number form (no I2F conversions).
template <class In>
struct Quad;
template <>
struct Quad<std::uint8_t> {
    using Raw = unsigned;
    __device__ static float get(Raw w, int e) { return __uint_as_float(__byte_perm(w, 0x4Bu, 0x4550u + e)) - 8388608.0f; }
};
template <>
struct Quad<std::uint16_t> {
    using Raw = uint2;
    __device__ static float get(Raw w, int e) {
        const unsigned word = e < 2 ? w.x : w.y, lo = (e & 1) * 2;
        return __uint_as_float(__byte_perm(word, 0x4Bu, lo | (lo + 1) << 4 | 0x5400u)) - 8388608.0f;
    }
};

// At least 4 blocks per SM (<= 64 registers): unbounded, the 3x3 instance held its 45 staged loads in
// 90 registers and ran 2 blocks per SM (224 Gpix/s f32 where 5x5 reached 323).
//
// The tile starts S = (4 - R % 4) % 4 samples left of the window so that its origin x0 - R - S is a
// multiple of 4: integer rows then load as aligned 4-sample words (one LDG per 4 samples instead of
// one per byte), and every tile row keeps 16-byte alignment for the LDS.128 of the compute loop, which
// reads its window shifted by S (free for K >= 7, one extra LDS.128 per row below).
template <int K, class In>
__global__ void __launch_bounds__(block_x* block_y, 4)
    direct_tiled_rx(DeviceView in, std::byte* out, std::size_t out_pitch, PixelType out_type,
                    const __grid_constant__ Weights<K> w, BorderMode mode, float outside, LinearFinish finish, bool exact,
                    int row_begin, int row_end, bool aligned) {
    constexpr int RY = rows_per_thread_rx<K>();
    constexpr int R = K / 2;
    constexpr int S = (4 - R % 4) % 4;
    constexpr int tile_h = block_y * RY + K - 1;
    constexpr int tile_w = block_x * rx + K - 1 + S;
    constexpr int pitch = (tile_w + 3) / 4 * 4;  // 16-byte aligned rows
    __shared__ __align__(16) float tile[tile_h * pitch];
    const int x0 = blockIdx.x * block_x * rx, y0 = row_begin + blockIdx.y * block_y * RY;
    const int gx0 = x0 - R - S, gy0 = y0 - R;  // tile origin (gx0 is a multiple of 4)

    const bool interior = gx0 >= 0 && gy0 >= 0 && gx0 + pitch <= in.width && gy0 + tile_h <= in.height;
    constexpr int rows = (tile_h + block_y - 1) / block_y;
    bool staged = false;
    if constexpr (!std::is_same_v<In, float>) {
        if (interior && aligned) {
            // Aligned 4-sample words, all in flight before the first shared store.
            using Raw = typename Quad<In>::Raw;
            constexpr int quads = pitch / 4, cols = (quads + block_x - 1) / block_x;
            Raw v[rows][cols];
#pragma unroll
            for (int a = 0; a < rows; ++a)
#pragma unroll
                for (int b = 0; b < cols; ++b) {
                    const int r = threadIdx.y + a * block_y, c = threadIdx.x + b * block_x;
                    if (r < tile_h && c < quads)
                        v[a][b] = *reinterpret_cast<const Raw*>(in.data + std::size_t(gy0 + r) * in.pitch +
                                                                std::size_t(gx0 + 4 * c) * sizeof(In));
                }
#pragma unroll
            for (int a = 0; a < rows; ++a)
#pragma unroll
                for (int b = 0; b < cols; ++b) {
                    const int r = threadIdx.y + a * block_y, c = threadIdx.x + b * block_x;
                    if (r < tile_h && c < quads)
                        *reinterpret_cast<float4*>(tile + r * pitch + 4 * c) =
                            make_float4(Quad<In>::get(v[a][b], 0), Quad<In>::get(v[a][b], 1), Quad<In>::get(v[a][b], 2),
                                        Quad<In>::get(v[a][b], 3));
                }
            staged = true;
        }
    }
    if (staged) {
    } else if (interior) {
        // Loads in flight before the shared stores (memory-level parallelism), in chunks of about 24
        // registers so the 64-register cap holds (3x3: 45 loads at once spilled).
        constexpr int cols = (tile_w + block_x - 1) / block_x;
        constexpr int chunk = cols >= 24 ? 1 : 24 / cols;
#pragma unroll
        for (int a0 = 0; a0 < rows; a0 += chunk) {
            float v[chunk][cols];
#pragma unroll
            for (int a = 0; a < chunk; ++a)
#pragma unroll
                for (int b = 0; b < cols; ++b) {
                    const int r = threadIdx.y + (a0 + a) * block_y, c = threadIdx.x + b * block_x;
                    if (a0 + a < rows && r < tile_h && c < tile_w) v[a][b] = load_sample<In>(in, gx0 + c, gy0 + r);
                }
#pragma unroll
            for (int a = 0; a < chunk; ++a)
#pragma unroll
                for (int b = 0; b < cols; ++b) {
                    const int r = threadIdx.y + (a0 + a) * block_y, c = threadIdx.x + b * block_x;
                    if (a0 + a < rows && r < tile_h && c < tile_w) tile[r * pitch + c] = v[a][b];
                }
        }
    } else {
        for (int r = threadIdx.y; r < tile_h; r += block_y) {
            const int sy = map_index(gy0 + r, in.height, mode);
            for (int c = threadIdx.x; c < tile_w; c += block_x) {
                const int sx = map_index(gx0 + c, in.width, mode);
                tile[r * pitch + c] = (sx < 0 || sy < 0) ? outside : load_sample<In>(in, sx, sy);
            }
        }
    }
    __syncthreads();

    float acc[RY][rx];
#pragma unroll
    for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int q = 0; q < rx; ++q) acc[r][q] = 0.0f;
    constexpr int vecs = (S + rx + K - 1 + 3) / 4;
    const float* base = tile + threadIdx.y * RY * pitch + threadIdx.x * rx;
#pragma unroll
    for (int t = 0; t < RY + K - 1; ++t) {
        float v[vecs * 4];
#pragma unroll
        for (int m = 0; m < vecs; ++m) {
            const float4 f = *reinterpret_cast<const float4*>(base + t * pitch + 4 * m);
            v[4 * m] = f.x, v[4 * m + 1] = f.y, v[4 * m + 2] = f.z, v[4 * m + 3] = f.w;
        }
#pragma unroll
        for (int r = 0; r < RY; ++r) {
            const int j = t - r;
            if (j < 0 || j >= K) continue;
#pragma unroll
            for (int i = 0; i < K; ++i)
#pragma unroll
                for (int q = 0; q < rx; ++q) acc[r][q] = fmaf(w.w[j * K + i], v[S + q + i], acc[r][q]);
        }
    }

    const int xs = x0 + threadIdx.x * rx;
    if (xs >= in.width) return;
#pragma unroll
    for (int r = 0; r < RY; ++r) {
        const int y = y0 + threadIdx.y * RY + r;
        if (y >= row_end) break;
        switch (out_type) {
        case PixelType::u8: store4<std::uint8_t>(out, out_pitch, y, xs, in.width, acc[r], exact, finish); break;
        case PixelType::u16: store4<std::uint16_t>(out, out_pitch, y, xs, in.width, acc[r], exact, finish); break;
        case PixelType::f32: store4<float>(out, out_pitch, y, xs, in.width, acc[r], exact, finish); break;
        }
    }
}

template <int K>
Weights<K> weights_of(const LinearPlan& p) {
    Weights<K> w{};
    for (int k = 0; k < K * K; ++k)
        w.w[k] = p.exact ? float(p.integer_mask.weights[std::size_t(k)]) : float(p.step.mask.weights[std::size_t(k)]);
    return w;
}

template <int K, class In>
void launch(const LinearPlan& p, const Weights<K>& w, ConstImageView in, ImageView out, cudaStream_t stream,
            int row_begin, int row_end) {
    const int rows = row_end - row_begin;
    constexpr int RY = rows_per_thread<K>();
    const int C = in.channels();
    const float outside = float(store_pixel<In>(p.step.border_value));
    const dim3 block(block_x, block_y);
    if (C == 1) {
        constexpr int RYX = rows_per_thread_rx<K>();
        const dim3 grid(unsigned((in.width() + block_x * rx - 1) / (block_x * rx)),
                        unsigned((rows + block_y * RYX - 1) / (block_y * RYX)));
        // Word loads need 4-sample alignment of the data and the pitch (device buffers: 256 bytes; an ROI
        // may start anywhere).
        const std::size_t quad = 4 * sizeof(In);
        const bool aligned = reinterpret_cast<std::uintptr_t>(in.data) % quad == 0 && in.pitch % quad == 0;
        direct_tiled_rx<K, In><<<grid, block, 0, stream>>>(device_view(in), out.data, out.pitch, p.out, w, p.step.border,
                                                            outside, p.finish, p.exact, row_begin, row_end, aligned);
        APRON_CUDA_CHECK_LAUNCH("direct_tiled_rx");
        return;
    }
    const std::size_t smem = sizeof(float) * std::size_t(block_y * RY + K - 1) * std::size_t(block_x + (K - 1) * C);
    auto kernel = direct_tiled<K, In>;
    APRON_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    const dim3 grid(unsigned((in.width() * C + block_x - 1) / block_x), unsigned((rows + block_y * RY - 1) / (block_y * RY)));
    kernel<<<grid, block, smem, stream>>>(device_view(in), out.data, out.pitch, p.out, w, p.step.border, outside,
                                          p.finish, p.exact, row_begin, row_end);
    APRON_CUDA_CHECK_LAUNCH("direct_tiled");
}

} // namespace tiled

} // namespace apron::cuda
