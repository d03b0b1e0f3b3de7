// Rectangle morphology for elements of any size on CUDA: two separable passes through a device temporary,
// vertical (in -> tmp) then horizontal (tmp -> out). The fused tiled kernel (morph_rect.cu) keeps the whole
// (TH + H - 1) x (tile + W - 1) input in shared memory and takes sides up to 64; these passes stage one
// direction at a time, so their shared memory grows with W alone and their registers not at all.
//
// Exactness: max / min is associative, so ext over the rectangle = horizontal ext of vertical exts. The
// border commutes with the split: a mapped row (column) is read as its source row (column) in the pass
// that crosses it; an outside pixel (ignored or constant) reads the outside value in both passes, and the
// vertical ext of an outside column is that value again. f32 keeps fmaxf / fminf values in tmp (NaN where a
// column's window held no sample; the horizontal pass skips it like any missing sample), so the result is
// the SPEC's (core/morph_value.hpp) and the other kernels' value.
//
// Both passes run van Herk / Gil-Werman segments (`pass_windows`): a thread makes 32 consecutive outputs
// along the pass, sharing the core of their windows (k + 3R ops and k + R - 1 reads for R outputs).
// 101 x 101: (101 + 96) / 32 = 6.2 ops and 4.1 reads per sample per pass, against 5 ops at 31 x 31 in the
// fused kernel (R = 16): comparable issue cost, with one more round trip of the image through DRAM / L2
// (tmp: written once, read once). The cost per sample grows as k / 32 for very long sides (4097: ~131).
//  - vertical: thread = one sample column x 32 rows, reads straight from global memory (a warp reads 32
//    consecutive samples per row; the k + 31 rows of a thread's windows overlap its neighbours' in L1/L2).
//    Rows outside the image: block-uniform test, so interior blocks carry no border code.
//  - horizontal: a block stages NR rows x (256 + W - 1) pixels as 32-bit words in shared memory (coalesced
//    loads, the border rule per sample), thread = (row, channel, 32 pixels) with taps C words apart (odd
//    row pitches: the rows of a warp sit on distinct banks), results to a second shared region, a barrier,
//    then coalesced stores.
// ptxas (sm_90, CUDA 13.0): vertical 80 registers (launch bounds 128 x 6: 24 warps per SM; R = 32 with
// its hoisted loads wants 128, which halves the warps), spills u16 50 B, u8 16 B, f32 none (once per thread,
// the border path); horizontal 48 registers, no spill, rows x (pitch + 256 C + 1) words of shared memory:
// 101 wide, 1 / 3 / 4 channels: 32 / 10 / 8 rows, 77-79 KB (2 blocks per SM).
//
// Expected (H200, u8 gray 8192^2, 101 x 101; not yet measured): each pass moves 2 bytes per sample through
// DRAM (~34 us per pass at ~4 TB/s) and issues ~14 (vertical) to ~20 (horizontal: staging, LDS, STS)
// instructions per sample (~30 and ~40 us at the H200's issue rate): ~80-110 us, 600-800 Gpix/s at best,
// and likely 300-500 (the byte loads of the vertical pass, shared-memory bank conflicts with C = 3).
#include <algorithm>
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/morph_rect.hpp"
#include "cuda/morph_rect_ops.cuh"

