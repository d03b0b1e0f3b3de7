// Direct 2D correlation of u8 images with small masks through the byte dot-product instructions, in two
// forms of one kernel:
//  - exact plans (integer weights in [-128, 127]): IDP.4A multiplies four bytes of the window by four
//    weights and adds them to a 32-bit integer in one issue slot, where the float kernels spend four FFMAs
//    and convert every sample. The sum is the exact integer sum, so finish_exact32 gives the same bits as
//    every other backend. Pixels are offset by -128 (one XOR per word) so that signed x signed __dp4a
//    applies; the offset returns as the constant 128 * sum(weights) the accumulators start from.
//  - float plans (fixed point, core/fixed_point.hpp): IDP.2A multiplies two bytes by two 16-bit weights
//    (signed weights, unsigned bytes), two instructions per 4 taps; the accumulators start at the rounding
//    bias and the finish is one arithmetic shift and a clamp. The weights are the float weights rounded to
//    2^-shift, taken only where the proven error bound keeps the result within SPEC's one unit; the plan
//    names the shift and the bound.
//
// A thread owns RX = 8 outputs x RY rows, with no shared memory and no barrier (as direct_regs_impl.cuh):
// for each input row of its window it loads the bytes x-4 .. x+RX+3 as RX/4 + 2 aligned words, builds
// the shifted 4-byte windows it needs with one PRMT each (those starting on a word boundary are the
// words themselves), and every output row that meets the input row adds its dot products.
//
// Cost (3x3, per 32 outputs of a thread): 6 rows x (3 LDG + 3 LOP + 6 PRMT) + 96 IDP.4A (192 IDP.2A) + the
// finish, against 288 FFMA + 120 conversions in the float register kernel.
#include "core/overrides.hpp"
#include "cuda/direct_dp4a.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>
#include <type_traits>

#include "apron/errors.hpp"
#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/fixed_point.hpp"
#include "core/linear_finish.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_view.hpp"

