// Highway kernels of the 8-bit exact separable path (fast_linear_8bit.cpp): u8 rows times small
// non-negative integer weights, summed in u16 lanes. The caller has checked that no sum can reach
// 2^16, so the lanes never wrap and the sums are the exact integers the reference forms in int64.
// Compiled once per SIMD target.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/pixel.hpp"
#include "cpu/simd_kernels.hpp"

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/simd_small_int.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Two vectors of u16 outputs per step (one widening load, one multiply and one add per tap and
// vector; the multiply is left out when every weight is 1, as for a box).
template <bool kOnes>
void SumTapsU8T(const std::uint8_t* HWY_RESTRICT src, const std::size_t* HWY_RESTRICT offs,
                const std::uint16_t* HWY_RESTRICT w, std::size_t count, std::uint16_t* HWY_RESTRICT out, std::size_t n) {
    const hn::ScalableTag<std::uint16_t> d;
    const hn::Rebind<std::uint8_t, decltype(d)> d8;
    const std::size_t N = hn::Lanes(d);
    auto tap = [&](std::size_t k, std::size_t s) HWY_ATTR {
        const auto v = hn::PromoteTo(d, hn::LoadU(d8, src + offs[k] + s));
        if constexpr (kOnes) return v;
        else return hn::Mul(v, hn::Set(d, w[k]));
    };
    std::size_t s = 0;
    for (; s + 2 * N <= n; s += 2 * N) {
        auto a0 = hn::Zero(d), a1 = a0;
        for (std::size_t k = 0; k < count; ++k) {
            a0 = hn::Add(a0, tap(k, s));
            a1 = hn::Add(a1, tap(k, s + N));
        }
        hn::StoreU(a0, d, out + s);
        hn::StoreU(a1, d, out + s + N);
    }
    for (; s + N <= n; s += N) {
        auto a = hn::Zero(d);
        for (std::size_t k = 0; k < count; ++k) a = hn::Add(a, tap(k, s));
        hn::StoreU(a, d, out + s);
    }
    for (; s < n; ++s) {
        unsigned a = 0;
        for (std::size_t k = 0; k < count; ++k) a += unsigned(src[offs[k] + s]) * w[k];
        out[s] = std::uint16_t(a);
    }
}
void SumTapsU8(const std::uint8_t* src, const std::size_t* offs, const std::uint16_t* w, std::size_t count,
               std::uint16_t* out, std::size_t n) {
    bool ones = true;
    for (std::size_t k = 0; k < count; ++k) ones = ones && w[k] == 1;
    if (ones) SumTapsU8T<true>(src, offs, w, count, out, n);
    else SumTapsU8T<false>(src, offs, w, count, out, n);
}

// u16 rows, summed in lanes as wide as f32's so each sum converts in place (exactly: it is < 2^16).
void SumRowsU16(const std::uint16_t* const* HWY_RESTRICT rows, const std::uint16_t* HWY_RESTRICT w, std::size_t count,
                float* HWY_RESTRICT out, std::size_t n) {
    const hn::ScalableTag<float> df;
    const hn::Rebind<std::uint16_t, decltype(df)> d;
    const hn::Rebind<std::int32_t, decltype(df)> di;
    const std::size_t N = hn::Lanes(df);
    auto finish = [&](hn::Vec<decltype(d)> a, std::size_t s) HWY_ATTR {
        hn::StoreU(hn::ConvertTo(df, hn::BitCast(di, hn::PromoteTo(hn::Rebind<std::uint32_t, decltype(df)>(), a))), df, out + s);
    };
    std::size_t s = 0;
    for (; s + 2 * N <= n; s += 2 * N) {
        auto a0 = hn::Zero(d), a1 = a0;
        for (std::size_t k = 0; k < count; ++k) {
            const auto wk = hn::Set(d, w[k]);
            a0 = hn::Add(a0, hn::Mul(hn::LoadU(d, rows[k] + s), wk));
            a1 = hn::Add(a1, hn::Mul(hn::LoadU(d, rows[k] + s + N), wk));
        }
        finish(a0, s);
        finish(a1, s + N);
    }
    for (; s + N <= n; s += N) {
        auto a = hn::Zero(d);
        for (std::size_t k = 0; k < count; ++k) a = hn::Add(a, hn::Mul(hn::LoadU(d, rows[k] + s), hn::Set(d, w[k])));
        finish(a, s);
    }
    for (; s < n; ++s) {
        unsigned a = 0;
        for (std::size_t k = 0; k < count; ++k) a += unsigned(rows[k][s]) * w[k];
        out[s] = float(std::uint16_t(a));
    }
}

// The same column sums with the exact finish fused in, for integer outputs with integer rounding:
// q = rint((sum + offset) / d) + delta, clamped, all in f32 lanes. Exact because every value is an
// integer below 2^22 and:
//  - d a power of two: the product by 1/d is exact;
//  - d odd: y = fl(n * fl(1/d)) is within |n/d| * (2u + u^2) of n/d (u = 2^-24, two roundings), below
//    2^22 / d * 2^-22.99 < 1/(2d); and n/d is never a tie (n/d - k - 1/2 = (2n - d(2k+1)) / (2d), whose
//    numerator is odd), so it lies at least 1/(2d) from every half-integer, and rint(y) = rint(n/d);
//  - any other d: a correctly rounded division (the argument of finish_exact_row, |n| < 2^23).
// The reciprocal saves the division, the most expensive step of a box filter's finish (vdivps).
template <class Out, bool kStream>
void SumRowsU16FinishT(const std::uint16_t* const* HWY_RESTRICT rows, const std::uint16_t* HWY_RESTRICT w,
                       std::size_t count, Out* HWY_RESTRICT dst, std::size_t n, const LinearFinish& f) {
    const hn::ScalableTag<float> df;
    const hn::Rebind<std::uint16_t, decltype(df)> d;
    const hn::Rebind<std::int32_t, decltype(df)> di;
    const hn::Rebind<Out, decltype(df)> dout;
    const std::size_t N = hn::Lanes(df);
    const std::int64_t den = f.denominator;
    const bool multiply = (den & (den - 1)) == 0 || (den & 1) == 1;
    const auto offset = hn::Set(df, float(f.offset)), delta = hn::Set(df, float(f.delta_int));
    const auto dv = hn::Set(df, float(den)), inv = hn::Set(df, 1.0f / float(den));
    const auto zero = hn::Zero(df), hi = hn::Set(df, float(PixelTraits<Out>::max));
    std::size_t s = 0;
    for (; s + N <= n; s += N) {
        auto a = hn::Zero(d);
        for (std::size_t k = 0; k < count; ++k) a = hn::Add(a, hn::Mul(hn::LoadU(d, rows[k] + s), hn::Set(d, w[k])));
        auto v = hn::Add(hn::ConvertTo(df, hn::BitCast(di, hn::PromoteTo(hn::Rebind<std::uint32_t, decltype(df)>(), a))), offset);
        v = hn::Round(multiply ? hn::Mul(v, inv) : hn::Div(v, dv));
        v = hn::Min(hn::Max(hn::Add(v, delta), zero), hi);
        const auto q = hn::DemoteTo(dout, hn::ConvertTo(di, v));
        if constexpr (kStream) hn::Stream(q, dout, dst + s);
        else hn::StoreU(q, dout, dst + s);
    }
    for (; s < n; ++s) {
        unsigned a = 0;
        for (std::size_t k = 0; k < count; ++k) a += unsigned(rows[k][s]) * w[k];
        dst[s] = finish_exact<Out>(std::int64_t(std::uint16_t(a)), f);
    }
}
template <class Out>
void SumRowsU16FinishTyped(const std::uint16_t* const* rows, const std::uint16_t* w, std::size_t count, void* dst,
                           std::size_t n, const LinearFinish& f, bool stream) {
    Out* out = static_cast<Out*>(dst);
    const std::size_t bytes = hn::Lanes(hn::ScalableTag<float>()) * sizeof(Out);
    if (stream && reinterpret_cast<std::uintptr_t>(out) % bytes == 0) SumRowsU16FinishT<Out, true>(rows, w, count, out, n, f);
    else SumRowsU16FinishT<Out, false>(rows, w, count, out, n, f);
}
void SumRowsU16Finish(const std::uint16_t* const* rows, const std::uint16_t* w, std::size_t count, PixelType out,
                      void* dst, std::size_t n, const LinearFinish& f, bool stream) {
    if (out == PixelType::u8) SumRowsU16FinishTyped<std::uint8_t>(rows, w, count, dst, n, f, stream);
    else SumRowsU16FinishTyped<std::uint16_t>(rows, w, count, dst, n, f, stream);
}

// ---- Q15 fixed point (the 8-bit float separable path) ----------------------------------------------

// dst[s] = src[s] * 2^7: pixels as Q7 in i16 lanes.
void WidenQ7(const std::uint8_t* HWY_RESTRICT src, std::int16_t* HWY_RESTRICT dst, std::size_t n) {
    const hn::ScalableTag<std::int16_t> d;
    const hn::Rebind<std::uint8_t, decltype(d)> d8;
    const std::size_t N = hn::Lanes(d);
    std::size_t s = 0;
    for (; s + N <= n; s += N) hn::StoreU(hn::ShiftLeft<7>(hn::BitCast(d, hn::PromoteTo(hn::Rebind<std::uint16_t, decltype(d)>(), hn::LoadU(d8, src + s)))), d, dst + s);
    for (; s < n; ++s) dst[s] = std::int16_t(src[s] << 7);
}

HWY_INLINE std::int16_t MulQ15(std::int16_t a, std::int16_t b) {
    return std::int16_t((std::int32_t(a) * b + (1 << 14)) >> 15);  // vpmulhrsw, lane by lane
}

// out[s] = sum over k of round(src[offs[k] + s] * w[k] / 2^15), one rounding per product.
void SumTapsQ15(const std::int16_t* HWY_RESTRICT src, const std::size_t* HWY_RESTRICT offs,
                const std::int16_t* HWY_RESTRICT w, std::size_t count, std::int16_t* HWY_RESTRICT out, std::size_t n) {
    const hn::ScalableTag<std::int16_t> d;
    const std::size_t N = hn::Lanes(d);
    std::size_t s = 0;
    for (; s + 2 * N <= n; s += 2 * N) {
        auto a0 = hn::Zero(d), a1 = a0;
        for (std::size_t k = 0; k < count; ++k) {
            const std::int16_t* p = src + offs[k] + s;
            const auto wk = hn::Set(d, w[k]);
            a0 = hn::Add(a0, hn::MulFixedPoint15(hn::LoadU(d, p), wk));
            a1 = hn::Add(a1, hn::MulFixedPoint15(hn::LoadU(d, p + N), wk));
        }
        hn::StoreU(a0, d, out + s);
        hn::StoreU(a1, d, out + s + N);
    }
    for (; s < n; ++s) {
        std::int16_t a = 0;
        for (std::size_t k = 0; k < count; ++k) a = std::int16_t(a + MulQ15(src[offs[k] + s], w[k]));
        out[s] = a;
    }
}

// dst[s] = saturate_u8((sum over k of round(rows[k][s] * w[k] / 2^15) + 64) >> 7): the Q7 sum rounded
// (half up) to a pixel.
template <bool kStream>
void SumRowsQ15T(const std::int16_t* const* HWY_RESTRICT rows, const std::int16_t* HWY_RESTRICT w, std::size_t count,
                 std::uint8_t* HWY_RESTRICT dst, std::size_t n) {
    const hn::ScalableTag<std::int16_t> d;
    const hn::Rebind<std::uint8_t, decltype(d)> d8;
    const std::size_t N = hn::Lanes(d);
    const auto half = hn::Set(d, std::int16_t(64));
    auto put = [&](hn::Vec<decltype(d)> a, std::size_t s) HWY_ATTR {
        const auto q = hn::DemoteTo(d8, hn::ShiftRight<7>(hn::SaturatedAdd(a, half)));
        if constexpr (kStream) hn::Stream(q, d8, dst + s);
        else hn::StoreU(q, d8, dst + s);
    };
    std::size_t s = 0;
    for (; s + 2 * N <= n; s += 2 * N) {
        auto a0 = hn::Zero(d), a1 = a0;
        for (std::size_t k = 0; k < count; ++k) {
            const auto wk = hn::Set(d, w[k]);
            a0 = hn::Add(a0, hn::MulFixedPoint15(hn::LoadU(d, rows[k] + s), wk));
            a1 = hn::Add(a1, hn::MulFixedPoint15(hn::LoadU(d, rows[k] + s + N), wk));
        }
        put(a0, s);
        put(a1, s + N);
    }
    for (; s < n; ++s) {
        std::int16_t a = 0;
        for (std::size_t k = 0; k < count; ++k) a = std::int16_t(a + MulQ15(rows[k][s], w[k]));
        const int q = (std::min(int(a) + 64, 32767)) >> 7;
        dst[s] = std::uint8_t(q < 0 ? 0 : q > 255 ? 255 : q);
    }
}
void SumRowsQ15(const std::int16_t* const* rows, const std::int16_t* w, std::size_t count, std::uint8_t* dst,
                std::size_t n, bool stream) {
    const std::size_t bytes = hn::Lanes(hn::ScalableTag<std::int16_t>());
    if (stream && reinterpret_cast<std::uintptr_t>(dst) % bytes == 0) SumRowsQ15T<true>(rows, w, count, dst, n);
    else SumRowsQ15T<false>(rows, w, count, dst, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace apron::cpu::simd {

HWY_EXPORT(SumTapsU8);
HWY_EXPORT(SumRowsU16);
HWY_EXPORT(SumRowsU16Finish);
HWY_EXPORT(WidenQ7);
HWY_EXPORT(SumTapsQ15);
HWY_EXPORT(SumRowsQ15);

void widen_q7(const std::uint8_t* src, std::int16_t* dst, std::size_t n) { HWY_DYNAMIC_DISPATCH(WidenQ7)(src, dst, n); }
void sum_taps_q15(const std::int16_t* src, const std::size_t* offsets, const std::int16_t* w, std::size_t count,
                  std::int16_t* out, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(SumTapsQ15)(src, offsets, w, count, out, n);
}
void sum_rows_q15(const std::int16_t* const* rows, const std::int16_t* w, std::size_t count, std::uint8_t* dst,
                  std::size_t n, bool stream) {
    HWY_DYNAMIC_DISPATCH(SumRowsQ15)(rows, w, count, dst, n, stream);
}

bool u16_finish_fuses(PixelType out, const LinearFinish& f, double bound) {
    return (out == PixelType::u8 || out == PixelType::u16) && f.integer_rounding &&
           bound + std::fabs(double(f.offset)) < 0x1p22 && f.denominator < (1 << 22) && std::llabs(f.delta_int) < (1 << 22);
}
void sum_rows_u16_finish(const std::uint16_t* const* rows, const std::uint16_t* w, std::size_t count, PixelType out,
                         void* dst, std::size_t n, const LinearFinish& f, bool stream) {
    HWY_DYNAMIC_DISPATCH(SumRowsU16Finish)(rows, w, count, out, dst, n, f, stream);
}

void sum_taps_u8(const std::uint8_t* src, const std::size_t* offsets, const std::uint16_t* w, std::size_t count,
                 std::uint16_t* out, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(SumTapsU8)(src, offsets, w, count, out, n);
}
void sum_rows_u16(const std::uint16_t* const* rows, const std::uint16_t* w, std::size_t count, float* out, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(SumRowsU16)(rows, w, count, out, n);
}

} // namespace apron::cpu::simd
#endif