namespace apron::cuda {
namespace {

using namespace morph;

constexpr int pass_r = 32;          // outputs per thread along the pass
constexpr int vertical_threads = 128;
constexpr int horizontal_threads = 256;
constexpr int horizontal_tile = 256;  // output pixels per staged row
constexpr std::size_t horizontal_preferred_smem = 96 * 1024;

struct PassParams {
    const std::byte* in;
    std::size_t in_pitch;
    std::byte* out;
    std::size_t out_pitch;
    int width, height, channels, samples;
    int anchor, k;  // along the pass
    int mode;       // -1: outside pixels read `outside`, else a BorderMode
    u32 outside;    // sample bits
    bool finish;    // the last pass: every type narrows to T
    int rows, pitch;  // horizontal: rows per block, staged row pitch (words, odd)
    int first_row;    // row of blockIdx.y = 0 (grids of at most 65535 block rows)
};

template <class T>
__device__ __forceinline__ u32 word_of(T v) {
    if constexpr (std::is_same_v<T, float>) return __float_as_uint(v);
    else return u32(v);
}

template <class T, bool Dilate>
__device__ __forceinline__ T result_of(u32 w, bool) {
    if constexpr (std::is_same_v<T, float>) {
        return __uint_as_float(w);
    } else {
        return T(w);
    }
}

template <class T>
__device__ __forceinline__ const T* row_of(const PassParams& p, int y) {
    return reinterpret_cast<const T*>(p.in + std::size_t(y) * p.in_pitch);
}

// Sample column x from window row y on (the thread's first window starts at row y): all inside the image.
template <class T>
struct InteriorColumn {
    const std::byte* top;  // row y, sample x
    std::size_t pitch;     // bytes
    __device__ __forceinline__ u32 operator()(int j) const {
        return word_of(__ldg(reinterpret_cast<const T*>(top + std::ptrdiff_t(j) * std::ptrdiff_t(pitch))));
    }
    __device__ __forceinline__ InteriorColumn down(int rows) const {
        return {top + std::ptrdiff_t(rows) * std::ptrdiff_t(pitch), pitch};
    }
};

// Sample column x near the top or bottom edge: rows through the border rule (fields by value: no copy of
// the kernel parameters to local memory).
template <class T>
struct BorderColumn {
    const std::byte* column;  // row 0, sample x
    std::size_t pitch;
    int y, height, mode;
    u32 outside;
    __device__ __forceinline__ u32 operator()(int j) const {
        int row = y + j;
        if (row < 0 || row >= height) {
            if (mode < 0) return outside;
            row = map_index(row, height, BorderMode(mode));
        }
        return word_of(__ldg(reinterpret_cast<const T*>(column + std::size_t(row) * pitch)));
    }
    __device__ __forceinline__ BorderColumn down(int rows) const {
        BorderColumn c = *this;
        c.y += rows;
        return c;
    }
};

// sink(t, ext_{j < k} ld(t + j)) for t < pass_r. k >= 32: one segment of 32 ((k + 96) / 32 ops per
// output); 8 <= k < 32: four segments of 8 (at most (31 + 24) / 8 = 7 ops); k < 8: a plain running
// extremum (at most 6 ops). Three shapes, no compile-time window table: the passes run where the fused
// kernel cannot (sides beyond 64), so one side is long, and this keeps each kernel's code small.
template <class Op, class Ld, class Sink>
__device__ __forceinline__ void pass_windows(const Ld& ld, int k, const Sink& sink) {
    if (k >= pass_r) {
        u32 o[pass_r];
        van_herk_segment<pass_r, 4, Op>(ld, k, o);
#pragma unroll
        for (int t = 0; t < pass_r; ++t) sink(t, o[t]);
    } else if (k >= 8) {
#pragma unroll 1
        for (int b = 0; b < pass_r; b += 8) {
            u32 o[8];
            van_herk_segment<8, 4, Op>(ld.down(b), k, o);
#pragma unroll
            for (int t = 0; t < 8; ++t) sink(b + t, o[t]);
        }
    } else {
#pragma unroll 1
        for (int t = 0; t < pass_r; ++t) {
            u32 acc = ld(t);
#pragma unroll 1
            for (int j = 1; j < k; ++j) acc = Op::op(acc, ld(t + j));
            sink(t, acc);
        }
    }
}

template <class T, bool Dilate>
__global__ void __launch_bounds__(vertical_threads, 6) morph_rect_vertical_kernel(const PassParams p) {
    using Op = OpFor<T, Dilate>;
    const int x = int(blockIdx.x) * vertical_threads + int(threadIdx.x);
    const int y0 = p.first_row + int(blockIdx.y) * pass_r;
    const int wy = y0 - p.anchor;  // first window row
    const bool interior = wy >= 0 && wy + pass_r + p.k - 1 <= p.height;  // block-uniform
    if (x >= p.samples) return;
    std::byte* const column = p.out + std::size_t(x) * sizeof(T);
    const auto sink = [&](int t, u32 v) {
        if (y0 + t < p.height)
            *reinterpret_cast<T*>(column + std::size_t(y0 + t) * p.out_pitch) = result_of<T, Dilate>(v, p.finish);
    };
    if (interior)
        pass_windows<Op>(InteriorColumn<T>{p.in + std::size_t(wy) * p.in_pitch + std::size_t(x) * sizeof(T), p.in_pitch},
                         p.k, sink);
    else
        pass_windows<Op>(BorderColumn<T>{p.in + std::size_t(x) * sizeof(T), p.in_pitch, wy, p.height, p.mode, p.outside},
                         p.k, sink);
}

template <class T, bool Dilate>
__global__ void __launch_bounds__(horizontal_threads) morph_rect_horizontal_kernel(const PassParams p) {
    using Op = OpFor<T, Dilate>;
    extern __shared__ u32 staged[];  // p.rows x p.pitch words of input, then p.rows x (256 C + 1) results
    const int C = p.channels;
    const int x0 = int(blockIdx.x) * horizontal_tile, y0 = p.first_row + int(blockIdx.y) * p.rows;
    const int row_samples = (horizontal_tile + p.k - 1) * C;
    const int s0 = (x0 - p.anchor) * C;  // input sample of staged word 0
    const int tid = int(threadIdx.x);
    for (int r = 0; r < p.rows; ++r) {
        const int y = y0 + r;
        if (y >= p.height) break;
        const T* src = row_of<T>(p, y);
        u32* dst = staged + r * p.pitch;
        for (int q = tid; q < row_samples; q += horizontal_threads) {
            const int s = s0 + q;
            u32 v;
            if (s >= 0 && s < p.samples) {
                v = word_of(src[s]);
            } else if (p.mode < 0) {
                v = p.outside;
            } else {
                // mapped_sample(s) without its floor division: staged word 0 starts a pixel, so q >= 0 splits
                // into pixel and channel directly (mapped_sample here: 32-56 more instructions, same registers)
                const int px = x0 - p.anchor + q / C, ch = q - (q / C) * C;
                v = word_of(src[map_index(px, p.width, BorderMode(p.mode)) * C + ch]);
            }
            dst[q] = v;
        }
    }
    __syncthreads();
    // Task = (row fastest, channel, segment of pass_r pixels).
    const int segments = horizontal_tile / pass_r;
    const int r = tid % p.rows, rest = tid / p.rows, c = rest % C, seg = rest / C;
    const bool active = seg < segments && y0 + r < p.height && x0 + seg * pass_r < p.width;
    u32* const results = staged + p.rows * p.pitch;
    const int out_pitch = horizontal_tile * C + 1;  // odd: the rows of a warp's stores on distinct banks
    if (active) {
        u32* const res = results + r * out_pitch + seg * pass_r * C + c;
        pass_windows<Op>(StridedWords{staged + r * p.pitch + seg * pass_r * C + c, C}, p.k,
                         [&](int t, u32 v) { res[t * C] = v; });
    }
    __syncthreads();
    const int out_samples = min(horizontal_tile, p.width - x0) * C;
    for (int rr = 0; rr < p.rows; ++rr) {
        const int y = y0 + rr;
        if (y >= p.height) break;
        T* dst = reinterpret_cast<T*>(p.out + std::size_t(y) * p.out_pitch) + std::size_t(x0) * C;
        for (int q = tid; q < out_samples; q += horizontal_threads)
            dst[q] = result_of<T, Dilate>(results[rr * out_pitch + q], p.finish);
    }
}

// Rows per horizontal block and the staged row pitch: enough (row, channel, segment) tasks for the block's
// threads, fewer rows where wide elements would need more shared memory than preferred.
std::size_t horizontal_bytes(int C, int rows, int pitch) {
    return 4 * std::size_t(rows) * (pitch + horizontal_tile * C + 1);
}

void horizontal_shape(int C, int W, int& rows, int& pitch) {
    pitch = ((horizontal_tile + W - 1) * C) | 1;
    rows = horizontal_threads / (C * (horizontal_tile / pass_r));
    while (rows > 1 && horizontal_bytes(C, rows, pitch) > horizontal_preferred_smem) --rows;
}

template <class T, bool Dilate>
void launch_passes(const MorphPlan& plan, ConstImageView in, ImageView out, int mode, u32 outside,
                   cudaStream_t stream) {
    const Mask& e = plan.step.element;
    PassParams base{};
    base.width = in.width();
    base.height = in.height();
    base.channels = in.channels();
    base.samples = in.width() * in.channels();
    base.mode = mode;
    base.outside = outside;
    const bool horizontal = e.width > 1, vertical = e.height > 1 || !horizontal;  // 1x1: one copying pass
    // The temporary lives on the stream: freed after the horizontal pass, or when a launch check throws.
    struct StreamBuffer {
        void* data = nullptr;
        cudaStream_t stream;
        ~StreamBuffer() {
            if (data) cudaFreeAsync(data, stream);
        }
    } tmp{nullptr, stream};
    std::size_t tmp_pitch = 0;
    ConstImageView src = in;
    if (vertical && horizontal) {
        tmp_pitch = (std::size_t(base.samples) * sizeof(T) + 255) / 256 * 256;
        APRON_CUDA_CHECK(cudaMallocAsync(&tmp.data, tmp_pitch * std::size_t(base.height), stream));
    }
    if (vertical) {
        PassParams p = base;
        p.in = in.data;
        p.in_pitch = in.pitch;
        p.out = horizontal ? static_cast<std::byte*>(tmp.data) : out.data;
        p.out_pitch = horizontal ? tmp_pitch : out.pitch;
        p.anchor = e.anchor_y;
        p.k = e.height;
        p.finish = !horizontal;
        const int block_rows = (base.height + pass_r - 1) / pass_r;
        for (int first = 0; first < block_rows; first += 65535) {
            p.first_row = first * pass_r;
            const dim3 grid(unsigned((base.samples + vertical_threads - 1) / vertical_threads),
                            unsigned(std::min(65535, block_rows - first)));
            morph_rect_vertical_kernel<T, Dilate><<<grid, vertical_threads, 0, stream>>>(p);
            APRON_CUDA_CHECK_LAUNCH("morph_rect_vertical");
        }
        if (horizontal) src = ConstImageView{static_cast<const std::byte*>(tmp.data), in.shape, tmp_pitch, Memory::device};
    }
    if (horizontal) {
        PassParams p = base;
        p.in = src.data;
        p.in_pitch = src.pitch;
        p.out = out.data;
        p.out_pitch = out.pitch;
        p.anchor = e.anchor_x;
        p.k = e.width;
        p.finish = true;
        horizontal_shape(base.channels, e.width, p.rows, p.pitch);
        const std::size_t bytes = horizontal_bytes(base.channels, p.rows, p.pitch);
        auto kernel = morph_rect_horizontal_kernel<T, Dilate>;
        if (bytes > 48 * 1024)
            APRON_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
        const int block_rows = (base.height + p.rows - 1) / p.rows;
        for (int first = 0; first < block_rows; first += 65535) {
            p.first_row = first * p.rows;
            const dim3 grid(unsigned((base.width + horizontal_tile - 1) / horizontal_tile),
                            unsigned(std::min(65535, block_rows - first)));
            kernel<<<grid, horizontal_threads, bytes, stream>>>(p);
            APRON_CUDA_CHECK_LAUNCH("morph_rect_horizontal");
        }
    }
    if (tmp.data) {
        void* data = tmp.data;
        tmp.data = nullptr;
        APRON_CUDA_CHECK(cudaFreeAsync(data, stream));
    }
}

} // namespace

std::size_t morph_rect_passes_smem(int channels, int se_width) {
    int rows = 0, pitch = 0;
    horizontal_shape(channels, se_width, rows, pitch);
    return horizontal_bytes(channels, rows, pitch);
}

void launch_morph_rect_passes(const MorphPlan& plan, ConstImageView in, ImageView out, int mode,
                              std::uint32_t outside, cudaStream_t stream) {
    if (in.empty()) return;
    const bool dilate = plan.step.kind == MorphKind::dilate;
    with_type(plan.type, [&]<class T>() {
        if (dilate) launch_passes<T, true>(plan, in, out, mode, outside, stream);
        else launch_passes<T, false>(plan, in, out, mode, outside, stream);
    });
}

} // namespace apron::cuda