namespace apron::cuda {
namespace {

constexpr int block_x = 32, block_y = 8, rx = 8, ry = 4;
constexpr int max_k = 9;

// The exact form: IDP.4A on pixels offset by -128.
template <int K>
struct PackedWeights {
    int w[K][(K + 3) / 4];  // row j, taps 4s .. 4s+3 as signed bytes (zero past K)
    int bias;               // 128 * sum of weights: undoes the -128 offset of every pixel
};

struct ExactDot {
    template <int K>
    using Weights = PackedWeights<K>;
    static constexpr unsigned flip = 0x80808080u;  // pixel - 128 as a signed byte
    template <int K>
    static __device__ __forceinline__ int dot(int acc, int win, const Weights<K>& w, int j, int s) {
        return __dp4a(win, w.w[j][s], acc);
    }
};

// The fixed-point form: IDP.2A, signed 16-bit weights times unsigned bytes.
template <int K>
struct PairWeights {
    unsigned lo[K][(K + 3) / 4];  // row j, taps 4s and 4s+1 as 16-bit halves
    unsigned hi[K][(K + 3) / 4];  // taps 4s+2 and 4s+3 (zero past K)
    int bias;                     // round(offset * 2^shift) + 2^(shift-1)
    int shift;
};

__device__ __forceinline__ int dp2a_lo(unsigned w, int b, int c) {
    int d;
    asm("dp2a.lo.s32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(w), "r"(b), "r"(c));
    return d;
}
__device__ __forceinline__ int dp2a_hi(unsigned w, int b, int c) {
    int d;
    asm("dp2a.hi.s32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(w), "r"(b), "r"(c));
    return d;
}

struct FixedDot {
    template <int K>
    using Weights = PairWeights<K>;
    static constexpr unsigned flip = 0;
    template <int K>
    static __device__ __forceinline__ int dot(int acc, int win, const Weights<K>& w, int j, int s) {
        acc = dp2a_lo(w.lo[j][s], win, acc);
        return 4 * s + 2 < K ? dp2a_hi(w.hi[j][s], win, acc) : acc;  // folded after unrolling
    }
};

// Bytes b .. b+3 of the stream held in words v[] (b >= 0). Called with b known after unrolling, so the
// word index and the PRMT selector are constants (and the aligned case is a plain register).
template <int N>
__device__ __forceinline__ int window(const unsigned (&v)[N], int b) {
    const int m = b / 4, r = b % 4;
    if (r == 0) return int(v[m]);
    return int(__byte_perm(v[m], v[m + 1], r | (r + 1) << 4 | (r + 2) << 8 | (r + 3) << 12));
}

// Eight outputs of one row, finished by the 32-bit form (u8 / u16 outputs of plans that fit it): one 8-byte
// store for u8 when all exist and the row allows it, else scalars.
template <class Out>
__device__ __forceinline__ void store8(std::byte* out, std::size_t pitch, int y, int x, int width, const int (&acc)[rx],
                                       bool vec, const LinearFinish& f) {
    Out* row = reinterpret_cast<Out*>(out + std::size_t(y) * pitch) + x;
    Out v[rx];
#pragma unroll
    for (int q = 0; q < rx; ++q) v[q] = finish_exact32_fitting<Out>(acc[q], f);
    if constexpr (sizeof(Out) == 1) {
        if (vec && x + rx <= width) {
            const unsigned lo = unsigned(v[0]) | unsigned(v[1]) << 8 | unsigned(v[2]) << 16 | unsigned(v[3]) << 24;
            const unsigned hi = unsigned(v[4]) | unsigned(v[5]) << 8 | unsigned(v[6]) << 16 | unsigned(v[7]) << 24;
            *reinterpret_cast<uint2*>(row) = make_uint2(lo, hi);
            return;
        }
    }
    for (int q = 0; q < rx && x + q < width; ++q) row[q] = v[q];
}

// The u8 / u16 finishes that need the 64-bit or double form: one output at a time, in a loop that is not
// unrolled (rare plans; inline, their code would take the instruction cache from the common ones).
template <class Out>
__device__ __noinline__ void store_long(std::byte* out, std::size_t pitch, int y0, int x, int width, int row_end,
                                        const int* acc, const LinearFinish& f) {
#pragma unroll 1
    for (int i = 0; i < ry * rx; ++i) {
        const int y = y0 + i / rx, xq = x + i % rx;
        if (y < row_end && xq < width)
            reinterpret_cast<Out*>(out + std::size_t(y) * pitch)[xq] = finish_exact<Out>(std::int64_t(acc[i]), f);
    }
}

// One kernel per mask size and output type: each holds the finish of its own type only (three types inlined
// in one kernel made it several times larger than its arithmetic, and its warps waited on instruction fetch:
// ncu, 3x3, a third of the stall cycles).
template <int K, class Out, class Dot>
__global__ void __launch_bounds__(block_x* block_y, 4)
    direct_dot(DeviceView in, std::byte* out, std::size_t out_pitch,
               const __grid_constant__ typename Dot::template Weights<K> w, BorderMode mode, int outside,
               LinearFinish finish, bool out_vec, bool in_aligned, int row_begin, int row_end) {
    constexpr int R = K / 2, S = (K + 3) / 4, NW = rx / 4 + 2;
    const int x = (blockIdx.x * block_x + threadIdx.x) * rx;               // first output column
    const int y0 = row_begin + (blockIdx.y * block_y + threadIdx.y) * ry;  // first output row
    const int bx0 = blockIdx.x * block_x * rx, by0 = row_begin + blockIdx.y * block_y * ry;
    // An input view whose rows are not 4-byte aligned (an ROI) runs every block as a border block with no
    // whole words: every byte through the column map, the same sums (and bits) as an aligned view.
    const bool interior = in_aligned && bx0 - 4 >= 0 && bx0 + block_x * rx + 4 <= in.width && by0 - R >= 0 &&
                          by0 + block_y * ry + R <= in.height;
    // Border blocks: the block's column map (stream byte b of thread t at colmap[t * rx + b]), made once in
    // shared memory so that the words reaching past the row's ends (the first and last threads of a row)
    // map their bytes without holding a map in registers (in registers it spilled).
    __shared__ int colmap[block_x * rx + 8];
    if (!interior) {
        for (int i = threadIdx.y * block_x + threadIdx.x; i < block_x * rx + 8; i += block_x * block_y)
            colmap[i] = map_index(bx0 - 4 + i, in.width, mode);
        __syncthreads();
    }
    if (x >= in.width || y0 >= row_end) return;

    int acc[ry][rx];
#pragma unroll
    for (int r = 0; r < ry; ++r)
#pragma unroll
        for (int q = 0; q < rx; ++q) acc[r][q] = w.bias;

    // Each input row of the window (t = 0 .. ry + K - 2) as NW words, bytes x-4 .. x+rx+3 (exact: offset by -128),
    // meets the mask rows of the outputs it reaches. Interior and border blocks run separate copies of the
    // unrolled loop, so the border's column map lives only in its own copy.
    const auto accumulate = [&](auto&& load_row) {
#pragma unroll
        for (int t = 0; t < ry + K - 1; ++t) {
            unsigned v[NW];
            load_row(y0 - R + t, v);
            // Window o (output q, taps 4s .. 4s+3: o = q + 4s) starts at stream byte 4 - R + o; each is built
            // once per input row and serves every output row that meets it.
            int win[rx + 4 * (S - 1)];
#pragma unroll
            for (int o = 0; o < rx + 4 * (S - 1); ++o) win[o] = window(v, 4 - R + o);
#pragma unroll
            for (int r = 0; r < ry; ++r) {
                const int j = t - r;
                if (j < 0 || j >= K) continue;
#pragma unroll
                for (int s = 0; s < S; ++s)
#pragma unroll
                    for (int q = 0; q < rx; ++q) acc[r][q] = Dot::template dot<K>(acc[r][q], win[q + 4 * s], w, j, s);
            }
        }
    };
    if (interior) {
        accumulate([&](int gy, unsigned* v) {
            const unsigned* row = reinterpret_cast<const unsigned*>(in.data + std::size_t(gy) * in.pitch) + x / 4;
#pragma unroll
            for (int m = 0; m < NW; ++m) v[m] = __ldg(row - 1 + m) ^ Dot::flip;
        });
    } else {
        // Border blocks: the row is mapped once per row; a word wholly inside the row is one load, as inside
        // (every word of every thread but the first and last of a row); only the others read the column
        // map. Before, every byte of every row went through map_index, and the 1/16 of blocks on the left
        // and right edges took longer than the rest of the image.
        bool whole[NW];
#pragma unroll
        for (int m = 0; m < NW; ++m) whole[m] = in_aligned && x - 4 + 4 * m >= 0 && x + 4 * m <= in.width;
        accumulate([&](int gy, unsigned* v) {
            const int sy = map_index(gy, in.height, mode);
            const unsigned char* row = reinterpret_cast<const unsigned char*>(in.data + std::size_t(sy < 0 ? 0 : sy) * in.pitch);
#pragma unroll
            for (int m = 0; m < NW; ++m) {
                unsigned word = 0;
                if (sy < 0) {
                    word = unsigned(outside) * 0x01010101u;
                } else if (whole[m]) {
                    word = __ldg(reinterpret_cast<const unsigned*>(row + x - 4 + 4 * m));
                } else {
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int b = 4 * m + e;  // stream byte: column x - 4 + b
                        if (b < 4 - R || b >= 4 + rx + R) continue;  // outside every window
                        const int sx = colmap[threadIdx.x * rx + b];
                        word |= (sx < 0 ? unsigned(outside) : unsigned(__ldg(row + sx))) << (8 * e);
                    }
                }
                v[m] = word ^ Dot::flip;
            }
        });
    }
    if constexpr (std::is_same_v<Dot, FixedDot>) {
        // (sum + bias) >> shift, clamped: floor(v' + 1/2) of core/fixed_point.hpp.
        constexpr int hi = int(PixelTraits<Out>::max);
#pragma unroll
        for (int r = 0; r < ry; ++r) {
            const int y = y0 + r;
            if (y >= row_end) break;
            Out* row = reinterpret_cast<Out*>(out + std::size_t(y) * out_pitch) + x;
            Out v[rx];
#pragma unroll
            for (int q = 0; q < rx; ++q) v[q] = Out(min(max(acc[r][q] >> w.shift, 0), hi));
            if constexpr (sizeof(Out) == 1) {
                if (out_vec && x + rx <= in.width) {
                    *reinterpret_cast<uint2*>(row) =
                        make_uint2(__byte_perm(__byte_perm(v[0], v[1], 0x0040), __byte_perm(v[2], v[3], 0x0040), 0x5410),
                                   __byte_perm(__byte_perm(v[4], v[5], 0x0040), __byte_perm(v[6], v[7], 0x0040), 0x5410));
                    continue;
                }
            }
#pragma unroll
            for (int q = 0; q < rx; ++q)
                if (x + q < in.width) row[q] = v[q];
        }
    } else if constexpr (std::is_same_v<Out, float>) {
        // Into f32: a sum over a power of two plus an integral delta (Sobel) in one FMA, else the double form,
        // inline (out of line it measured 21 % slower).
        const bool is_sum = finish_is_scaled_sum(finish);
#pragma unroll
        for (int r = 0; r < ry; ++r) {
            const int y = y0 + r;
            if (y >= row_end) break;
            float* row = reinterpret_cast<float*>(out + std::size_t(y) * out_pitch) + x;
#pragma unroll
            for (int q = 0; q < rx; ++q)
                if (x + q < in.width)
                    row[q] = is_sum ? finish_scaled_sum(float(acc[r][q]), finish) : finish_exact<float>(acc[r][q], finish);
        }
    } else {
        if (finish.fits_int32) {
#pragma unroll
            for (int r = 0; r < ry; ++r) {
                const int y = y0 + r;
                if (y >= row_end) break;
                store8<Out>(out, out_pitch, y, x, in.width, acc[r], out_vec, finish);
            }
            return;
        }
        int flat[ry * rx];
#pragma unroll
        for (int r = 0; r < ry; ++r)
#pragma unroll
            for (int q = 0; q < rx; ++q) flat[r * rx + q] = acc[r][q];
        store_long<Out>(out, out_pitch, y0, x, in.width, row_end, flat, finish);
    }
}

template <int K>
PackedWeights<K> pack(const LinearPlan& p) {
    PackedWeights<K> w{};
    long long sum = 0;
    for (int j = 0; j < K; ++j)
        for (int i = 0; i < K; ++i) {
            const long long v = p.integer_mask.weights[std::size_t(j) * K + i];
            sum += v;
            w.w[j][i / 4] |= int(unsigned(v & 0xFF) << (8 * (i % 4)));
        }
    w.bias = int(128 * sum);
    return w;
}

template <int K>
void launch_k(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream, int row_begin, int row_end) {
    const int outside = int(store_pixel<std::uint8_t>(p.step.border_value));
    // 8-byte stores of 8 u8 outputs: the view's rows must start 8-byte aligned (an ROI may start anywhere).
    const bool out_vec = reinterpret_cast<std::uintptr_t>(out.data) % 8 == 0 && out.pitch % 8 == 0;
    const dim3 block(block_x, block_y);
    const dim3 grid(unsigned((in.width() + block_x * rx - 1) / (block_x * rx)),
                    unsigned((row_end - row_begin + block_y * ry - 1) / (block_y * ry)));
    with_type(p.out, [&]<class Out>() {
        direct_dot<K, Out, ExactDot><<<grid, block, 0, stream>>>(device_view(in), out.data, out.pitch, pack<K>(p),
                                                                 p.step.border, outside, p.finish, out_vec, true,
                                                                 row_begin, row_end);
    });
    APRON_CUDA_CHECK_LAUNCH("direct_dp4a");
}

// The fixed-point form's weights (IDP.2A pairs), shift and bias.
template <int K>
PairWeights<K> pack_pairs(const FixedPointMask& f) {
    PairWeights<K> w{};
    for (int j = 0; j < K; ++j)
        for (int i = 0; i < K; ++i) {
            const unsigned v = unsigned(f.q[std::size_t(j) * K + i]) & 0xFFFFu;
            unsigned& word = (i % 4) < 2 ? w.lo[j][i / 4] : w.hi[j][i / 4];
            word |= v << (16 * (i % 2));
        }
    w.bias = int(f.bias);
    w.shift = f.shift;
    return w;
}

template <int K>
void launch_fixed_k(const LinearPlan& p, const FixedPointMask& f, ConstImageView in, ImageView out,
                    cudaStream_t stream, int row_begin, int row_end) {
    const int outside = int(store_pixel<std::uint8_t>(p.step.border_value));
    const bool out_vec = reinterpret_cast<std::uintptr_t>(out.data) % 8 == 0 && out.pitch % 8 == 0;
    const dim3 block(block_x, block_y);
    const dim3 grid(unsigned((in.width() + block_x * rx - 1) / (block_x * rx)),
                    unsigned((row_end - row_begin + block_y * ry - 1) / (block_y * ry)));
    const PairWeights<K> w = pack_pairs<K>(f);
    const bool aligned = reinterpret_cast<std::uintptr_t>(in.data) % 4 == 0 && in.pitch % 4 == 0;
    if (p.out == PixelType::u8)
        direct_dot<K, std::uint8_t, FixedDot><<<grid, block, 0, stream>>>(device_view(in), out.data, out.pitch, w,
                                                                          p.step.border, outside, p.finish, out_vec,
                                                                          aligned, row_begin, row_end);
    else
        direct_dot<K, std::uint16_t, FixedDot><<<grid, block, 0, stream>>>(device_view(in), out.data, out.pitch, w,
                                                                           p.step.border, outside, p.finish, out_vec,
                                                                           aligned, row_begin, row_end);
    APRON_CUDA_CHECK_LAUNCH("direct_dp2a");
}

constexpr int max_fixed_k = 5;  // 7x7: 120 bytes of spills (ptxas), and the tiles run it at 330 Gpix/s already
constexpr double fixed_error_limit = 0.25;  // units of the output: well inside SPEC's one unit

bool disabled() { return overrides().dp4a_off; }

} // namespace

bool direct_dp4a_supports(const LinearPlan& p, ConstImageView in) {
    const Mask& m = p.step.mask;
    if (disabled() || !p.exact || p.in != PixelType::u8 || in.channels() != 1) return false;
    if (m.width != m.height || m.width % 2 == 0 || m.width < 3 || m.width > max_k || m.anchor_x != m.width / 2 ||
        m.anchor_y != m.height / 2)
        return false;
    // Word loads need 4-byte aligned input rows.
    if (reinterpret_cast<std::uintptr_t>(in.data) % 4 || in.pitch % 4) return false;
    std::int64_t abs_sum = 0;
    for (std::int64_t v : p.integer_mask.weights) {
        if (v < -128 || v > 127) return false;
        abs_sum += v < 0 ? -v : v;
    }
    // The sum and the offset bias stay inside int32: |sum| <= 255 * abs_sum, |bias| <= 128 * abs_sum.
    return abs_sum <= (std::int64_t(1) << 22);
}

void launch_direct_dp4a(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream, int row_begin,
                        int row_end) {
    if (row_end < 0) row_end = in.height();
    if (row_begin >= row_end) return;
    switch (p.step.mask.width) {
    case 3: return launch_k<3>(p, in, out, stream, row_begin, row_end);
    case 5: return launch_k<5>(p, in, out, stream, row_begin, row_end);
    case 7: return launch_k<7>(p, in, out, stream, row_begin, row_end);
    case 9: return launch_k<9>(p, in, out, stream, row_begin, row_end);
    default: throw Error("direct_dp4a: unsupported mask size");
    }
}

std::optional<FixedPointMask> direct_dp2a_form(const LinearPlan& p, ConstImageView in) {
    const Mask& m = p.step.mask;
    if (disabled() || p.exact || p.in != PixelType::u8 || in.channels() != 1) return std::nullopt;
    if (p.out != PixelType::u8 && p.out != PixelType::u16) return std::nullopt;
    if (p.accumulator != Accumulator::f32) return std::nullopt;
    if (m.width != m.height || m.width % 2 == 0 || m.width < 3 || m.width > max_fixed_k ||
        m.anchor_x != m.width / 2 || m.anchor_y != m.height / 2)
        return std::nullopt;
    // Any view: unaligned rows take the byte path (direct_dot), so the form and its bits do not depend on
    // where the caller's rows start.
    const std::vector<double> w(m.weights.begin(), m.weights.end());
    return fixed_point_mask(w, p.finish.mul, p.finish.add, 255, fixed_error_limit);
}

std::string fixed_point_detail(int k, const FixedPointMask& f) {
    char bound[32];
    std::snprintf(bound, sizeof bound, "%.3g", f.error_bound);
    return "k=" + std::to_string(k) + " fixed=2^-" + std::to_string(f.shift) + " error<=" + bound;
}

void launch_direct_dp2a(const LinearPlan& p, const FixedPointMask& f, ConstImageView in, ImageView out,
                        cudaStream_t stream, int row_begin, int row_end) {
    if (row_end < 0) row_end = in.height();
    if (row_begin >= row_end) return;
    switch (p.step.mask.width) {
    case 3: return launch_fixed_k<3>(p, f, in, out, stream, row_begin, row_end);
    case 5: return launch_fixed_k<5>(p, f, in, out, stream, row_begin, row_end);
    default: throw Error("direct_dp2a: unsupported mask size");
    }
}

} // namespace apron::cuda
