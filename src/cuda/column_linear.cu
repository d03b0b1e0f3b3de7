// The column kernel: out[y][s] = finish(sum_k w[k] * in[y + k - anchor][s]) for a mask one sample wide
// (SPEC.md "Volumes": a z step is such a column on the z view, whose rows are planes of W x H pixels).
//
// Why a kernel of its own: a z step streams the whole volume (a u16 Gaussian's z pass reads 4 bytes of f32
// and writes 2 per voxel) and needs no staging, no halo along x and no shared tile: each thread walks
// `column_rows` output rows of V adjacent samples, and the K input rows an output reads are the ones its
// previous output read, one row on: they come from L1, so DRAM sees each input sample about
// (column_rows + K - 1) / column_rows times. The run-time (NVRTC) kernel that took z steps before stages
// 2-D tiles with a halo along x that a column does not have.
//
// L1 holds those rows only if the SM's threads' K rows fit it: 2048 threads x V samples x K rows. The first
// version (V = 4 always: 288 KB for f32 at K = 9) missed L1 and read every row K times from L2: the u16
// Gaussian (2,2,1) took 1.78 ms against 1.65 through the run-time kernel (H200). V is now the widest of 4,
// 2, 1 whose rows fit `l1_budget`, and the kernel asks for the largest L1 (no shared memory carve-out). That
// made it worse (3.57 ms at V = 1 for f32 rows): each output's taps are a loop of loads whose addresses and
// sums depend on the previous tap, so a thread waits out one load latency a tap. Hence opt-in (APRON_COLUMN=1,
// the dispatch table's family `column`) until its taps are loaded ahead of their sums (a compacted tap list
// unrolled by 4-8, or a register window over the thread's rows); docs/perf-notes.md.
//
// Arithmetic: per output sample, the taps in order k = 0 .. K-1, zero taps skipped (0 x NaN stays out of the
// sum, as in every float kernel of this backend), one fmaf each, then finish_float; exact plans sum integer
// weights in 64 bits and finish_exact. Every view (aligned or not, whatever rows it starts at) gives the same
// bits: the sum of an output depends on the plan and the samples alone, so slabs equal the whole run.
#include "cuda/column_linear.hpp"

#include <algorithm>
#include <cstdint>

#include "apron/errors.hpp"
#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/linear_finish.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"

