// Direct 2D correlation for small masks (up to 5x5) with no shared memory: each thread owns RX x RY
// outputs (RX = 4 for f32, 8 for integer images at 3x3) and reads each input row of its window once, straight from global
// memory as aligned 4-sample words, through L1, which serves the words its neighbours share. No staging
// phase and no barrier, so loads of one warp overlap the FMAs of another; the tiled kernel's
// load-sync-compute rhythm left DRAM at 65 % for 3x3 f32.
//
// Written over samples, with the channel count C a compile-time stride: an interleaved row of W pixels is
// a row of W*C samples, and tap i of output sample s reads sample s + (i - R)*C. RX consecutive output
// samples (of whichever channels) need RX + 2*R*C contiguous samples, loaded as the 4-sample words
// x - HA .. x + RX + HA (HA = R*C rounded up to 4). So the FMAs per sample are gray's, and the loads per
// row grow by 2*(HA - 4) samples: none at 3x3 (HA = 4 for every C), 8 at 5x5 for 3-4 channels.
//
// Interior blocks use the word loads; blocks touching the border read each sample through map_sample.
// Exact plans (f32 accumulator, sums below 2^24) share the kernel as in direct_tiled_impl.cuh.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "cuda/direct_regs.hpp"
#include "cuda/direct_tiled_impl.cuh"
#include "cuda/dispatch_table.hpp"
#include "cuda/launch_record.hpp"
#include "cuda/store_rows.cuh"

