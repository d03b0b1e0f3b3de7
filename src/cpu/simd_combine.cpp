// Highway kernel of the integer combine step (simd_combine.hpp). Each lane widens its samples to int32,
// forms a*A + b*B + c, clamps to the type's range and narrows back: exact, and memory-bound at every width.
#include "cpu/simd_combine.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/missing_sample.hpp"

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/simd_combine.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class T>
void CombineRow(const T* pa, const T* pb, T* po, std::size_t n, int ka, int kb, int kc) {
    constexpr int top = int(T(~T(0)));
    const hn::ScalableTag<std::int32_t> di;
    const hn::Rebind<T, decltype(di)> dt;  // as many T lanes as int32 lanes
    const std::size_t N = hn::Lanes(di);
    const auto va = hn::Set(di, ka), vb = hn::Set(di, kb), vc = hn::Set(di, kc);
    const auto lo = hn::Zero(di), hi = hn::Set(di, top);
    std::size_t k = 0;
    if (pb) {
        for (; k + N <= n; k += N) {
            const auto x = hn::PromoteTo(di, hn::LoadU(dt, pa + k)), y = hn::PromoteTo(di, hn::LoadU(dt, pb + k));
            const auto r = hn::Add(hn::Add(hn::Mul(va, x), hn::Mul(vb, y)), vc);
            hn::StoreU(hn::DemoteTo(dt, hn::Min(hn::Max(r, lo), hi)), dt, po + k);
        }
        for (; k < n; ++k) po[k] = T(std::clamp(ka * int(pa[k]) + kb * int(pb[k]) + kc, 0, top));
    } else {
        for (; k + N <= n; k += N) {
            const auto r = hn::Add(hn::Mul(va, hn::PromoteTo(di, hn::LoadU(dt, pa + k))), vc);
            hn::StoreU(hn::DemoteTo(dt, hn::Min(hn::Max(r, lo), hi)), dt, po + k);
        }
        for (; k < n; ++k) po[k] = T(std::clamp(ka * int(pa[k]) + kc, 0, top));
    }
}

void CombineInteger(PixelType t, const void* a, const void* b, void* out, std::size_t n, int ka, int kb, int kc) {
    if (t == PixelType::u8)
        CombineRow(static_cast<const std::uint8_t*>(a), static_cast<const std::uint8_t*>(b), static_cast<std::uint8_t*>(out),
                   n, ka, kb, kc);
    else
        CombineRow(static_cast<const std::uint16_t*>(a), static_cast<const std::uint16_t*>(b),
                   static_cast<std::uint16_t*>(out), n, ka, kb, kc);
}

// Samples of T as doubles, lane for lane (exact for u8, u16 and f32).
template <class T, class DF>
HWY_INLINE hn::Vec<DF> LoadDouble(DF df, const T* p) {
    if constexpr (std::is_same_v<T, float>) {
        return hn::PromoteTo(df, hn::LoadU(hn::Rebind<float, DF>(), p));
    } else {
        const hn::Rebind<std::int32_t, DF> di;
        return hn::PromoteTo(df, hn::PromoteTo(di, hn::LoadU(hn::Rebind<T, DF>(), p)));
    }
}

template <class Out, class DF>
HWY_INLINE void StoreDouble(DF df, hn::Vec<DF> v, Out* p) {
    if constexpr (std::is_same_v<Out, float>) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSE4
        hn::StoreU(hn::DemoteTo(hn::Rebind<float, DF>(), v), hn::Rebind<float, DF>(), p);  // cvtpd2ps: as a cast
#else
        // Highway's emulated DemoteTo saturates at the largest float where a C cast gives infinity.
        HWY_ALIGN double lanes[hn::MaxLanes(DF())];
        hn::Store(v, df, lanes);
        for (std::size_t i = 0; i < hn::Lanes(df); ++i) p[i] = float(lanes[i]);
#endif
    } else {
        // store_pixel: !(v > 0) (NaN included) gives 0, v >= max gives max, else rint (half to even).
        const auto zero = hn::Zero(df);
        const auto clamped = hn::Min(hn::IfThenElse(hn::Gt(v, zero), v, zero), hn::Set(df, double(Out(~Out(0)))));
        const hn::Rebind<std::int32_t, DF> di;
        const auto whole = hn::DemoteTo(di, hn::Round(clamped));
        hn::StoreU(hn::DemoteTo(hn::Rebind<Out, DF>(), whole), hn::Rebind<Out, DF>(), p);
    }
}

template <class Out>
Out StoreScalar(double v) {
    if constexpr (std::is_same_v<Out, float>) {
        return float(v);
    } else {
        if (!(v > 0.0)) return Out(0);
        if (v >= double(Out(~Out(0)))) return Out(~Out(0));
        return Out(std::nearbyint(v));
    }
}

template <class A, class B, class Out>
void CombineDoubleRow(const A* pa, const B* pb, Out* po, std::size_t n, double ka, double kb, double kc) {
    const hn::ScalableTag<double> df;
    const std::size_t N = hn::Lanes(df);
    const auto va = hn::Set(df, ka), vb = hn::Set(df, kb), vc = hn::Set(df, kc);
    std::size_t k = 0;
    if (pb) {
        for (; k + N <= n; k += N) {
            const auto v = hn::Add(hn::Add(hn::Mul(va, LoadDouble(df, pa + k)), hn::Mul(vb, LoadDouble(df, pb + k))), vc);
            StoreDouble(df, v, po + k);
        }
        for (; k < n; ++k) {
            const double m = ka * double(pa[k]), q = kb * double(pb[k]);  // rounded apart, as the lanes do
            po[k] = StoreScalar<Out>((m + q) + kc);
        }
    } else {
        for (; k + N <= n; k += N) StoreDouble(df, hn::Add(hn::Mul(va, LoadDouble(df, pa + k)), vc), po + k);
        for (; k < n; ++k) {
            const double m = ka * double(pa[k]);
            po[k] = StoreScalar<Out>(m + kc);
        }
    }
}

