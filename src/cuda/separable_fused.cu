// Separable filters on the GPU: one fused kernel (row pass into shared memory, column pass out; the
// kernel: separable_fused_impl.cuh) for factors reaching up to 32 pixels from the anchor, and two passes
// through a device temporary beyond.
//
// Design and bounds (f32, one channel, 8192^2, radius R, factors of 2R+1 taps, H100/H200):
// - Memory: 4 bytes read + 4 written per pixel (8 B/px: 520 Gpix/s at 4.16 TB/s). The row pass reads
//   its windows through L1 (overlapping windows, so DRAM/L2 see each input sector about once; the 2R-row
//   vertical halo of a tile is re-read from L2, the next block row having just read it).
// - Tile: 64 pixels x 128 rows for one channel (32x128 for 2-3 channels, 16x128 for 4; 10 row groups
//   of 8 for 3 channels), 256 threads. Intermediate in shared memory as f32/int32:
//   (128 + 2R) rows x 64 px x 4 B = 34 KB (R = 3) .. 49 KB (R = 32); up to 4 blocks per SM (64 registers).
// - Work per output pixel: row pass (2R+1) FMAs x (128 + 2R)/128 (vertical halo), column pass 2R+1 FMAs.
//   Row-pass window loads: (4C + 2 HA)/4 16-byte loads per 4C outputs (HA = R*C rounded up to 4); column
//   pass: (8 + 2R) 16-byte shared loads per 32 outputs. Sigma 1 (R = 3): ~15 FMA/px, memory-bound.
//   Sigma 8 (R = 24): ~116 FMA/px, ~100 B/px of L1+shared traffic: FMA-bound near 33.4e12/116 = 290 Gpix/s
//   (even a halo-free kernel would need 98 FMA/px: 340 Gpix/s), so 80 % of the memory roofline is out of
//   reach there on FP32 FMA throughput; the target holds up to R ~ 12.
// - Exact plans: when the planner found every partial sum below 2^24 (accumulator f32), f32 FMAs of
//   integer weights and samples are exact and the float kernel serves; otherwise int32 (bound below 2^31),
//   else the plan is declined. finish_exact gives the bits of every other backend.
// - Radius buckets (compile-time unrolled; the list: instantiated_sizes.hpp): the factors are padded with zero
//   taps to the next bucket.
#include "cuda/separable_fused.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "apron/errors.hpp"
#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/linear_finish.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_view.hpp"
#include "cuda/separable_fused_impl.cuh"
#include "cuda/with_channels.hpp"
#include "cuda/with_size.hpp"

// The buckets (instantiated_sizes.hpp), instantiated per group and per channel count in files
// src/cuda/CMakeLists.txt generates: declared here, so this file instantiates none of them itself.
#include "instantiations/separable_fused_externs.inc"