namespace apron::cuda::regs {

constexpr int block_x = 32, block_y = 8;

// Rows per thread: 8 for 3x3 with 4 outputs per row; 6 for 5x5 keeps 24 accumulators and the window
// under the 64-register cap (8 spilled). 8 outputs per row: half the rows, the same accumulators.
// 5x5 on 2-3 channels: 4 rows, on 4 channels 3 (ptxas, sm_90, f32 with 6 rows: 40 bytes spilled at 2-3
// channels, 132 at 4; with 4 rows: 4 bytes at 2, none at 3, 48 at 4, whose 20-sample window is all live).
// 3 rows re-read (3 + 4) / 3 input rows per output row instead of 2: 4 % more L1 loads, 8 bytes spilled.
template <int K, int RX, int C>
constexpr int rows_per_thread() {
    return (K <= 3 ? 8 : C == 1 ? 6 : C == 4 ? 3 : 4) * 4 / RX;
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

// Halo of the window in samples, rounded up to whole 4-sample words.
template <int K, int C>
constexpr int halo_words_samples() {
    return ((K / 2) * C + 3) / 4 * 4;
}

// Fixed: void, or In for a float finish into In (store_rows: one short store, no branches on the type).
template <int K, class In, int RX, int C, class Fixed>
__global__ void __launch_bounds__(block_x* block_y, 4)
    direct_regs(DeviceView in, std::byte* out, std::size_t out_pitch, PixelType out_type,
                const __grid_constant__ tiled::Weights<K> w, BorderMode mode, float outside, LinearFinish finish,
                bool exact, bool vec_out, int row_begin, int row_end) {
    static_assert(K <= 5 && C >= 1 && C <= 4, "the window of RX outputs must fit RX / 4 + 4 four-sample words");
    static_assert(RX == 4 || RX == 8);
    constexpr int RY = rows_per_thread<K, RX, C>();
    constexpr int R = K / 2;
    constexpr int HA = halo_words_samples<K, C>();
    constexpr int NV = RX + 2 * HA;  // samples x-HA .. x+RX+HA-1
    const int samples = in.width * C;
    const int x = (blockIdx.x * block_x + threadIdx.x) * RX;               // first output sample
    const int y0 = row_begin + (blockIdx.y * block_y + threadIdx.y) * RY;  // first output row
    // The block's whole window inside the image: word loads, no border maths.
    const int bx0 = blockIdx.x * block_x * RX, by0 = row_begin + blockIdx.y * block_y * RY;
    const bool interior = bx0 - HA >= 0 && bx0 + block_x * RX + HA <= samples && by0 - R >= 0 &&
                          by0 + block_y * RY + R <= in.height;
    // Border blocks: the block's column map (window sample e of thread t at colmap[t * RX + e]), made once
    // in shared memory, so the border copy holds no map in registers (it spilled there).
    constexpr int map_len = block_x * RX + 2 * HA;
    __shared__ int colmap[map_len];
    if (!interior) {
        for (int i = threadIdx.y * block_x + threadIdx.x; i < map_len; i += block_x * block_y)
            colmap[i] = map_sample(bx0 - HA + i, in.width, C, mode);
        __syncthreads();
    }
    if (x >= samples || y0 >= row_end) return;

    float acc[RY][RX];
#pragma unroll
    for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int q = 0; q < RX; ++q) acc[r][q] = 0.0f;

    // Each row of the window (t = 0 .. RY + K - 2) is loaded into v, then meets the mask rows of the outputs
    // it reaches. Interior and border blocks run separate copies of this unrolled loop: the border's column
    // map is made once per thread rather than once per row (with 64-bit remainders for far-outside
    // coordinates it was most of the kernel's code), and it lives only in its own copy, so the interior copy
    // keeps its registers.
    const auto accumulate = [&](auto&& load_row) {
#pragma unroll
        for (int t = 0; t < RY + K - 1; ++t) {
            float v[NV];
            load_row(y0 - R + t, v);
#pragma unroll
            for (int r = 0; r < RY; ++r) {
                const int j = t - r;
                if (j < 0 || j >= K) continue;
#pragma unroll
                for (int i = 0; i < K; ++i)
#pragma unroll
                    for (int q = 0; q < RX; ++q) acc[r][q] = fmaf(w.w[j * K + i], v[HA + q + (i - R) * C], acc[r][q]);
            }
        }
    };
    // Samples HA - R*C .. HA + RX + R*C - 1 of v are read; the rest of the words' samples are not.
    constexpr int e_begin = HA - R * C, e_end = HA + RX + R * C;
    if (interior) {
        accumulate([&](int gy, float* v) {
            const std::byte* row = in.data + std::size_t(gy) * in.pitch;
#pragma unroll
            for (int m = 0; m < NV / 4; ++m) load4<In>(row, x - HA + 4 * m, v + 4 * m);
        });
    } else {
        // Border blocks: the row is mapped once per row, and a word wholly inside the row is one load as
        // inside (every word of every thread but the first and last of the row); only the others read
        // their samples through the block's column map. Per-sample loads on every row made the left and
        // right edge blocks (1/16 of the image at 8192 samples) cost several times the others.
        bool whole[NV / 4];
#pragma unroll
        for (int m = 0; m < NV / 4; ++m) whole[m] = x - HA + 4 * m >= 0 && x - HA + 4 * m + 4 <= samples;
        accumulate([&](int gy, float* v) {
            const int sy = map_index(gy, in.height, mode);
            const std::byte* row = in.data + std::size_t(sy < 0 ? 0 : sy) * in.pitch;
#pragma unroll
            for (int m = 0; m < NV / 4; ++m) {
                if (4 * m + 4 <= e_begin || 4 * m >= e_end) continue;  // no sample of the word is read
                if (sy >= 0 && whole[m]) {
                    load4<In>(row, x - HA + 4 * m, v + 4 * m);
                } else {
#pragma unroll
                    for (int e = 4 * m; e < 4 * m + 4; ++e)
                        if (e >= e_begin && e < e_end) {
                            const int c = colmap[threadIdx.x * RX + e];
                            v[e] = (c < 0 || sy < 0) ? outside : tiled::load_sample<In>(in, c, sy);
                        }
                }
            }
        });
    }
    store_rows<Fixed>(OutputRows{out, out_pitch, out_type, samples, row_end, vec_out, exact, finish}, y0, x, acc);
}

template <int K, class In, int RX, int C>
void launch(const LinearPlan& p, const tiled::Weights<K>& w, ConstImageView in, ImageView out, cudaStream_t stream,
            int row_begin, int row_end) {
    const float outside = float(store_pixel<In>(p.step.border_value));
    const bool vec_out = tiled::vector_stores(out);
    const dim3 block(block_x, block_y);
    constexpr int RY = rows_per_thread<K, RX, C>();
    const dim3 grid(unsigned((std::size_t(in.width()) * C + block_x * RX - 1) / (block_x * RX)),
                    unsigned((row_end - row_begin + block_y * RY - 1) / (block_y * RY)));
    const KernelFinish f = kernel_finish(p.exact, p.finish, p.out);
    auto kernel = f.fixed_same_type(p.in, p.out) ? direct_regs<K, In, RX, C, In> : direct_regs<K, In, RX, C, void>;
    kernel<<<grid, block, 0, stream>>>(device_view(in), out.data, out.pitch, p.out, w, p.step.border, outside, f.finish,
                                       f.exact, vec_out, row_begin, row_end);
    APRON_CUDA_CHECK_LAUNCH("direct_regs");
}

} // namespace apron::cuda::regs

namespace apron::cuda {

// One mask size and channel count, every input type: what the dispatcher in direct_tiled.cu calls
// (instantiated per group of mask sizes, instantiated_sizes.hpp, and per channel count in files
// src/cuda/CMakeLists.txt generates).
// Small masks on aligned rows take the register kernel, the rest the shared-memory tiles.
template <int K, int C>
void launch_direct_tiled_k(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream, int row_begin,
                           int row_end) {
    const tiled::Weights<K> w = tiled::weights_of<K>(p);
    with_type(p.in, [&]<class In>() {
        if constexpr (K <= 5) {
            switch (regs::usable<K, In>(in)) {
            case 4:
                record_launch(direct_form_name("cuda.direct_regs", K, 4));
                return regs::launch<K, In, 4, C>(p, w, in, out, stream, row_begin, row_end);
            case 8:
                if constexpr (!std::is_same_v<In, float>) {
                    record_launch(direct_form_name("cuda.direct_regs", K, 8));
                    return regs::launch<K, In, 8, C>(p, w, in, out, stream, row_begin, row_end);
                }
                break;
            default: break;
            }
        }
        record_launch(direct_form_name("cuda.direct_tiled", K, tiled::rx));
        tiled::launch<K, In, C>(p, w, in, out, stream, row_begin, row_end);
    });
}

} // namespace apron::cuda
