// Highway kernels of the linear (weighted sum) path: widening rows to the accumulator type, the tap
// loop, and the finish (normalise, round, saturate) into the output type. This file is compiled once
// per SIMD target by foreach_target.h; simd_kernels.hpp declares the dispatching entry points.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/simd_kernels.hpp"

// SSSE3 adds nothing over the SSE4 build for these kernels; skipping it saves compile time.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/simd_linear.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- widening ------------------------------------------------------------------------------------

template <class In, class F>
bool WidenT(const In* HWY_RESTRICT src, F* HWY_RESTRICT dst, std::size_t n) {
    const hn::ScalableTag<F> df;
    const std::size_t N = hn::Lanes(df);
    std::size_t s = 0;
    if constexpr (std::is_same_v<In, float>) {
        // v - v is 0 for finite v and NaN otherwise; the NaN survives the running sum.
        auto probe = hn::Zero(df);
        for (; s + N <= n; s += N) {
            hn::Vec<decltype(df)> v;
            if constexpr (std::is_same_v<F, float>) v = hn::LoadU(df, src + s);
            else v = hn::PromoteTo(df, hn::LoadU(hn::Rebind<float, decltype(df)>(), src + s));
            probe = hn::Add(probe, hn::Sub(v, v));
            hn::StoreU(v, df, dst + s);
        }
        bool finite = hn::AllTrue(df, hn::Eq(probe, probe));
        for (; s < n; ++s) {
            dst[s] = F(src[s]);
            finite = finite && std::isfinite(src[s]);
        }
        return finite;
    } else {
        for (; s + N <= n; s += N) {
            const hn::Rebind<In, decltype(df)> din;
            const hn::Rebind<std::int32_t, decltype(df)> di;
            if constexpr (std::is_same_v<F, float>)
                hn::StoreU(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(din, src + s))), df, dst + s);
            else  // u8/u16 -> i32 -> f64
                hn::StoreU(hn::PromoteTo(df, hn::PromoteTo(di, hn::LoadU(din, src + s))), df, dst + s);
        }
        for (; s < n; ++s) dst[s] = F(src[s]);
        return true;
    }
}

bool AllFinite(const float* HWY_RESTRICT p, std::size_t n) {
    const hn::ScalableTag<float> d;
    const std::size_t N = hn::Lanes(d);
    auto probe = hn::Zero(d);
    std::size_t s = 0;
    for (; s + N <= n; s += N) {
        const auto v = hn::LoadU(d, p + s);
        probe = hn::Add(probe, hn::Sub(v, v));
    }
    bool finite = hn::AllTrue(d, hn::Eq(probe, probe));
    for (; s < n; ++s) finite = finite && std::isfinite(p[s]);
    return finite;
}

template <class F>
bool WidenAny(PixelType t, const void* src, F* dst, std::size_t n) {
    switch (t) {
    case PixelType::u8: return WidenT(static_cast<const std::uint8_t*>(src), dst, n);
    case PixelType::u16: return WidenT(static_cast<const std::uint16_t*>(src), dst, n);
    case PixelType::f32: return WidenT(static_cast<const float*>(src), dst, n);
    }
    return true;
}
bool WidenF32(PixelType t, const void* src, float* dst, std::size_t n) { return WidenAny(t, src, dst, n); }
bool WidenF64(PixelType t, const void* src, double* dst, std::size_t n) { return WidenAny(t, src, dst, n); }

// ---- storing ---------------------------------------------------------------------------------------

// Final stores into the output: StoreU, or with kStream a non-temporal store (the caller checked
// that p is aligned to the stored vector).
template <bool kStream, class D>
HWY_INLINE void Put(D d, hn::Vec<D> v, hn::TFromD<D>* HWY_RESTRICT p) {
    if constexpr (kStream) hn::Stream(v, d, p);
    else hn::StoreU(v, d, p);
}