namespace apron::cuda {

namespace {

// The two accumulators share the fused kernel's reach: the choice between it and two passes comes first.
constexpr int max_fused_radius = largest_size(separable_f32_radii);
static_assert(largest_size(separable_i32_radii) == max_fused_radius, "both accumulators fuse the same reach");

// Reach of the factors from the anchor: the bucket radius must cover both sides of both axes.
int reach(const LinearPlan& p) {
    const Mask& m = p.step.mask;
    return std::max({m.anchor_x, m.width - 1 - m.anchor_x, m.anchor_y, m.height - 1 - m.anchor_y});
}

bool int_accumulator(const LinearPlan& p) { return p.exact && p.accumulator != Accumulator::f32; }

// ---- two passes (reach beyond 32) ------------------------------------------------------------------
// Row pass: one sample per thread, the row factor in shared memory, input through L1.
template <class In, class Acc>
__global__ void __launch_bounds__(256) sep_row_pass(DeviceView in, Acc* tmp, std::size_t tmp_pitch, const Acc* wrow,
                                                    int mw, int ax, BorderMode mode, Acc outside, int row0) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Acc* w = reinterpret_cast<Acc*>(smem_raw);
    for (int i = threadIdx.x; i < mw; i += blockDim.x) w[i] = wrow[i];
    __syncthreads();
    const int C = in.channels, samples = in.width * C, y = row0 + int(blockIdx.y);
    const int s0 = blockIdx.x * blockDim.x, s = s0 + threadIdx.x;
    const int first = s0 / C, last = (min(samples, s0 + int(blockDim.x)) - 1) / C;  // pixels of the block
    const bool interior = first - ax >= 0 && last + (mw - 1 - ax) < in.width;
    if (s >= samples) return;
    const int x = s / C, c = s - x * C;
    const In* row = reinterpret_cast<const In*>(in.data + std::size_t(y) * in.pitch);
    Acc a = Acc(0);
    if (interior) {
        const In* src = row + std::size_t(x - ax) * C + c;
        for (int i = 0; i < mw; ++i) a = sep::fmaf_acc(w[i], sep::to_acc<Acc>(__ldg(src + std::size_t(i) * C)), a);
    } else {
        for (int i = 0; i < mw; ++i) {
            const int sx = map_index((long long)x + i - ax, in.width, mode);
            const Acc v = sx < 0 ? outside : sep::to_acc<Acc>(__ldg(row + std::size_t(sx) * C + c));
            a = sep::fmaf_acc(w[i], v, a);
        }
    }
    tmp[std::size_t(y) * tmp_pitch + s] = a;
}

// Column pass: one sample per thread, rows through map_index only in blocks near the top or bottom.
// A row outside the image in `constant` mode is the row pass of a constant row: `outside_row`.
template <class Acc>
__global__ void __launch_bounds__(256) sep_col_pass(const Acc* tmp, std::size_t tmp_pitch, int width, int height,
                                                    int C, const Acc* wcol, int mh, int ay, BorderMode mode,
                                                    Acc outside_row, std::byte* out, std::size_t out_pitch,
                                                    PixelType out_type, bool exact, LinearFinish finish, int row0) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Acc* w = reinterpret_cast<Acc*>(smem_raw);
    for (int i = threadIdx.x; i < mh; i += blockDim.x) w[i] = wcol[i];
    __syncthreads();
    const int samples = width * C, y = row0 + int(blockIdx.y), s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= samples) return;
    const bool interior = y - ay >= 0 && y + (mh - 1 - ay) < height;
    Acc a = Acc(0);
    if (interior) {
        const Acc* src = tmp + std::size_t(y - ay) * tmp_pitch + s;
        for (int j = 0; j < mh; ++j) a = sep::fmaf_acc(w[j], src[std::size_t(j) * tmp_pitch], a);
    } else {
        for (int j = 0; j < mh; ++j) {
            const int sy = map_index((long long)y + j - ay, height, mode);
            const Acc v = sy < 0 ? outside_row : tmp[std::size_t(sy) * tmp_pitch + s];
            a = sep::fmaf_acc(w[j], v, a);
        }
    }
    std::byte* row = out + std::size_t(y) * out_pitch;
    switch (out_type) {
    case PixelType::u8: reinterpret_cast<std::uint8_t*>(row)[s] = sep::finish_one<std::uint8_t>(a, exact, finish); break;
    case PixelType::u16: reinterpret_cast<std::uint16_t*>(row)[s] = sep::finish_one<std::uint16_t>(a, exact, finish); break;
    case PixelType::f32: reinterpret_cast<float*>(row)[s] = sep::finish_one<float>(a, exact, finish); break;
    }
}

