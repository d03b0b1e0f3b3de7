// Direct 2D correlation, tiled (kernel template; instantiated for the sizes of instantiated_sizes.hpp through
// direct_regs_impl.cuh, one group of mask sizes per generated file so they compile in parallel): a block
// stages its input tile with the halo in shared memory (as f32, converted once), then each thread slides
// down a column of 4 x RY outputs, holding them in registers while every input row of the window is read
// once and multiplied by the mask rows it meets.
//
// Written over samples, with the channel count C (1-4 interleaved) a compile-time stride: a row of W
// pixels is W*C samples, tap i of output sample s reads sample s + (i - R)*C, so the FMAs per sample are
// gray's and a tile row is 2*R*C samples wider than its outputs. The border maps pixels (map_sample).
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
#include "cuda/store_rows.cuh"
#include "cuda/tuning.hpp"

namespace apron::cuda {
namespace tiled {

constexpr int block_x = 32, block_y = 8;

template <int K>
struct Weights {
    float w[K * K];
};

template <class In>
__device__ __forceinline__ float load_sample(const DeviceView& v, int x_sample, int y) {
    return sample_to_float(reinterpret_cast<const In*>(v.data + std::size_t(y) * v.pitch)[x_sample]);
}

// ---- four output samples per thread along x -----------------------------------------------------
// Each thread owns a 4 x RY block of output samples. A row of its window is rx + (K - 1)*C consecutive
// tile values, read with 16-byte shared loads (a warp's reads are contiguous: no bank conflicts) and
// consumed by the 4 x K FMAs of every contributing output row (a wide window, such as 31 taps of RGBA in
// 31 words, word by word so it never lives in registers at once); outputs leave as one 4-sample store.
constexpr int rx = KernelTuning::tiled_rx;  // the value the plan names (cuda/tuning.hpp)
static_assert(rx == 4, "the tiles load and store 4-sample words: another value needs their rewrite");

template <int K>
constexpr int rows_per_thread_rx() {
    return K <= 9 ? 8 : K <= 17 ? 4 : K <= 23 ? 2 : 1;
}

// Whether an output view takes 4-sample vector stores at every sample index that is a multiple of 4:
// the executor's buffers do (rows start 256-byte aligned); a caller's ROI view may start anywhere.
inline bool vector_stores(ImageView out) {
    const std::size_t quad = 4 * bytes_per_sample(out.type());
    return reinterpret_cast<std::uintptr_t>(out.data) % quad == 0 && out.pitch % quad == 0;
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
        return __uint_as_float(__byte_perm(word, 0x4Bu, lo | (lo + 1) << 4 | 0x4500u)) - 8388608.0f;
    }
};

// At least 4 blocks per SM (<= 64 registers): unbounded, the 3x3 instance held its 45 staged loads in
// 90 registers and ran 2 blocks per SM (224 Gpix/s f32 where 5x5 reached 323).
//
// The tile starts S = (4 - R*C % 4) % 4 samples left of the window so that its origin x0 - R*C - S is a
// multiple of 4: integer rows then load as aligned 4-sample words (one LDG per 4 samples instead of
// one per byte), and every tile row keeps 16-byte alignment for the LDS.128 of the compute loop, which
// reads its window shifted by S (free for K >= 7 at one channel, one extra LDS.128 per row below).
template <int K, int C>
struct TileRx {
    static constexpr int RY = rows_per_thread_rx<K>();
    static constexpr int R = K / 2;
    static constexpr int S = (4 - R * C % 4) % 4;
    static constexpr int h = block_y * RY + K - 1;
    static constexpr int w = block_x * rx + 2 * R * C + S;
    static constexpr int pitch = (w + 3) / 4 * 4;  // 16-byte aligned rows
    // Largest: K = 9, C = 4: 72 rows x 160 samples, 46080 bytes.
    static_assert(sizeof(float) * h * pitch <= 48 * 1024, "static shared memory of one block");
};

// Fixed: void, or In for a float finish into In (store_rows; instantiated for masks up to 5x5, where the
// store is a large part of the work).
template <int K, class In, int C, class Fixed>
__global__ void __launch_bounds__(block_x* block_y, 4)
    direct_tiled_rx(DeviceView in, std::byte* out, std::size_t out_pitch, PixelType out_type,
                    const __grid_constant__ Weights<K> w, BorderMode mode, float outside, LinearFinish finish, bool exact,
                    int row_begin, int row_end, bool aligned, bool vec_out) {
    using T = TileRx<K, C>;
    constexpr int RY = T::RY, R = T::R, S = T::S, tile_h = T::h, tile_w = T::w, pitch = T::pitch;
    __shared__ __align__(16) float tile[tile_h * pitch];
    const int samples = in.width * C;
    const int x0 = blockIdx.x * block_x * rx, y0 = row_begin + blockIdx.y * block_y * RY;
    const int gx0 = x0 - R * C - S, gy0 = y0 - R;  // tile origin in samples (gx0 is a multiple of 4)

    const bool interior = gx0 >= 0 && gy0 >= 0 && gx0 + pitch <= samples && gy0 + tile_h <= in.height;
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
                // Columns inside the row need no map (its division and remainders): in the blocks of the
                // left and right edges, that is all but the halo.
                const int s = gx0 + c;
                const int sx = s >= 0 && s < samples ? s : map_sample(s, in.width, C, mode);
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
    // Window element S + q + i*C is tap i of output q. Windows of up to 40 samples (every K at one
    // channel, K <= 9 at four) are read whole, then consumed; wider ones word by word, each consumed before
    // the next is read (ptxas, K = 9 f32 at one channel: 16 bytes spilled word by word, none whole).
    // Both orders add the taps of an output in the same order (i ascending): the same bits.
    constexpr int vecs = (S + rx + (K - 1) * C + 3) / 4;
    const float* base = tile + threadIdx.y * RY * pitch + threadIdx.x * rx;
#pragma unroll
    for (int t = 0; t < RY + K - 1; ++t) {
        if constexpr (vecs <= 10) {
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
                    for (int q = 0; q < rx; ++q) acc[r][q] = fmaf(w.w[j * K + i], v[S + q + i * C], acc[r][q]);
            }
        } else {
#pragma unroll
            for (int m = 0; m < vecs; ++m) {
                const float4 f = *reinterpret_cast<const float4*>(base + t * pitch + 4 * m);
                const float v[4] = {f.x, f.y, f.z, f.w};
#pragma unroll
                for (int r = 0; r < RY; ++r) {
                    const int j = t - r;
                    if (j < 0 || j >= K) continue;
#pragma unroll
                    for (int e = 0; e < 4; ++e)
#pragma unroll
                        for (int q = 0; q < rx; ++q) {
                            const int d = 4 * m + e - S - q;  // = i*C for the tap i this element is to output q
                            if (d < 0 || d % C != 0 || d / C >= K) continue;
                            acc[r][q] = fmaf(w.w[j * K + d / C], v[e], acc[r][q]);
                        }
                }
            }
        }
    }