// store_pixel<Out>(float v) for a vector: !(v > 0) -> 0, then min(v, max), rint (half to even), narrow.
template <class Out, bool kStream = false, class D>
HWY_INLINE void StorePixels(D df, hn::Vec<D> v, Out* HWY_RESTRICT p) {
    if constexpr (std::is_same_v<Out, float>) {
        Put<kStream>(df, v, p);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    } else if constexpr (std::is_same_v<hn::Vec<D>, hn::Vec512<float>>) {
        // 5 instructions instead of Highway's generic 12: x86 max(v, 0) returns 0 for NaN (the
        // second operand), the value is then in [0, max] so the conversion cannot overflow, and
        // vpmovdb / vpmovdw narrow without saturation logic.
        const __m512 c = _mm512_min_ps(_mm512_max_ps(v.raw, _mm512_setzero_ps()),
                                       _mm512_set1_ps(float(PixelTraits<Out>::max)));
        const __m512i i = _mm512_cvtps_epi32(c);  // rounds half to even (MXCSR default)
        if constexpr (std::is_same_v<Out, std::uint8_t>) {
            const __m128i b = _mm512_cvtepi32_epi8(i);
            if constexpr (kStream) _mm_stream_si128(reinterpret_cast<__m128i*>(p), b);
            else _mm_storeu_si128(reinterpret_cast<__m128i*>(p), b);
        } else {
            const __m256i h = _mm512_cvtepi32_epi16(i);
            if constexpr (kStream) _mm256_stream_si256(reinterpret_cast<__m256i*>(p), h);
            else _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
        }
#endif
    } else {
        const hn::Rebind<Out, D> dout;
        v = hn::IfThenElseZero(hn::Gt(v, hn::Zero(df)), v);
        v = hn::Min(v, hn::Set(df, float(PixelTraits<Out>::max)));
        Put<kStream>(dout, hn::DemoteTo(dout, hn::NearestInt(v)), p);
    }
}

// store_pixel<Out>(double v) for a vector of doubles.
template <class Out, bool kStream = false, class D>
HWY_INLINE void StorePixels64(D dd, hn::Vec<D> v, Out* HWY_RESTRICT p) {
    const hn::Rebind<float, D> df;
    if constexpr (std::is_same_v<Out, float>) {
        Put<kStream>(df, hn::DemoteTo(df, v), p);
    } else {
        v = hn::IfThenElseZero(hn::Gt(v, hn::Zero(dd)), v);
        v = hn::Round(hn::Min(v, hn::Set(dd, PixelTraits<Out>::max)));
        StorePixels<Out, kStream>(df, hn::DemoteTo(df, v), p);  // integers <= 65535: exact in f32
    }
}

