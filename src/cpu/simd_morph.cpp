// Highway kernels of the morphology path: min / max over several rows (the building block of the
// doubling windows, van Herk's prefix and suffix rows, and the shape terms), and the f32 copy that
// makes plain min/max agree with the reference's fmin/fmax. Compiled once per SIMD target.
#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>

#include "cpu/simd_kernels.hpp"

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/simd_morph.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <bool kMax, class V>
HWY_INLINE V Pick(V a, V b) {
    if constexpr (kMax) return hn::Max(a, b);
    else return hn::Min(a, b);
}

template <bool kMax, class T>
HWY_INLINE T PickScalar(T a, T b) {
    if constexpr (kMax) return std::max(a, b);
    else return std::min(a, b);
}

// Four vectors per step keep the loads of all rows in flight; every row is read before dst is written.
template <bool kMax, bool kStream, class T>
void ExtremumT(const T* const* rows, std::size_t count, T* dst, std::size_t n) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    auto store = [&](hn::Vec<decltype(d)> v, T* p) HWY_ATTR {
        if constexpr (kStream) hn::Stream(v, d, p);
        else hn::StoreU(v, d, p);
    };
    std::size_t s = 0;
    for (; s + 4 * N <= n; s += 4 * N) {
        const T* p = rows[0] + s;
        auto a0 = hn::LoadU(d, p), a1 = hn::LoadU(d, p + N), a2 = hn::LoadU(d, p + 2 * N), a3 = hn::LoadU(d, p + 3 * N);
        for (std::size_t k = 1; k < count; ++k) {
            p = rows[k] + s;
            a0 = Pick<kMax>(a0, hn::LoadU(d, p));
            a1 = Pick<kMax>(a1, hn::LoadU(d, p + N));
            a2 = Pick<kMax>(a2, hn::LoadU(d, p + 2 * N));
            a3 = Pick<kMax>(a3, hn::LoadU(d, p + 3 * N));
        }
        store(a0, dst + s);
        store(a1, dst + s + N);
        store(a2, dst + s + 2 * N);
        store(a3, dst + s + 3 * N);
    }
    for (; s + N <= n; s += N) {
        auto a = hn::LoadU(d, rows[0] + s);
        for (std::size_t k = 1; k < count; ++k) a = Pick<kMax>(a, hn::LoadU(d, rows[k] + s));
        store(a, dst + s);
    }
    for (; s < n; ++s) {
        T a = rows[0][s];
        for (std::size_t k = 1; k < count; ++k) a = PickScalar<kMax>(a, rows[k][s]);
        dst[s] = a;
    }
}

// Streaming (non-temporal) stores for rows of a large output: no read-for-ownership, so a
// memory-bound pass moves 2 bytes per byte written instead of 3. Only where dst is vector-aligned.
template <class T>
void ExtremumTyped(bool max, const void* const* rows, std::size_t count, void* dst, std::size_t n, bool stream) {
    auto r = reinterpret_cast<const T* const*>(rows);
    T* out = static_cast<T*>(dst);
    stream = stream && reinterpret_cast<std::uintptr_t>(dst) % (hn::Lanes(hn::ScalableTag<T>()) * sizeof(T)) == 0;
    if (max) stream ? ExtremumT<true, true>(r, count, out, n) : ExtremumT<true, false>(r, count, out, n);
    else stream ? ExtremumT<false, true>(r, count, out, n) : ExtremumT<false, false>(r, count, out, n);
}

void Extremum(PixelType t, bool max, const void* const* rows, std::size_t count, void* dst, std::size_t n, bool stream) {
    if (count == 0) return;
    switch (t) {
    case PixelType::u8: return ExtremumTyped<std::uint8_t>(max, rows, count, dst, n, stream);
    case PixelType::u16: return ExtremumTyped<std::uint16_t>(max, rows, count, dst, n, stream);
    case PixelType::f32: return ExtremumTyped<float>(max, rows, count, dst, n, stream);
    }
}

void FlushStreams() { hwy::FlushStream(); }

// erode keeps v when v < FLT_MAX (false for NaN and +inf), dilate when v > -FLT_MAX.
void CopyForExtremum(bool max, const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, std::size_t n) {
    const hn::ScalableTag<float> d;
    const std::size_t N = hn::Lanes(d);
    const float limit = max ? -FLT_MAX : FLT_MAX;
    const auto lv = hn::Set(d, limit);
    std::size_t s = 0;
    if (max) {
        for (; s + N <= n; s += N) {
            const auto v = hn::LoadU(d, src + s);
            hn::StoreU(hn::IfThenElse(hn::Gt(v, lv), v, lv), d, dst + s);
        }
        for (; s < n; ++s) dst[s] = src[s] > limit ? src[s] : limit;
    } else {
        for (; s + N <= n; s += N) {
            const auto v = hn::LoadU(d, src + s);
            hn::StoreU(hn::IfThenElse(hn::Lt(v, lv), v, lv), d, dst + s);
        }
        for (; s < n; ++s) dst[s] = src[s] < limit ? src[s] : limit;
    }
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace apron::cpu::simd {

HWY_EXPORT(Extremum);
HWY_EXPORT(CopyForExtremum);
HWY_EXPORT(FlushStreams);

void extremum(PixelType t, bool max, const void* const* rows, std::size_t count, void* dst, std::size_t n, bool stream) {
    HWY_DYNAMIC_DISPATCH(Extremum)(t, max, rows, count, dst, n, stream);
}
void flush_streams() { HWY_DYNAMIC_DISPATCH(FlushStreams)(); }
void copy_for_extremum(bool max, const float* src, float* dst, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(CopyForExtremum)(max, src, dst, n);
}

} // namespace apron::cpu::simd
#endif