template <class Acc>
void launch_two_pass(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream) {
    const Mask& m = p.step.mask;
    const int W = in.width(), H = in.height(), C = in.channels();
    std::vector<Acc> w;  // row factor, then column factor
    for (int i = 0; i < m.width; ++i)
        w.push_back(Acc(p.exact ? double(p.integer_separable->row[std::size_t(i)]) : p.separable->row[std::size_t(i)]));
    for (int j = 0; j < m.height; ++j)
        w.push_back(Acc(p.exact ? double(p.integer_separable->column[std::size_t(j)]) : p.separable->column[std::size_t(j)]));
    const std::size_t tmp_pitch = (std::size_t(W) * C + 63) / 64 * 64;  // elements: 256-byte rows
    const std::size_t weight_bytes = (w.size() * sizeof(Acc) + 255) / 256 * 256;
    void* raw = nullptr;
    const cudaError_t e = cudaMallocAsync(&raw, weight_bytes + tmp_pitch * std::size_t(H) * sizeof(Acc), stream);
    if (e != cudaSuccess) {
        cudaGetLastError();
        throw Error(std::string("cuda: out of device memory for the separable intermediate (") + cudaGetErrorString(e) + ")");
    }
    auto* weights = static_cast<Acc*>(raw);
    Acc* tmp = reinterpret_cast<Acc*>(static_cast<unsigned char*>(raw) + weight_bytes);
    // Pageable source: staged before the call returns, so `w` may go away afterwards.
    APRON_CUDA_CHECK(cudaMemcpyAsync(weights, w.data(), w.size() * sizeof(Acc), cudaMemcpyHostToDevice, stream));

    const dim3 block(256);
    auto grid = [&](int y0) { return dim3(unsigned((W * C + 255) / 256), unsigned(std::min(65535, H - y0))); };
    Acc outside = Acc(0), row_sum = Acc(0);
    with_type(p.in, [&]<class In>() {
        outside = Acc(store_pixel<In>(p.step.border_value));
        if constexpr (std::is_same_v<Acc, int> && std::is_same_v<In, float>) {
            throw Error("separable two-pass: integer accumulation of f32 input");
        } else {
            for (int y0 = 0; y0 < H; y0 += 65535)
                sep_row_pass<In, Acc><<<grid(y0), block, sizeof(Acc) * std::size_t(m.width), stream>>>(
                    device_view(in), tmp, tmp_pitch, weights, m.width, m.anchor_x, p.step.border, outside, y0);
        }
    });
    APRON_CUDA_CHECK_LAUNCH("separable row pass");
    for (int i = 0; i < m.width; ++i) row_sum = Acc(row_sum + w[std::size_t(i)] * outside);
    for (int y0 = 0; y0 < H; y0 += 65535)
        sep_col_pass<Acc><<<grid(y0), block, sizeof(Acc) * std::size_t(m.height), stream>>>(
            tmp, tmp_pitch, W, H, C, weights + m.width, m.height, m.anchor_y, p.step.border, row_sum, out.data,
            out.pitch, p.out, p.exact, p.finish, y0);
    APRON_CUDA_CHECK_LAUNCH("separable column pass");
    APRON_CUDA_CHECK(cudaFreeAsync(raw, stream));
}

// The smallest bucket that covers the reach R (at most max_fused_radius).
template <int C>
void launch_fused(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t s, int R) {
    const bool launched =
        int_accumulator(p)
            ? with_bucket<separable_i32_radii>(R, [&]<int B>() { launch_separable_fused_i32<B, C>(p, in, out, s); })
            : with_bucket<separable_f32_radii>(R, [&]<int B>() { launch_separable_fused_f32<B, C>(p, in, out, s); });
    if (!launched) throw Error("separable_fused: no radius bucket reaches " + std::to_string(R));
}

} // namespace

bool separable_fused_supports(const LinearPlan& p) {
    if (p.algorithm != LinearAlgorithm::separable) return false;
    if (p.exact) {
        if (!p.integer_separable || !is_integer(p.in)) return false;
        if (p.accumulator == Accumulator::f32) return true;  // every partial sum below 2^24: exact in f32
        // int32: every partial sum is bounded by max |sample| * sum |row| * sum |column| = the planner's bound.
        return double(p.integer_mask.abs_sum) * type_max(p.in) < 2147483648.0;
    }
    return p.separable.has_value();
}

void launch_separable_fused(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream) {
    if (!separable_fused_supports(p)) throw Error("separable_fused: unsupported plan");
    if (in.empty()) return;
    const int R = reach(p);
    if (R > max_fused_radius && in.shape.depth > 1) {  // the two passes take one plane at a time
        for (int z = 0; z < in.shape.depth; ++z) launch_separable_fused(p, in.plane(z), out.plane(z), stream);
        return;
    }
    if (R <= max_fused_radius)
        return with_channels(in.channels(), [&]<int C>() { launch_fused<C>(p, in, out, stream, R); });
    if (int_accumulator(p)) launch_two_pass<int>(p, in, out, stream);
    else launch_two_pass<float>(p, in, out, stream);
}

} // namespace apron::cuda