// The missing-sample forms (core/missing_sample.hpp) lane by lane in double: each lane's samples as doubles
// (exact), the same tests (NaN, == nodata) and, for the ratio, the same operations in the same order, each
// rounded once; the store is StoreDouble's, store_pixel's rule. The tail runs the shared scalar rule.
template <class DF>
HWY_INLINE auto MissingMask(DF df, hn::Vec<DF> v, const CombineStep& s) {
    const auto nan = hn::IsNaN(v);
    return s.has_nodata ? hn::Or(nan, hn::Eq(v, hn::Set(df, s.nodata))) : nan;
}

template <class A, class B, class Out>
void MissingFormRow(const A* pa, const B* pb, Out* po, std::size_t n, const CombineStep& s) {
    const hn::ScalableTag<double> df;
    const std::size_t N = hn::Lanes(df);
    const double missing_value = std::is_same_v<Out, float> ? double(NAN) : s.has_nodata ? s.nodata : 0.0;
    const auto missing = hn::Set(df, missing_value), zero = hn::Zero(df), one = hn::Set(df, 1.0);
    const auto ka = hn::Set(df, s.a), kb = hn::Set(df, s.b), kc = hn::Set(df, s.c);
    std::size_t k = 0;
    switch (s.form) {
    case CombineForm::fill:
        for (; k + N <= n; k += N) {
            const auto v = LoadDouble(df, pa + k);
            StoreDouble(df, hn::IfThenElse(MissingMask(df, v, s), kc, v), po + k);
        }
        break;
    case CombineForm::valid:
        for (; k + N <= n; k += N)
            StoreDouble(df, hn::IfThenElse(MissingMask(df, LoadDouble(df, pa + k), s), zero, one), po + k);
        break;
    case CombineForm::ratio:
        for (; k + N <= n; k += N) {
            const auto w = LoadDouble(df, pb + k);
            const auto r = hn::Add(hn::Div(hn::Mul(ka, LoadDouble(df, pa + k)), w), kc);
            StoreDouble(df, hn::IfThenElse(hn::Gt(w, kb), r, missing), po + k);
        }
        break;
    case CombineForm::mark:
        for (; k + N <= n; k += N) {
            const auto v = LoadDouble(df, pa + k);
            auto m = hn::IsNaN(v);
            if (pb) m = hn::Or(m, MissingMask(df, LoadDouble(df, pb + k), s));
            StoreDouble(df, hn::IfThenElse(m, missing, v), po + k);
        }
        break;
    default: break;
    }
    for (; k < n; ++k) po[k] = missing_form_sample<A, B, Out>(s, pa[k], pb ? pb[k] : B(0));
}

template <class F>
void WithType(PixelType t, F&& f) {
    if (t == PixelType::u8) f(std::uint8_t{});
    else if (t == PixelType::u16) f(std::uint16_t{});
    else f(float{});
}

void CombineDouble(PixelType ta, PixelType tb, PixelType tout, const void* a, const void* b, void* out, std::size_t n,
                   double ka, double kb, double kc) {
    WithType(ta, [&](auto av) {
        WithType(b ? tb : ta, [&](auto bv) {
            WithType(tout, [&](auto ov) {
                using A = decltype(av);
                using B = decltype(bv);
                using Out = decltype(ov);
                CombineDoubleRow(static_cast<const A*>(a), static_cast<const B*>(b), static_cast<Out*>(out), n, ka, kb, kc);
            });
        });
    });
}

void CombineMissing(PixelType ta, PixelType tb, PixelType tout, const void* a, const void* b, void* out, std::size_t n,
                    const CombineStep& s) {
    WithType(ta, [&](auto av) {
        WithType(b ? tb : ta, [&](auto bv) {
            WithType(tout, [&](auto ov) {
                using A = decltype(av);
                using B = decltype(bv);
                using Out = decltype(ov);
                MissingFormRow(static_cast<const A*>(a), static_cast<const B*>(b), static_cast<Out*>(out), n, s);
            });
        });
    });
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace apron::cpu::simd {

HWY_EXPORT(CombineInteger);
HWY_EXPORT(CombineDouble);
HWY_EXPORT(CombineMissing);

void combine_integer(PixelType t, const void* a, const void* b, void* out, std::size_t n, int ka, int kb, int kc) {
    HWY_DYNAMIC_DISPATCH(CombineInteger)(t, a, b, out, n, ka, kb, kc);
}

void combine_double(PixelType ta, PixelType tb, PixelType tout, const void* a, const void* b, void* out, std::size_t n,
                    double ka, double kb, double kc) {
    HWY_DYNAMIC_DISPATCH(CombineDouble)(ta, tb, tout, a, b, out, n, ka, kb, kc);
}

void combine_missing(PixelType ta, PixelType tb, PixelType tout, const void* a, const void* b, void* out, std::size_t n,
                     const CombineStep& s) {
    HWY_DYNAMIC_DISPATCH(CombineMissing)(ta, tb, tout, a, b, out, n, s);
}

} // namespace apron::cpu::simd
#endif