    const int xs = x0 + threadIdx.x * rx;
    if (xs >= samples) return;
    store_rows<Fixed>(OutputRows{out, out_pitch, out_type, samples, row_end, vec_out, exact, finish}, y0 + threadIdx.y * RY, xs,
               acc);
}

template <int K>
Weights<K> weights_of(const LinearPlan& p) {
    Weights<K> w{};
    for (int k = 0; k < K * K; ++k)
        w.w[k] = p.exact ? float(p.integer_mask.weights[std::size_t(k)]) : float(p.step.mask.weights[std::size_t(k)]);
    return w;
}

template <int K, class In, int C>
void launch(const LinearPlan& p, const Weights<K>& w, ConstImageView in, ImageView out, cudaStream_t stream,
            int row_begin, int row_end) {
    constexpr int RY = rows_per_thread_rx<K>();
    const float outside = float(store_pixel<In>(p.step.border_value));
    const dim3 block(block_x, block_y);
    const dim3 grid(unsigned((std::size_t(in.width()) * in.channels() + block_x * rx - 1) / (block_x * rx)),
                    unsigned((row_end - row_begin + block_y * RY - 1) / (block_y * RY)));
    // Word loads need 4-sample alignment of the data and the pitch (device buffers: 256 bytes; an ROI
    // may start anywhere).
    const std::size_t quad = 4 * sizeof(In);
    const bool aligned = reinterpret_cast<std::uintptr_t>(in.data) % quad == 0 && in.pitch % quad == 0;
    const bool vec_out = vector_stores(out);
    const KernelFinish f = kernel_finish(p.exact, p.finish, p.out);
    auto kernel = direct_tiled_rx<K, In, C, void>;
    if constexpr (K <= 5)
        if (f.fixed_same_type(p.in, p.out)) kernel = direct_tiled_rx<K, In, C, In>;
    kernel<<<grid, block, 0, stream>>>(device_view(in), out.data, out.pitch, p.out, w, p.step.border, outside, f.finish,
                                       f.exact, row_begin, row_end, aligned, vec_out);
    APRON_CUDA_CHECK_LAUNCH("direct_tiled_rx");
}

} // namespace tiled

} // namespace apron::cuda
