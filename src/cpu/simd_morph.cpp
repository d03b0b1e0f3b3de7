// Highway kernels of the morphology path: min / max over several rows (the building block of the
// doubling windows, van Herk's prefix and suffix rows, and the shape terms), and f32's order keys
// (core/morph_value.hpp: integer min / max on keys is the SPEC's NaN-skipping rule, exactly). Compiled once
// per SIMD target.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/morph_value.hpp"
#include "cpu/simd_kernels.hpp"

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/simd_morph.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>
#include "cpu/simd_morph-inl.h"

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Four vectors per step keep the loads of all rows in flight; every row is read before dst is written.
// kValues: the rows hold f32 order keys and dst (a float row) gets their values.
template <bool kMax, bool kStream, class T, bool kValues = false>
void ExtremumT(const T* const* rows, std::size_t count, std::conditional_t<kValues, float, T>* dst, std::size_t n) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    auto store = [&](hn::Vec<decltype(d)> v, auto* p) HWY_ATTR {
        if constexpr (kValues) {
            const hn::RebindToFloat<decltype(d)> df;
            if constexpr (kStream) hn::Stream(KeyValues(d, v), df, p);
            else hn::StoreU(KeyValues(d, v), df, p);
        } else {
            if constexpr (kStream) hn::Stream(v, d, p);
            else hn::StoreU(v, d, p);
        }
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
        if constexpr (kValues) dst[s] = morph_key_value(a);
        else dst[s] = a;
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

void ExtremumKeys(bool max, const void* const* rows, std::size_t count, void* dst, std::size_t n, bool to_float,
                  bool stream) {
    if (count == 0) return;
    if (!to_float) return ExtremumTyped<std::int32_t>(max, rows, count, dst, n, stream);
    auto r = reinterpret_cast<const std::int32_t* const*>(rows);
    float* out = static_cast<float*>(dst);
    stream = stream && reinterpret_cast<std::uintptr_t>(dst) % (hn::Lanes(hn::ScalableTag<float>()) * sizeof(float)) == 0;
    if (max) stream ? ExtremumT<true, true, std::int32_t, true>(r, count, out, n) : ExtremumT<true, false, std::int32_t, true>(r, count, out, n);
    else stream ? ExtremumT<false, true, std::int32_t, true>(r, count, out, n) : ExtremumT<false, false, std::int32_t, true>(r, count, out, n);
}

void FlushStreams() { hwy::FlushStream(); }

// morph_key, vectorised: flip the magnitude bits of negative values, then NaN to the missing key.
void MorphKeys(bool max, const float* HWY_RESTRICT src, std::int32_t* HWY_RESTRICT dst, std::size_t n) {
    const hn::ScalableTag<float> df;
    const hn::RebindToSigned<decltype(df)> di;
    const std::size_t N = hn::Lanes(df);
    const auto magnitude = hn::Set(di, std::int32_t(0x7FFFFFFF));
    const auto missing = hn::Set(di, morph_key(morph_identity<float>(max), max));
    std::size_t s = 0;
    for (; s + N <= n; s += N) {
        const auto v = hn::LoadU(df, src + s);
        const auto b = hn::BitCast(di, v);
        const auto k = hn::Xor(b, hn::And(hn::ShiftRight<31>(b), magnitude));
        hn::StoreU(hn::IfThenElse(hn::RebindMask(di, hn::IsNaN(v)), missing, k), di, dst + s);
    }
    for (; s < n; ++s) dst[s] = morph_key(src[s], max);
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace apron::cpu::simd {

HWY_EXPORT(Extremum);
HWY_EXPORT(MorphKeys);
HWY_EXPORT(ExtremumKeys);
HWY_EXPORT(FlushStreams);

void extremum(PixelType t, bool max, const void* const* rows, std::size_t count, void* dst, std::size_t n, bool stream) {
    HWY_DYNAMIC_DISPATCH(Extremum)(t, max, rows, count, dst, n, stream);
}
void flush_streams() { HWY_DYNAMIC_DISPATCH(FlushStreams)(); }
void morph_keys(bool max, const float* src, std::int32_t* dst, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(MorphKeys)(max, src, dst, n);
}
void extremum_keys(bool max, const void* const* rows, std::size_t count, void* dst, std::size_t n, bool to_float,
                   bool stream) {
    HWY_DYNAMIC_DISPATCH(ExtremumKeys)(max, rows, count, dst, n, to_float, stream);
}

} // namespace apron::cpu::simd
#endif
