// Highway helpers the morphology kernels share (simd_morph.cpp, simd_morph_rect-inl.h): the extremum of two
// vectors or samples, and f32 order keys back to values. Included once per SIMD target, after
// hwy/highway.h, as Highway's -inl.h headers are (the toggle guard below).
#if defined(APRON_CPU_SIMD_MORPH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef APRON_CPU_SIMD_MORPH_INL_H_
#undef APRON_CPU_SIMD_MORPH_INL_H_
#else
#define APRON_CPU_SIMD_MORPH_INL_H_
#endif

#include <algorithm>
#include <cstdint>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {

template <bool kMax, class V>
HWY_INLINE V Pick(V a, V b) {
    if constexpr (kMax) return hwy::HWY_NAMESPACE::Max(a, b);
    else return hwy::HWY_NAMESPACE::Min(a, b);
}

template <bool kMax, class T>
HWY_INLINE T PickScalar(T a, T b) {
    if constexpr (kMax) return std::max(a, b);
    else return std::min(a, b);
}

// Order keys back to f32 values: the key map is its own inverse (morph_key_value).
template <class D, class V>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<hwy::HWY_NAMESPACE::RebindToFloat<D>> KeyValues(D d, V k) {
    namespace hn = hwy::HWY_NAMESPACE;
    const auto magnitude = hn::Set(d, std::int32_t(0x7FFFFFFF));
    return hn::BitCast(hn::RebindToFloat<D>(), hn::Xor(k, hn::And(hn::ShiftRight<31>(k), magnitude)));
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