namespace apron::cuda {
namespace {

constexpr int column_threads = 256;
constexpr int column_rows = 16;    // output rows a thread walks (L1 reuse of the K - 1 rows they share)
constexpr int column_vector_max = 4;  // adjacent samples a thread makes, at most (one vector load a row)
constexpr std::size_t l1_budget = 96 * 1024;  // bytes of rows in flight an SM's L1 may keep (of ~200 KB)
constexpr int threads_per_sm = 2048;

struct ColumnParams {
    const std::byte* in;
    std::size_t in_pitch;
    std::byte* out;
    std::size_t out_pitch;
    int samples, height;   // samples a row (width x channels), rows
    int taps, anchor;      // K, the mask's anchor row
    BorderMode mode;
    float outside;         // the constant border's sample (as the input type stores it)
    long long outside_int;
    LinearFinish finish;
    float w[column_max_taps];
    long long wi[column_max_taps];
};

template <class In, int V>
struct Vec;
template <class In>
struct Vec<In, 1> {
    In v[1];
};
template <class In>
struct alignas(2 * sizeof(In)) Vec<In, 2> {
    In v[2];
};
template <class In>
struct alignas(4 * sizeof(In)) Vec<In, 4> {
    In v[4];
};

// Row `row` of the input as the border mode reads it: the row itself, its mapped source, or null (the
// constant border's value).
__device__ __forceinline__ const std::byte* source_row(const ColumnParams& p, int row) {
    if (row < 0 || row >= p.height) {
        row = map_index(row, p.height, p.mode);
        if (row < 0) return nullptr;
    }
    return p.in + std::size_t(row) * p.in_pitch;
}

// V samples from s on (one aligned vector load; the launcher checked the view's alignment).
template <class In, int V>
__device__ __forceinline__ Vec<In, V> load_samples(const std::byte* row, int s) {
    return *reinterpret_cast<const Vec<In, V>*>(reinterpret_cast<const In*>(row) + s);
}

template <class In, class Out, bool Exact, int V>
__device__ __forceinline__ void column_outputs(const ColumnParams& p, const float* w, const long long* wi, int s, int y) {
    using Acc = std::conditional_t<Exact, long long, float>;
    Acc acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = 0;
    for (int k = 0; k < p.taps; ++k) {
        if (Exact ? wi[k] == 0 : w[k] == 0.0f) continue;  // uniform across the block
        const std::byte* row = source_row(p, y + k - p.anchor);
        Vec<In, V> x;
        if (row) {
            x = load_samples<In, V>(row, s);
        } else {
#pragma unroll
            for (int v = 0; v < V; ++v) x.v[v] = Exact ? In(p.outside_int) : In(p.outside);
        }
#pragma unroll
        for (int v = 0; v < V; ++v) {
            if constexpr (Exact) acc[v] += wi[k] * (long long)x.v[v];
            else acc[v] = fmaf(w[k], float(x.v[v]), acc[v]);
        }
    }
    Out* o = reinterpret_cast<Out*>(p.out + std::size_t(y) * p.out_pitch) + s;
#pragma unroll
    for (int v = 0; v < V; ++v) {
        if constexpr (Exact) o[v] = finish_exact<Out>(acc[v], p.finish);
        else o[v] = finish_float<Out, float>(acc[v], p.finish);
    }
}

// V > 1: the launcher checked that rows and both views are aligned to V samples; the row's last samples
// (fewer than V) take the scalar form.
template <class In, class Out, bool Exact, int V>
__global__ void __launch_bounds__(column_threads) column_kernel(const ColumnParams p) {
    __shared__ float w[column_max_taps];
    __shared__ long long wi[column_max_taps];
    for (int k = threadIdx.x; k < p.taps; k += column_threads) {
        if constexpr (Exact) wi[k] = p.wi[k];
        else w[k] = p.w[k];
    }
    __syncthreads();
    const int s = (int(blockIdx.x) * column_threads + int(threadIdx.x)) * V;
    if (s >= p.samples) return;
    const int y0 = int(blockIdx.y) * column_rows, y1 = min(y0 + column_rows, p.height);
    const bool whole = s + V <= p.samples;
    for (int y = y0; y < y1; ++y) {
        if (whole) {
            column_outputs<In, Out, Exact, V>(p, w, wi, s, y);
        } else {
            for (int q = s; q < min(s + V, p.samples); ++q) column_outputs<In, Out, Exact, 1>(p, w, wi, q, y);
        }
    }
}

bool aligned_to(const void* data, std::size_t pitch, std::size_t bytes) {
    return reinterpret_cast<std::uintptr_t>(data) % bytes == 0 && pitch % bytes == 0;
}

} // namespace

bool column_linear_supports(const LinearPlan& plan) {
    const Mask& m = plan.step.mask;
    return m.width == 1 && m.height >= 2 && m.height <= column_max_taps &&
           (!plan.exact || plan.integer_mask.weights.size() == m.weights.size());
}

void launch_column_linear(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream) {
    if (in.empty()) return;
    if (!column_linear_supports(plan)) throw Error("column_linear: the plan's mask is not a column of 2-64 taps");
    const Mask& m = plan.step.mask;
    ColumnParams p{};
    p.in = in.data;
    p.in_pitch = in.pitch;
    p.out = out.data;
    p.out_pitch = out.pitch;
    p.samples = in.width() * in.channels();
    p.height = in.height();
    p.taps = m.height;
    p.anchor = m.anchor_y;
    p.mode = plan.step.border;
    p.finish = plan.finish;
    for (int k = 0; k < m.height; ++k) {
        p.w[k] = float(m.weights[std::size_t(k)]);
        if (plan.exact) p.wi[k] = (long long)plan.integer_mask.weights[std::size_t(k)];
    }
    if ((p.height + column_rows - 1) / column_rows > 65535) throw Error("column_linear: more than 1048560 rows");
    with_type(plan.in, [&]<class In>() {
        const In outside = store_pixel<In>(plan.step.border_value);
        p.outside = float(outside);
        p.outside_int = (long long)outside;
        with_type(plan.out, [&]<class Out>() {
            // The widest V whose rows in flight fit L1 and whose loads and stores the views align.
            int v = column_vector_max;
            while (v > 1 && (std::size_t(threads_per_sm) * v * sizeof(In) * std::size_t(m.height) > l1_budget ||
                             !aligned_to(in.data, in.pitch, v * sizeof(In)) || !aligned_to(out.data, out.pitch, v * sizeof(Out))))
                v /= 2;
            const dim3 grid(unsigned((p.samples + column_threads * v - 1) / (column_threads * v)),
                            unsigned((p.height + column_rows - 1) / column_rows));
            auto launch = [&](auto kernel) {
                static const bool most_l1 = [&] {  // once per kernel: the rows live in L1, not shared memory
                    cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 0);
                    return true;
                }();
                (void)most_l1;
                kernel<<<grid, column_threads, 0, stream>>>(p);
            };
            auto by_width = [&]<bool Exact>() {
                if (v == 4) launch(column_kernel<In, Out, Exact, 4>);
                else if (v == 2) launch(column_kernel<In, Out, Exact, 2>);
                else launch(column_kernel<In, Out, Exact, 1>);
            };
            if (plan.exact) {
                if constexpr (PixelTraits<In>::integer) by_width.template operator()<true>();
                else throw Error("column_linear: an exact plan on a float image");
            } else {
                by_width.template operator()<false>();
            }
        });
    });
    APRON_CUDA_CHECK_LAUNCH("column_linear");
}

} // namespace apron::cuda
