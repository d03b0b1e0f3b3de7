// Direct 2D correlation for small masks (up to 5x5) on single-channel images, with no shared memory:
// each thread owns 4 x RY outputs and reads each input row of its window once, straight from global
// memory as aligned 4-sample words (three per row: x-4, x, x+4), through L1, which serves the words
// its neighbours share. No staging phase and no barrier, so loads of one warp overlap the FMAs of
// another; the tiled kernel's load-sync-compute rhythm left DRAM at 65 % for 3x3 f32.
//
// Interior blocks use the word loads; blocks touching the border read each sample through map_index.
// Exact plans (f32 accumulator, sums below 2^24) share the kernel as in direct_tiled_impl.cuh.
#pragma once
#include <cstdint>
#include <type_traits>

#include "cuda/direct_tiled_impl.cuh"

namespace apron::cuda::regs {

constexpr int block_x = 32, block_y = 8, rx = 4;

// Rows per thread: 8 for 3x3; 6 for 5x5 keeps 24 accumulators and the window under the 64-register
// cap (8 spilled).
template <int K>
constexpr int rows_per_thread() {
    return K <= 3 ? 8 : 6;
}

// Four consecutive samples of a row as floats, from one aligned word load.
template <class In>
__device__ __forceinline__ void load4(const std::byte* row, int x, float* v) {
    if constexpr (std::is_same_v<In, float>) {
        const float4 f = *reinterpret_cast<const float4*>(row + std::size_t(x) * 4);
        v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
    } else {
        using Raw = typename tiled::Quad<In>::Raw;
        const Raw w = *reinterpret_cast<const Raw*>(row + std::size_t(x) * sizeof(In));
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = tiled::Quad<In>::get(w, e);
    }
}

template <int K, class In>
__global__ void __launch_bounds__(block_x* block_y, 4)
    direct_regs(DeviceView in, std::byte* out, std::size_t out_pitch, PixelType out_type,
                const __grid_constant__ tiled::Weights<K> w, BorderMode mode, float outside, LinearFinish finish,
                bool exact, int row_begin, int row_end) {
    static_assert(K <= 9, "the window of 4 outputs must fit three 4-sample words");
    constexpr int RY = rows_per_thread<K>();
    constexpr int R = K / 2;
    const int x = (blockIdx.x * block_x + threadIdx.x) * rx;               // first output column
    const int y0 = row_begin + (blockIdx.y * block_y + threadIdx.y) * RY;  // first output row
    if (x >= in.width || y0 >= row_end) return;
    // The block's whole window inside the image: word loads, no border maths.
    const int bx0 = blockIdx.x * block_x * rx, by0 = row_begin + blockIdx.y * block_y * RY;
    const bool interior = bx0 - 4 >= 0 && bx0 + block_x * rx + 4 <= in.width && by0 - R >= 0 &&
                          by0 + block_y * RY + R <= in.height;

    float acc[RY][rx];
#pragma unroll
    for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int q = 0; q < rx; ++q) acc[r][q] = 0.0f;

#pragma unroll
    for (int t = 0; t < RY + K - 1; ++t) {
        float v[12];  // samples x-4 .. x+7
        const int gy = y0 - R + t;
        if (interior) {
            const std::byte* row = in.data + std::size_t(gy) * in.pitch;
            load4<In>(row, x - 4, v);
            load4<In>(row, x, v + 4);
            load4<In>(row, x + 4, v + 8);
        } else {
            const int sy = map_index(gy, in.height, mode);
#pragma unroll
            for (int e = 0; e < 12; ++e) {
                if (e < 4 - R || e >= 8 + R) continue;  // outside every window of the 4 outputs
                const int sx = map_index(x - 4 + e, in.width, mode);
                v[e] = (sx < 0 || sy < 0) ? outside : tiled::load_sample<In>(in, sx, sy);
            }
        }
#pragma unroll
        for (int r = 0; r < RY; ++r) {
            const int j = t - r;
            if (j < 0 || j >= K) continue;
#pragma unroll
            for (int i = 0; i < K; ++i)
#pragma unroll
                for (int q = 0; q < rx; ++q) acc[r][q] = fmaf(w.w[j * K + i], v[4 - R + q + i], acc[r][q]);
        }
    }
#pragma unroll
    for (int r = 0; r < RY; ++r) {
        const int y = y0 + r;
        if (y >= row_end) break;
        switch (out_type) {
        case PixelType::u8: tiled::store4<std::uint8_t>(out, out_pitch, y, x, in.width, acc[r], exact, finish); break;
        case PixelType::u16: tiled::store4<std::uint16_t>(out, out_pitch, y, x, in.width, acc[r], exact, finish); break;
        case PixelType::f32: tiled::store4<float>(out, out_pitch, y, x, in.width, acc[r], exact, finish); break;
        }
    }
}

// Whether the register kernel takes this launch: small masks on f32 single-channel word-aligned rows.
// Integer images stay with the tiles, which convert each sample once: here every thread converts its
// whole window (measured: u8 3x3 416 Gpix/s here against 517 tiled on the H100).
template <int K, class In>
bool usable(ConstImageView in) {
    const std::size_t quad = 4 * sizeof(In);
    return K <= 5 && std::is_same_v<In, float> && in.channels() == 1 && reinterpret_cast<std::uintptr_t>(in.data) % quad == 0 &&
           in.pitch % quad == 0;
}

template <int K, class In>
void launch(const LinearPlan& p, const tiled::Weights<K>& w, ConstImageView in, ImageView out, cudaStream_t stream,
            int row_begin, int row_end) {
    constexpr int RY = rows_per_thread<K>();
    const float outside = float(store_pixel<In>(p.step.border_value));
    const dim3 block(block_x, block_y);
    const dim3 grid(unsigned((in.width() + block_x * rx - 1) / (block_x * rx)),
                    unsigned((row_end - row_begin + block_y * RY - 1) / (block_y * RY)));
    direct_regs<K, In><<<grid, block, 0, stream>>>(device_view(in), out.data, out.pitch, p.out, w, p.step.border, outside,
                                                    p.finish, p.exact, row_begin, row_end);
    APRON_CUDA_CHECK_LAUNCH("direct_regs");
}

} // namespace apron::cuda::regs

namespace apron::cuda {

// One mask size, every input type: what the dispatcher in direct_tiled.cu calls. Small masks on
// aligned single-channel rows take the register kernel, the rest the shared-memory tiles.
template <int K>
void launch_direct_tiled_k(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream, int row_begin,
                           int row_end) {
    const tiled::Weights<K> w = tiled::weights_of<K>(p);
    with_type(p.in, [&]<class In>() {
        if constexpr (K <= 5) {
            if (regs::usable<K, In>(in)) return regs::launch<K, In>(p, w, in, out, stream, row_begin, row_end);
        }
        tiled::launch<K, In>(p, w, in, out, stream, row_begin, row_end);
    });
}

} // namespace apron::cuda
