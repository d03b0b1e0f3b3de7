// Highway kernel of the integer combine step (simd_combine.hpp). Each lane widens its samples to int32,
// forms a*A + b*B + c, clamps to the type's range and narrows back: exact, and memory-bound at every width.
#include "cpu/simd_combine.hpp"

#include <algorithm>
#include <cstdint>

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

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace apron::cpu::simd {

HWY_EXPORT(CombineInteger);

void combine_integer(PixelType t, const void* a, const void* b, void* out, std::size_t n, int ka, int kb, int kc) {
    HWY_DYNAMIC_DISPATCH(CombineInteger)(t, a, b, out, n, ka, kb, kc);
}

} // namespace apron::cpu::simd
#endif