// Whether rows p of Out, written a vector of D at a time, can take non-temporal stores.
template <class D, class Out>
bool StreamAligned(D, const Out* p) {
    const std::size_t bytes = hn::Lanes(D()) * sizeof(Out);
    return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// Samples of an output row before its first 64-byte boundary (at most n): the kernels write those with
// ordinary stores and start their vectors at the boundary, so that no store splits a cache line and the
// rest can stream (NumPy's large arrays start 16 bytes past a line). Each sample is computed the same
// way wherever its vector starts, so the bits do not change. 0 where p is not aligned to its samples.
template <class Out>
std::size_t HeadSamples(const Out* p, std::size_t n) {
    const std::size_t bytes = (64 - reinterpret_cast<std::uintptr_t>(p) % 64) % 64;
    return bytes % sizeof(Out) ? 0 : std::min(n, bytes / sizeof(Out));
}

// ---- the tap loop --------------------------------------------------------------------------------

// K vectors of outputs stay in registers while every tap streams past: one broadcast weight, K loads
// and K FMAs per tap. K = 8 keeps two FMA pipes busy through their 4-cycle latency.
template <int K, class D, class F = hn::TFromD<D>>
HWY_INLINE void SumBlock(D d, const F* const* HWY_RESTRICT taps, const F* HWY_RESTRICT w, std::size_t count,
                         F* HWY_RESTRICT out, std::size_t s) {
    const std::size_t N = hn::Lanes(d);
    auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (std::size_t t = 0; t < count; ++t) {
        const F* HWY_RESTRICT p = taps[t] + s;
        const auto wt = hn::Set(d, w[t]);
        a0 = hn::MulAdd(wt, hn::LoadU(d, p), a0);
        if constexpr (K > 1) a1 = hn::MulAdd(wt, hn::LoadU(d, p + 1 * N), a1);
        if constexpr (K > 2) a2 = hn::MulAdd(wt, hn::LoadU(d, p + 2 * N), a2);
        if constexpr (K > 3) a3 = hn::MulAdd(wt, hn::LoadU(d, p + 3 * N), a3);
        if constexpr (K > 4) a4 = hn::MulAdd(wt, hn::LoadU(d, p + 4 * N), a4);
        if constexpr (K > 5) a5 = hn::MulAdd(wt, hn::LoadU(d, p + 5 * N), a5);
        if constexpr (K > 6) a6 = hn::MulAdd(wt, hn::LoadU(d, p + 6 * N), a6);
        if constexpr (K > 7) a7 = hn::MulAdd(wt, hn::LoadU(d, p + 7 * N), a7);
    }
    hn::StoreU(a0, d, out + s);
    if constexpr (K > 1) hn::StoreU(a1, d, out + s + 1 * N);
    if constexpr (K > 2) hn::StoreU(a2, d, out + s + 2 * N);
    if constexpr (K > 3) hn::StoreU(a3, d, out + s + 3 * N);
    if constexpr (K > 4) hn::StoreU(a4, d, out + s + 4 * N);
    if constexpr (K > 5) hn::StoreU(a5, d, out + s + 5 * N);
    if constexpr (K > 6) hn::StoreU(a6, d, out + s + 6 * N);
    if constexpr (K > 7) hn::StoreU(a7, d, out + s + 7 * N);
}

template <class F>
void WeightedSumT(const F* const* taps, const F* w, std::size_t count, F* out, std::size_t n) {
    const hn::ScalableTag<F> d;
    const std::size_t N = hn::Lanes(d);
    std::size_t s = 0;
    for (; s + 8 * N <= n; s += 8 * N) SumBlock<8>(d, taps, w, count, out, s);
    // The last 1..8 vectors in one block, so the short tail is not latency-bound (over-computes to N).
    switch ((n - s + N - 1) / N) {
    case 1: SumBlock<1>(d, taps, w, count, out, s); break;
    case 2: SumBlock<2>(d, taps, w, count, out, s); break;
    case 3: SumBlock<3>(d, taps, w, count, out, s); break;
    case 4: SumBlock<4>(d, taps, w, count, out, s); break;
    case 5: SumBlock<5>(d, taps, w, count, out, s); break;
    case 6: SumBlock<6>(d, taps, w, count, out, s); break;
    case 7: SumBlock<7>(d, taps, w, count, out, s); break;
    case 8: SumBlock<8>(d, taps, w, count, out, s); break;
    default: break;
    }
}
void WeightedSumF32(const float* const* taps, const float* w, std::size_t count, float* out, std::size_t n) {
    WeightedSumT(taps, w, count, out, n);
}
void WeightedSumF64(const double* const* taps, const double* w, std::size_t count, double* out, std::size_t n) {
    WeightedSumT(taps, w, count, out, n);
}

// R output rows at once: each loaded input vector feeds all R rows (with R weights), so a tap costs
// K loads and R broadcasts for R * K FMAs instead of K loads for K FMAs. On AVX-512 most loads of a
// shifted row straddle two cache lines and count twice, which made the one-row loop load-bound at
// about half the FMA peak; with R = 4 it is FMA-bound again. `sink(q, s, acc)` stores row q's vector
// at sample s.
//
// The entries of the first and last R - 1 ring rows reach only some rows of the group; each such ring
// row gets its own loop over a compile-time range of rows, so no zero products are formed and no
// test is made per entry (a runtime mask made GCC spill the accumulators between loops).
template <int Q0, int Q1, int R, int K, class D, class F, class V>
HWY_INLINE void SumEntries(D d, const GroupArgs<F>& g, std::size_t t0, std::size_t t1, std::size_t s, V (&acc)[R][K]) {
    const std::size_t N = hn::Lanes(d);
    for (std::size_t t = t0; t < t1; ++t) {
        const F* HWY_RESTRICT p = g.taps[t] + s;
        V v[K];
        for (int k = 0; k < K; ++k) v[k] = hn::LoadU(d, p + std::size_t(k) * N);
        for (int q = Q0; q <= Q1; ++q) {
            const V wq = hn::Set(d, g.w[t * R + std::size_t(q)]);
            for (int k = 0; k < K; ++k) acc[q][k] = hn::MulAdd(wq, v[k], acc[q][k]);
        }
    }
}

template <int R, int K, class D, class Sink, class F = hn::TFromD<D>>
HWY_INLINE void SumRowsBlock(D d, const GroupArgs<F>& g, std::size_t s, Sink& sink) {
    using V = hn::Vec<D>;
    V acc[R][K];
    for (int q = 0; q < R; ++q)
        for (int k = 0; k < K; ++k) acc[q][k] = hn::Zero(d);
    const std::size_t* b = g.bounds;
    // Top edge: ring row r < R - 1 reaches rows 0..r.
    if constexpr (R > 1) SumEntries<0, 0>(d, g, b[0], b[1], s, acc);
    if constexpr (R > 2) SumEntries<0, 1>(d, g, b[1], b[2], s, acc);
    if constexpr (R > 3) SumEntries<0, 2>(d, g, b[2], b[3], s, acc);
    SumEntries<0, R - 1>(d, g, b[R - 1], b[R], s, acc);
    // Bottom edge: ring row mh + i reaches rows i + 1..R - 1.
    if constexpr (R > 1) SumEntries<1, R - 1>(d, g, b[R], b[R + 1], s, acc);
    if constexpr (R > 2) SumEntries<2, R - 1>(d, g, b[R + 1], b[R + 2], s, acc);
    if constexpr (R > 3) SumEntries<3, R - 1>(d, g, b[R + 2], b[R + 3], s, acc);
    const std::size_t N = hn::Lanes(d);
    for (int q = 0; q < R; ++q)
        for (int k = 0; k < K; ++k) sink(q, s + std::size_t(k) * N, acc[q][k]);
}

// Samples [s0, n).
template <int R, int K, class F, class Sink>
void SumRowsT(const GroupArgs<F>& g, std::size_t s0, std::size_t n, Sink& sink) {
    const hn::ScalableTag<F> d;
    const std::size_t N = hn::Lanes(d);
    std::size_t s = s0;
    for (; s + K * N <= n; s += K * N) SumRowsBlock<R, K>(d, g, s, sink);
    for (; s < n; s += N) SumRowsBlock<R, 1>(d, g, s, sink);  // R chains: not latency-bound
}

// Accumulators per target: 20 of the 32 AVX-512 registers, 8 of the 16 elsewhere.
#if HWY_TARGET <= HWY_AVX3
constexpr int kAccumulators = 20;
#else
constexpr int kAccumulators = 8;
#endif
template <int R>
constexpr int kVectors = kAccumulators / R > 8 ? 8 : kAccumulators / R;

template <class F, class Sink>
void SumRowsAny(const GroupArgs<F>& g, std::size_t n, Sink& sink, std::size_t s0 = 0) {
    switch (g.rows) {
    case 1: return SumRowsT<1, kVectors<1>>(g, s0, n, sink);
    case 2: return SumRowsT<2, kVectors<2>>(g, s0, n, sink);
    case 3: return SumRowsT<3, kVectors<3>>(g, s0, n, sink);
    case 4: return SumRowsT<4, kVectors<4>>(g, s0, n, sink);
    default: break;
    }
}

// Plain sums (over-computes up to a whole vector).
template <class F>
struct SumSink {
    F* const* outs;
    template <class V>
    HWY_INLINE void operator()(int q, std::size_t s, V v) const {
        hn::StoreU(v, hn::ScalableTag<F>(), outs[q] + s);
    }
};

// The float path's finish fused into the store: out = store_pixel<Out>(sum * mul + add), exactly n
// samples (a last partial vector goes through a small buffer).
template <class Out, bool kStream>
struct FinishSink {
    Out* const* outs;
    std::size_t n;
    hn::Vec<hn::ScalableTag<float>> mul, add;
    HWY_INLINE void operator()(int q, std::size_t s, hn::Vec<hn::ScalableTag<float>> v) const {
        const hn::ScalableTag<float> d;
        const std::size_t N = hn::Lanes(d);
        v = hn::Add(hn::Mul(v, mul), add);
        if (HWY_LIKELY(s + N <= n)) return StorePixels<Out, kStream>(d, v, outs[q] + s);
        if (s >= n) return;
        Out buf[64];
        StorePixels<Out>(d, v, buf);
        std::memcpy(outs[q] + s, buf, (n - s) * sizeof(Out));
    }
};

// The first `head` samples (to row 0's first 64-byte boundary) with ordinary stores, then vectors from
// there: aligned, streamed where asked and every row of the group shares the alignment.
template <class Out>
void SumRowsFinishT(const GroupArgs<float>& g, void* const* outs, std::size_t n, float mul, float add, bool stream) {
    const hn::ScalableTag<float> d;
    Out* const* rows = reinterpret_cast<Out* const*>(outs);
    const std::size_t head = HeadSamples(rows[0], n);
    for (int q = 0; q < g.rows; ++q) stream = stream && StreamAligned(d, rows[q] + head);
    if (head > 0) {
        FinishSink<Out, false> sink{rows, head, hn::Set(d, mul), hn::Set(d, add)};
        SumRowsAny(g, head, sink);
    }
    if (stream) {
        FinishSink<Out, true> sink{rows, n, hn::Set(d, mul), hn::Set(d, add)};
        SumRowsAny(g, n, sink, head);
    } else {
        FinishSink<Out, false> sink{rows, n, hn::Set(d, mul), hn::Set(d, add)};
        SumRowsAny(g, n, sink, head);
    }
}
void SumRowsFinish(const GroupArgs<float>& g, PixelType out, void* const* outs, std::size_t n, float mul, float add,
                   bool stream) {
    switch (out) {
    case PixelType::u8: return SumRowsFinishT<std::uint8_t>(g, outs, n, mul, add, stream);
    case PixelType::u16: return SumRowsFinishT<std::uint16_t>(g, outs, n, mul, add, stream);
    case PixelType::f32: return SumRowsFinishT<float>(g, outs, n, mul, add, stream);
    }
}

void SumRowsF32(const GroupArgs<float>& g, float* const* outs, std::size_t n) {
    SumSink<float> sink{outs};
    SumRowsAny(g, n, sink);
}
void SumRowsF64(const GroupArgs<double>& g, double* const* outs, std::size_t n) {
    SumSink<double> sink{outs};
    SumRowsAny(g, n, sink);
}

// ---- finish: exact path ----------------------------------------------------------------------------
// finish_exact divides n = isum + offset by the denominator rounding half to even, in integers. In
// floating point the same quotient comes out of rint(n / d) when n and d are exact and |n| < 2^(p-1)
// (p = 24 or 53): a quotient that is not a tie lies at least 1/(2d) from one, more than the division's
// rounding error |n/d| * 2^-p. A power-of-two d divides exactly, so it becomes a multiplication.

enum class DivKind { one, power_of_two, divide };

// Sums as lanes of the finish's type: f32 sums widen exactly into f64 lanes.
template <class D, class S>
HWY_INLINE hn::Vec<D> LoadSum(D d, const S* HWY_RESTRICT p) {
    if constexpr (std::is_same_v<hn::TFromD<D>, S>) return hn::LoadU(d, p);
    else return hn::PromoteTo(d, hn::LoadU(hn::Rebind<S, D>(), p));
}

// Integer output, integer rounding: q = rint((sum + offset) / d) + delta, clamped. Lanes of type C.
template <class C, class Out, bool kStream, class S>
void FinishRounded(const S* HWY_RESTRICT sum, Out* HWY_RESTRICT dst, std::size_t n, const LinearFinish& f) {
    const hn::ScalableTag<C> d;
    const std::size_t N = hn::Lanes(d);
    const std::int64_t den = f.denominator;
    const DivKind kind = den == 1 ? DivKind::one : (den & (den - 1)) == 0 ? DivKind::power_of_two : DivKind::divide;
    const auto offset = hn::Set(d, C(f.offset)), delta = hn::Set(d, C(f.delta_int));
    const auto dv = hn::Set(d, C(den)), inv = hn::Set(d, C(1) / C(den));
    const auto zero = hn::Zero(d), hi = hn::Set(d, C(PixelTraits<Out>::max));
    auto one = [&]<bool kS>(std::size_t s, Out* HWY_RESTRICT p) HWY_ATTR {
        auto v = hn::Add(LoadSum(d, sum + s), offset);
        if (kind == DivKind::power_of_two) v = hn::Round(hn::Mul(v, inv));
        else if (kind == DivKind::divide) v = hn::Round(hn::Div(v, dv));
        v = hn::Min(hn::Max(hn::Add(v, delta), zero), hi);
        if constexpr (std::is_same_v<C, float>) StorePixels<Out, kS>(d, v, p);
        else StorePixels64<Out, kS>(d, v, p);
    };
    // Up to the row's first cache-line boundary through a buffer (the sums have room past n), then
    // aligned vectors.
    const std::size_t head = HeadSamples(dst, n);
    for (std::size_t s = 0; s < head; s += N) {
        alignas(64) Out buf[HWY_MAX_BYTES / sizeof(C)];
        one.template operator()<false>(s, buf);
        std::memcpy(dst + s, buf, std::min(N, head - s) * sizeof(Out));
    }
    std::size_t s = head;
    for (; s + N <= n; s += N) one.template operator()<kStream>(s, dst + s);
    for (; s < n; ++s) dst[s] = finish_exact<Out>(std::int64_t(sum[s]), f);
}

// Anything else (f32 output, or a scale / fractional delta): store_pixel(double(n) / d * scale + delta),
// the same IEEE double operations in the same order as finish_exact.
template <class Out, bool kStream, class S>
void FinishScaled(const S* HWY_RESTRICT sum, Out* HWY_RESTRICT dst, std::size_t n, const LinearFinish& f) {
    const hn::ScalableTag<double> d;
    const std::size_t N = hn::Lanes(d);
    const auto offset = hn::Set(d, double(f.offset)), den = hn::Set(d, double(f.denominator));
    const auto scale = hn::Set(d, f.scale), delta = hn::Set(d, f.delta);
    auto one = [&]<bool kS>(std::size_t s, Out* HWY_RESTRICT p) HWY_ATTR {
        auto v = hn::Div(hn::Add(LoadSum(d, sum + s), offset), den);
        StorePixels64<Out, kS>(d, hn::Add(hn::Mul(v, scale), delta), p);
    };
    const std::size_t head = HeadSamples(dst, n);  // as in FinishRounded
    for (std::size_t s = 0; s < head; s += N) {
        alignas(64) Out buf[HWY_MAX_BYTES / sizeof(double)];
        one.template operator()<false>(s, buf);
        std::memcpy(dst + s, buf, std::min(N, head - s) * sizeof(Out));
    }
    std::size_t s = head;
    for (; s + N <= n; s += N) one.template operator()<kStream>(s, dst + s);
    for (; s < n; ++s) dst[s] = finish_exact<Out>(std::int64_t(sum[s]), f);
}

template <class Out, bool kStream, class S>
void FinishExactT(const S* sum, Out* dst, std::size_t n, const LinearFinish& f, double bound) {
    const double top = bound + std::fabs(double(f.offset));  // >= |isum + offset|
    const double den = double(f.denominator);
    const double delta = std::fabs(double(f.delta_int));
    if (PixelTraits<Out>::integer && f.integer_rounding) {
        if constexpr (std::is_same_v<S, float>)  // f64 sums never get here with so small a bound
            if (top < 0x1p23 && den < 0x1p24 && delta < 0x1p23)
                return FinishRounded<float, Out, kStream>(sum, dst, n, f);
        if (top < 0x1p52 && den < 0x1p53 && delta < 0x1p52) return FinishRounded<double, Out, kStream>(sum, dst, n, f);
    } else if (top < 0x1p53) {
        return FinishScaled<Out, kStream>(sum, dst, n, f);
    }
    for (std::size_t s = 0; s < n; ++s) dst[s] = finish_exact<Out>(std::int64_t(sum[s]), f);
}

template <class S>
void FinishExactAny(PixelType out, const S* sum, void* dst, std::size_t n, const LinearFinish& f, double bound,
                    bool stream) {
    // Stores go a vector of f64 lanes at a time at most (8 samples), f32 lanes at most 16.
    const hn::ScalableTag<float> df;
    auto run = [&](auto* p) {
        using Out = std::remove_pointer_t<decltype(p)>;
        if (stream && StreamAligned(df, p + HeadSamples(p, n))) FinishExactT<Out, true>(sum, p, n, f, bound);
        else FinishExactT<Out, false>(sum, p, n, f, bound);
    };
    switch (out) {
    case PixelType::u8: return run(static_cast<std::uint8_t*>(dst));
    case PixelType::u16: return run(static_cast<std::uint16_t*>(dst));
    case PixelType::f32: return run(static_cast<float*>(dst));
    }
}
void FinishExactF32(PixelType out, const float* sum, void* dst, std::size_t n, const LinearFinish& f, double bound,
                    bool stream) {
    FinishExactAny(out, sum, dst, n, f, bound, stream);
}
void FinishExactF64(PixelType out, const double* sum, void* dst, std::size_t n, const LinearFinish& f, double bound,
                    bool stream) {
    FinishExactAny(out, sum, dst, n, f, bound, stream);
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace apron::cpu::simd {

HWY_EXPORT(WidenF32);
HWY_EXPORT(WidenF64);
HWY_EXPORT(AllFinite);
HWY_EXPORT(WeightedSumF32);
HWY_EXPORT(WeightedSumF64);
HWY_EXPORT(SumRowsF32);
HWY_EXPORT(SumRowsF64);
HWY_EXPORT(SumRowsFinish);
HWY_EXPORT(FinishExactF32);
HWY_EXPORT(FinishExactF64);

bool widen(PixelType t, const void* src, float* dst, std::size_t n) { return HWY_DYNAMIC_DISPATCH(WidenF32)(t, src, dst, n); }
bool widen(PixelType t, const void* src, double* dst, std::size_t n) { return HWY_DYNAMIC_DISPATCH(WidenF64)(t, src, dst, n); }
bool all_finite(const float* p, std::size_t n) { return HWY_DYNAMIC_DISPATCH(AllFinite)(p, n); }
void weighted_sum(const float* const* taps, const float* w, std::size_t count, float* out, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(WeightedSumF32)(taps, w, count, out, n);
}
void weighted_sum(const double* const* taps, const double* w, std::size_t count, double* out, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(WeightedSumF64)(taps, w, count, out, n);
}
void weighted_sum_rows(const GroupArgs<float>& g, float* const* outs, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(SumRowsF32)(g, outs, n);
}
void weighted_sum_rows(const GroupArgs<double>& g, double* const* outs, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(SumRowsF64)(g, outs, n);
}
void weighted_sum_rows_finish(const GroupArgs<float>& g, PixelType out, void* const* outs, std::size_t n,
                              const LinearFinish& f, bool stream) {
    HWY_DYNAMIC_DISPATCH(SumRowsFinish)(g, out, outs, n, float(f.mul), float(f.add), stream);
}
void finish_exact_row(PixelType out, const float* sum, void* dst, std::size_t n, const LinearFinish& f, double bound,
                      bool stream) {
    HWY_DYNAMIC_DISPATCH(FinishExactF32)(out, sum, dst, n, f, bound, stream);
}
void finish_exact_row(PixelType out, const double* sum, void* dst, std::size_t n, const LinearFinish& f, double bound,
                      bool stream) {
    HWY_DYNAMIC_DISPATCH(FinishExactF64)(out, sum, dst, n, f, bound, stream);
}

} // namespace apron::cpu::simd
#endif
