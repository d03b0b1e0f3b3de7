#pragma once
// Extremum operators and running-window helpers shared by the rectangle morphology kernels
// (morph_rect.cu, morph_rect_fast.cuh, morph_rect_passes.cu), among them the one van Herk / Gil-Werman
// segment. Words are 32 bits: f32 one sample (FMNMX), u16 and widened u8 two samples (VIMNMX.U16x2). See
// morph_rect.cu for the design and the costs.
#include <cstdint>
#include <type_traits>

#include "core/morph_value.hpp"

namespace apron::cuda::morph {

using u32 = std::uint32_t;

// ---- extremum of packed words ----------------------------------------------------------------------
struct MaxU16 {
    static __device__ __forceinline__ u32 op(u32 a, u32 b) { return __vmaxu2(a, b); }
    static __device__ __forceinline__ u32 op3(u32 a, u32 b, u32 c) { return __vimax3_u16x2(a, b, c); }
};
struct MinU16 {
    static __device__ __forceinline__ u32 op(u32 a, u32 b) { return __vminu2(a, b); }
    static __device__ __forceinline__ u32 op3(u32 a, u32 b, u32 c) { return __vimin3_u16x2(a, b, c); }
};
// f32: the SPEC's NaN-skipping fmaxf / fminf (core/morph_value.hpp), one FMNMX each.
struct MaxF32 {
    static __device__ __forceinline__ u32 op(u32 a, u32 b) {
        return __float_as_uint(morph_pick(true, __uint_as_float(a), __uint_as_float(b)));
    }
    static __device__ __forceinline__ u32 op3(u32 a, u32 b, u32 c) { return op(op(a, b), c); }
};
struct MinF32 {
    static __device__ __forceinline__ u32 op(u32 a, u32 b) {
        return __float_as_uint(morph_pick(false, __uint_as_float(a), __uint_as_float(b)));
    }
    static __device__ __forceinline__ u32 op3(u32 a, u32 b, u32 c) { return op(op(a, b), c); }
};

template <class T, bool Dilate>
using OpFor = std::conditional_t<std::is_same_v<T, float>, std::conditional_t<Dilate, MaxF32, MinF32>,
                                 std::conditional_t<Dilate, MaxU16, MinU16>>;

constexpr int floor_log2_c(int v) { return v <= 1 ? 0 : 1 + floor_log2_c(v / 2); }

// Doubling, level by level at compile time: on return v[i] is the extremum of the P samples from i, for
// i <= N - P. Ascending i reads v[i + h] before it is overwritten.
template <int N, int H, int P, class Op>
__device__ __forceinline__ void double_levels(u32 (&v)[N]) {
    if constexpr (H < P) {
#pragma unroll
        for (int i = 0; i + 2 * H <= N; ++i) v[i] = Op::op(v[i], v[i + H]);
        double_levels<N, 2 * H, P, Op>(v);
    }
}

// o[t] = ext_{j < K} b[(t + j) * s], K known at compile time (K < R): doubling in registers.
template <int R, int K, class Op>
__device__ __forceinline__ void window_small(const u32* b, int s, u32 (&o)[R]) {
    constexpr int N = R + K - 1;
    u32 v[N];
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = b[i * s];
    constexpr int P = 1 << floor_log2_c(K);
    double_levels<N, 1, P, Op>(v);
#pragma unroll
    for (int t = 0; t < R; ++t) o[t] = K == P ? v[t] : Op::op(v[t], v[t + K - P]);
}

template <int R, int K, class Op>
__device__ __forceinline__ void window_small_dispatch(const u32* b, int s, int k, u32 (&o)[R]) {
    if (k == K) return window_small<R, K, Op>(b, s, o);
    if constexpr (K + 1 < R) window_small_dispatch<R, K + 1, Op>(b, s, k, o);
}

// Words of a staged row or column, s apart (the channel stride or the tile pitch): the accessor of the
// kernels whose windows run over shared memory.
struct StridedWords {
    const u32* b;
    int s;
    __device__ __forceinline__ u32 operator()(int j) const { return b[j * s]; }
    __device__ __forceinline__ StridedWords down(int n) const { return {b + n * s, s}; }
};

// The van Herk / Gil-Werman segment, one copy for every rectangle kernel: o[t] = ext_{j < k} ld(t + j) for
// t < R, k >= R. The R windows share rows R-1 .. k-1; each adds a suffix of rows t .. R-2 and a prefix of
// rows k .. k+t-1: k + 3R ops and k + R - 1 reads for R outputs. The kernels differ only in what these
// parameters say:
//  - Ld: ld(j) is row j of the thread's segment (StridedWords over shared memory; the passes' and the fast
//    kernel's loaders read global memory, with or without the border rule);
//  - V: a u32 word, or the fast kernel's Pair of words (Op then works on both);
//  - CoreUnroll: the unroll of the shared core loop, as each kernel was measured with: 4 in the passes (sides
//    past 64, long cores), 2 in the fused and fast kernels (sides up to 64).
// Each kernel compiles to the registers, stack and spills of its former copy (docs/perf-notes.md, issue 27).
template <int R, int CoreUnroll, class Op, class Ld, class V>
__device__ __forceinline__ void van_herk_segment(const Ld& ld, int k, V (&o)[R]) {
    o[R - 2] = ld(R - 2);
#pragma unroll
    for (int t = R - 3; t >= 0; --t) o[t] = Op::op(ld(t), o[t + 1]);
    V c = ld(R - 1);
    int j = R;
#pragma unroll CoreUnroll
    for (; j + 1 < k; j += 2) c = Op::op3(c, ld(j), ld(j + 1));  // one VIMNMX3 per two rows
    if (j < k) c = Op::op(c, ld(j));
    o[0] = Op::op(o[0], c);
    V q = ld(k);
#pragma unroll
    for (int t = 1; t < R - 1; ++t) {
        if (t > 1) q = Op::op(q, ld(k + t - 1));
        o[t] = Op::op3(o[t], c, q);
    }
    o[R - 1] = Op::op3(c, q, ld(k + R - 2));
}

// Reads rows 0 .. R + k - 2 of b (stride s words).
template <int R, class Op>
__device__ __forceinline__ void window(const u32* b, int s, int k, u32 (&o)[R]) {
    static_assert(R >= 8 && (R & (R - 1)) == 0);
    if (k >= R) return van_herk_segment<R, 2, Op>(StridedWords{b, s}, k, o);
    if constexpr (R > 8) {
        u32 lo[R / 2], hi[R / 2];
        window<R / 2, Op>(b, s, k, lo);
        window<R / 2, Op>(b + (R / 2) * s, s, k, hi);
#pragma unroll
        for (int t = 0; t < R / 2; ++t) o[t] = lo[t], o[R / 2 + t] = hi[t];
    } else {
        window_small_dispatch<R, 1, Op>(b, s, k, o);
    }
}

} // namespace apron::cuda::morph
