// Highway kernels of the 8-bit exact separable path (fast_linear_8bit.cpp): u8 rows times small
// non-negative integer weights, summed in u16 lanes. The caller has checked that no sum can reach
// 2^16, so the lanes never wrap and the sums are the exact integers the reference forms in int64.
// Compiled once per SIMD target.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/pixel.hpp"
#include "cpu/simd_kernels.hpp"

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/simd_small_int.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
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

// ---- 16-bit exact integer sums, modulo 2^16 (simd_kernels.hpp: Taps16, IntFinish16) -----------------
// Full-width i16 lanes, four vectors in flight (four independent accumulators per group), no multiply
// for weights of +1 or -1 (an add or a subtract), one multiply per group of equal weights otherwise.
// Wrapping arithmetic is a ring homomorphism Z -> Z/2^16: the 16 bits of the result are those of the
// exact integer sum, whatever wraps on the way.

using D16 = hn::ScalableTag<std::int16_t>;
using DU16 = hn::RebindToUnsigned<D16>;
using V16 = hn::Vec<D16>;
using VU16 = hn::Vec<DU16>;

template <class In>
HWY_INLINE V16 Load16(D16 d, const In* HWY_RESTRICT p) {
    if constexpr (sizeof(In) == 1) {
        return hn::BitCast(d, hn::PromoteTo(DU16(), hn::LoadU(hn::Rebind<std::uint8_t, D16>(), p)));
    } else {
        return hn::LoadU(d, p);
    }
}

// a[v] = the sum of the taps at samples s + v * N, v < V.
template <std::size_t V, class In>
HWY_INLINE void SumBlock(D16 d, const Taps16& t, std::size_t s, V16* HWY_RESTRICT a) {
    const std::size_t N = hn::Lanes(d);
    const In* const* rows = reinterpret_cast<const In* const*>(t.rows);
    std::size_t k = 0;
    for (std::size_t g = 0; g < t.groups; ++g) {
        const std::size_t end = t.end[g];
        V16 x[V];
        const In* p = rows[k] + s;
        for (std::size_t v = 0; v < V; ++v) x[v] = Load16(d, p + v * N);
        for (++k; k < end; ++k) {
            p = rows[k] + s;
            for (std::size_t v = 0; v < V; ++v) x[v] = hn::Add(x[v], Load16(d, p + v * N));
        }
        const std::int16_t w = t.w[g];
        if (w != 1 && w != -1) {
            const V16 wv = hn::Set(d, w);
            for (std::size_t v = 0; v < V; ++v) x[v] = hn::Mul(x[v], wv);
        }
        if (g == 0) {
            for (std::size_t v = 0; v < V; ++v) a[v] = w == -1 ? hn::Neg(x[v]) : x[v];
        } else if (w == -1) {
            for (std::size_t v = 0; v < V; ++v) a[v] = hn::Sub(a[v], x[v]);
        } else {
            for (std::size_t v = 0; v < V; ++v) a[v] = hn::Add(a[v], x[v]);
        }
    }
    if (t.groups == 0)
        for (std::size_t v = 0; v < V; ++v) a[v] = hn::Zero(d);
}

// The finish of IntFinish16 on one vector of sums. kKind: 0 no division, 1 shift, 2 multiply-high,
// 3 the 17-bit reciprocal; kTie: d even, halves to even.
template <int kKind, bool kTie>
struct Finish16 {
    DU16 du;
    VU16 add, magic, d, even, delta_add, delta_sub;
    int shift;
    explicit Finish16(const IntFinish16& f)
        : add(hn::Set(du, f.add)), magic(hn::Set(du, f.magic)), d(hn::Set(du, f.d)), even(hn::Set(du, std::uint16_t(0xFFFE))),
          delta_add(hn::Set(du, f.delta_add)), delta_sub(hn::Set(du, f.delta_sub)), shift(f.shift) {}
    HWY_INLINE VU16 operator()(V16 sum) const {
        return hn::SaturatedSub(hn::SaturatedAdd(Quotient(sum), delta_add), delta_sub);
    }
    // The quotient before the delta.
    HWY_INLINE VU16 Quotient(V16 sum) const {
        const VU16 m = hn::Add(hn::BitCast(du, sum), add);
        VU16 q = m;
        if constexpr (kKind == 1) q = hn::ShiftRightSame(m, shift);
        if constexpr (kKind == 2) q = hn::ShiftRightSame(hn::MulHigh(m, magic), shift);
        if constexpr (kKind == 3) {
            const VU16 t = hn::MulHigh(m, magic);
            q = hn::ShiftRightSame(hn::Add(t, hn::ShiftRight<1>(hn::Sub(m, t))), shift - 1);
        }
        if constexpr (kTie) {  // m = q d exactly: n / d was k + 1/2 and q = k + 1; keep it only if even
            const VU16 r = hn::Sub(m, hn::Mul(q, d));
            q = hn::IfThenElse(hn::Eq(r, hn::Zero(du)), hn::And(q, even), q);
        }
        return q;
    }
};

template <class Out>
struct Put16 {
    Out* HWY_RESTRICT dst;
    bool stream;
    template <class F>
    HWY_INLINE void operator()(const F& fin, V16 sum, std::size_t s) const {
        const DU16 du;
        const VU16 q = fin(sum);
        if constexpr (sizeof(Out) == 1) {
            const hn::Rebind<std::uint8_t, D16> d8;
            const auto b = hn::DemoteTo(d8, hn::BitCast(D16(), hn::Min(q, hn::Set(du, std::uint16_t(255)))));
            if (stream) hn::Stream(b, d8, dst + s);
            else hn::StoreU(b, d8, dst + s);
        } else {
            if (stream) hn::Stream(q, du, dst + s);
            else hn::StoreU(q, du, dst + s);
        }
    }
    // Samples [s, n) only, n - s < N.
    template <class F>
    HWY_INLINE void Tail(const F& fin, V16 sum, std::size_t s, std::size_t n) const {
        alignas(64) Out tmp[HWY_MAX_BYTES / 2];
        const Put16<Out> to_tmp{tmp, false};
        to_tmp(fin, sum, 0);
        std::memcpy(dst + s, tmp, (n - s) * sizeof(Out));
    }
};

// Samples of an output row before its first 64-byte boundary (at most n). The kernels below write those
// with ordinary stores (through a buffer) and start their vectors at the boundary: no store splits a
// cache line and the rest may stream. A sample's sum and finish do not depend on where its vector
// starts, so the bits are the same.
template <class Out>
std::size_t HeadSamples(const Out* p, std::size_t n) {
    const std::size_t bytes = (64 - reinterpret_cast<std::uintptr_t>(p) % 64) % 64;
    return bytes % sizeof(Out) ? 0 : std::min(n, bytes / sizeof(Out));
}
template <class Out>
bool StreamFrom(const Out* p, std::size_t n, std::size_t lanes) {
    return reinterpret_cast<std::uintptr_t>(p + HeadSamples(p, n)) % (lanes * sizeof(Out)) == 0;
}

template <class In, int kKind, bool kTie, class Out>
void SumFinishT(const Taps16& t, const IntFinish16& f, Out* HWY_RESTRICT dst, std::size_t n, bool stream,
                std::int16_t* HWY_RESTRICT sums) {
    const D16 d;
    const std::size_t N = hn::Lanes(d);
    const Finish16<kKind, kTie> fin(f);
    const Put16<Out> put{dst, stream};
    const Put16<Out> plain{dst, false};
    const std::size_t head = HeadSamples(dst, n);
    for (std::size_t s = 0; s < head; s += N) {
        V16 a[1];
        SumBlock<1, In>(d, t, s, a);
        if (sums) hn::StoreU(a[0], d, sums + s);
        plain.Tail(fin, a[0], s, std::min(head, s + N));
    }
    std::size_t s = head;
    for (; s + 4 * N <= n; s += 4 * N) {
        V16 a[4];
        SumBlock<4, In>(d, t, s, a);
        for (std::size_t v = 0; v < 4; ++v) {
            if (sums) hn::StoreU(a[v], d, sums + s + v * N);
            put(fin, a[v], s + v * N);
        }
    }
    for (; s < n; s += N) {
        V16 a[1];
        SumBlock<1, In>(d, t, s, a);
        if (sums) hn::StoreU(a[0], d, sums + s);
        if (s + N <= n) put(fin, a[0], s);
        else put.Tail(fin, a[0], s, n);
    }
}

template <int kKind, bool kTie, class Out>
void RunningT(std::int16_t* HWY_RESTRICT sums, const std::int16_t* HWY_RESTRICT add, const std::int16_t* HWY_RESTRICT sub,
              const IntFinish16& f, Out* HWY_RESTRICT dst, std::size_t n, bool stream) {
    const D16 d;
    const std::size_t N = hn::Lanes(d);
    const Finish16<kKind, kTie> fin(f);
    const Put16<Out> put{dst, stream};
    const Put16<Out> plain{dst, false};
    const std::size_t head = HeadSamples(dst, n);
    for (std::size_t s = 0; s < head; s += N) {
        const V16 c = hn::Add(hn::LoadU(d, sums + s), hn::Sub(hn::LoadU(d, add + s), hn::LoadU(d, sub + s)));
        // Only the head's sums move on: the vectors from `head` add their rows to the rest.
        alignas(64) std::int16_t tmp[HWY_MAX_BYTES / 2];
        hn::StoreU(c, d, tmp);
        std::memcpy(sums + s, tmp, (std::min(head, s + N) - s) * sizeof(std::int16_t));
        plain.Tail(fin, c, s, std::min(head, s + N));
    }
    for (std::size_t s = head; s < n; s += N) {
        const V16 c = hn::Add(hn::LoadU(d, sums + s), hn::Sub(hn::LoadU(d, add + s), hn::LoadU(d, sub + s)));
        hn::StoreU(c, d, sums + s);
        if (s + N <= n) put(fin, c, s);
        else put.Tail(fin, c, s, n);
    }
}

// Calls go.template operator()<kKind, kTie, Out>() for the finish's variant and the output type.
template <class Go>
HWY_INLINE void WithFinish(const IntFinish16& f, PixelType out, Go&& go) {
    auto typed = [&]<class Out>() HWY_ATTR {
        switch (f.kind * 2 + (f.tie ? 1 : 0)) {
        case 0: return go.template operator()<0, false, Out>();
        case 3: return go.template operator()<1, true, Out>();
        case 4: return go.template operator()<2, false, Out>();
        case 5: return go.template operator()<2, true, Out>();
        case 6: return go.template operator()<3, false, Out>();
        default: return go.template operator()<3, true, Out>();
        }
    };
    if (out == PixelType::u8) typed.template operator()<std::uint8_t>();
    else typed.template operator()<std::uint16_t>();
}

void SumTaps16(bool u8_in, const Taps16& t, std::int16_t* HWY_RESTRICT out, std::size_t n) {
    const D16 d;
    const std::size_t N = hn::Lanes(d);
    auto run = [&]<class In>() HWY_ATTR {
        // Vectors from out's first cache-line boundary (no store split), the samples before it by whole
        // vectors from 0 (written again, with the same values, by the first aligned ones).
        const std::size_t head = HeadSamples(out, n);
        for (std::size_t s = 0; s < head; s += N) {
            V16 a[1];
            SumBlock<1, In>(d, t, s, a);
            hn::StoreU(a[0], d, out + s);
        }
        std::size_t s = head;
        for (; s + 4 * N <= n; s += 4 * N) {
            V16 a[4];
            SumBlock<4, In>(d, t, s, a);
            for (std::size_t v = 0; v < 4; ++v) hn::StoreU(a[v], d, out + s + v * N);
        }
        for (; s < n; s += N) {
            V16 a[1];
            SumBlock<1, In>(d, t, s, a);
            hn::StoreU(a[0], d, out + s);
        }
    };
    if (u8_in) run.template operator()<std::uint8_t>();
    else run.template operator()<std::int16_t>();
}

void SumTaps16Finish(bool u8_in, const Taps16& t, const IntFinish16& f, PixelType out, void* dst, std::size_t n,
                     bool stream, std::int16_t* sums) {
    WithFinish(f, out, [&]<int kKind, bool kTie, class Out>() HWY_ATTR {
        stream = stream && StreamFrom(static_cast<Out*>(dst), n, hn::Lanes(D16()));
        if (u8_in) SumFinishT<std::uint8_t, kKind, kTie, Out>(t, f, static_cast<Out*>(dst), n, stream, sums);
        else SumFinishT<std::int16_t, kKind, kTie, Out>(t, f, static_cast<Out*>(dst), n, stream, sums);
    });
}

void RunningSum16Finish(std::int16_t* sums, const std::int16_t* add, const std::int16_t* sub, const IntFinish16& f,
                        PixelType out, void* dst, std::size_t n, bool stream) {
    WithFinish(f, out, [&]<int kKind, bool kTie, class Out>() HWY_ATTR {
        stream = stream && StreamFrom(static_cast<Out*>(dst), n, hn::Lanes(D16()));
        RunningT<kKind, kTie, Out>(sums, add, sub, f, static_cast<Out*>(dst), n, stream);
    });
}

void Sums16ToFloat(const std::int16_t* HWY_RESTRICT sums, std::int32_t base, float* HWY_RESTRICT out, std::size_t n) {
    const hn::ScalableTag<float> df;
    const hn::Rebind<std::uint16_t, decltype(df)> du;
    const hn::Rebind<std::int32_t, decltype(df)> di;
    const std::size_t N = hn::Lanes(df);
    const auto b16 = hn::Set(du, std::uint16_t(base));
    const auto bf = hn::Set(df, float(base));
    std::size_t s = 0;
    for (; s + N <= n; s += N) {
        const auto u = hn::Sub(hn::LoadU(du, reinterpret_cast<const std::uint16_t*>(sums) + s), b16);
        const auto i = hn::BitCast(di, hn::PromoteTo(hn::Rebind<std::uint32_t, decltype(df)>(), u));
        hn::StoreU(hn::Add(hn::ConvertTo(df, i), bf), df, out + s);
    }
    for (; s < n; ++s) out[s] = float(std::uint16_t(std::uint16_t(sums[s]) - std::uint16_t(base))) + float(base);
}

// ---- Boxes on u8, two samples a 16-bit lane (simd_kernels.hpp: Box16Row) ------------------------
// A block of B = 2N samples (one u8 vector) read as N 16-bit words: word j holds samples 2j (low byte)
// and 2j + 1 (high byte). The row sum of a tap's load splits into E (the low bytes' sum) and O (the high
// bytes'): O = sum of (word >> 8); the words' plain sum is E + 256 O (mod 2^16), so E = that - (O << 8),
// exactly, E being below 2^16. No shuffle: shifts and adds only, where widening each tap's load cost a
// cross-lane shuffle per tap and vector. 16-bit rows keep a block as E (N words) then O (N words), and
// every column operation is lane by lane; the finished bytes go back as qE | qO << 8, again no shuffle.
#if HWY_TARGET != HWY_SCALAR
using D8 = hn::ScalableTag<std::uint8_t>;
using DW = hn::Repartition<std::uint16_t, D8>;
using VW = hn::Vec<DW>;

// kTaps: the box's width where it is known at compile time (else 0 and `taps`).
template <std::size_t kTaps>
HWY_INLINE void BoxRowBlock(const std::uint8_t* HWY_RESTRICT p, std::size_t taps, std::size_t step, VW& e, VW& o) {
    const D8 d8;
    const DW dw;
    VW w = hn::BitCast(dw, hn::LoadU(d8, p));
    VW all = w, hi = hn::ShiftRight<8>(w);
    for (std::size_t i = 1; i < (kTaps ? kTaps : taps); ++i) {
        w = hn::BitCast(dw, hn::LoadU(d8, p + i * step));
        all = hn::Add(all, w);
        hi = hn::Add(hi, hn::ShiftRight<8>(w));
    }
    e = hn::Sub(all, hn::ShiftLeft<8>(hi));
    o = hi;
}

// The finished bytes of a block: kClamp also limits each quotient to 255 (needed where a delta or the
// range can take it past; always done for partial blocks).
template <bool kClamp, class F>
HWY_INLINE hn::Vec<D8> BoxPack(const F& fin, VW se, VW so) {
    const DW dw;
    VW qe, qo;
    if constexpr (kClamp) {
        qe = fin(hn::BitCast(D16(), se));
        qo = fin(hn::BitCast(D16(), so));
    } else {  // no delta either
        qe = fin.Quotient(hn::BitCast(D16(), se));
        qo = fin.Quotient(hn::BitCast(D16(), so));
    }
    if constexpr (kClamp) {
        qe = hn::Min(qe, hn::Set(dw, std::uint16_t(255)));
        qo = hn::Min(qo, hn::Set(dw, std::uint16_t(255)));
    }
    return hn::BitCast(D8(), hn::Or(qe, hn::ShiftLeft<8>(qo)));
}

// kMode 0: row pass only (out); 1: the first output row of a task (sums = the `count` rows, finished
// into dst); 2: row pass into out, fused with the running column sum (sums += out - sub) and finish.
// The u8 reads run r.prefetch bytes ahead (in-place input rows come from memory).
template <int kMode, int kKind, bool kTie, bool kPlain, std::size_t kTaps>
void Box16T(const Box16Row& r, std::int16_t* HWY_RESTRICT out, const std::int16_t* const* rows, std::size_t count,
            const std::int16_t* HWY_RESTRICT sub, std::int16_t* HWY_RESTRICT sums, const IntFinish16& f,
            std::uint8_t* HWY_RESTRICT dst, bool stream) {
    const D8 d8;
    const DW dw;
    const std::size_t N = hn::Lanes(dw), B = 2 * N;
    const Finish16<kKind, kTie> fin(f);
    const std::ptrdiff_t n = std::ptrdiff_t(r.n);
    // Full blocks store straight to dst where it is aligned to the blocks (streamed when asked).
    std::size_t g = 0;
    std::uint16_t* o16 = reinterpret_cast<std::uint16_t*>(out);
    std::uint16_t* s16 = reinterpret_cast<std::uint16_t*>(sums);
    const std::uint16_t* sub16 = reinterpret_cast<const std::uint16_t*>(sub);
    // kStore: 0 the samples [max(s, 0), min(s + B, n)) through a buffer, 1 unaligned, 2 aligned, 3 streamed.
    auto block = [&]<int kStore>(std::ptrdiff_t s) HWY_ATTR {
        const std::size_t at = std::size_t(s - r.s0);  // the block's words in the 16-bit rows
        VW se, so;
        if constexpr (kMode == 1) {
            se = hn::Zero(dw);
            so = se;
            for (std::size_t k = 0; k < count; ++k) {
                const std::uint16_t* row = reinterpret_cast<const std::uint16_t*>(rows[k]) + at;
                se = hn::Add(se, hn::Load(dw, row));
                so = hn::Add(so, hn::Load(dw, row + N));
            }
        } else {
            while (s >= r.src[g].end) ++g;
            hwy::Prefetch(r.src[g].base + s + r.prefetch);
            VW e, o;
            BoxRowBlock<kTaps>(r.src[g].base + s, r.taps, r.step, e, o);
            hn::Store(e, dw, o16 + at);
            hn::Store(o, dw, o16 + at + N);
            if constexpr (kMode == 0) return;
            se = hn::Add(hn::Load(dw, s16 + at), hn::Sub(e, hn::Load(dw, sub16 + at)));
            so = hn::Add(hn::Load(dw, s16 + at + N), hn::Sub(o, hn::Load(dw, sub16 + at + N)));
        }
        if constexpr (kMode != 0) {
            hn::Store(se, dw, s16 + at);
            hn::Store(so, dw, s16 + at + N);
            if constexpr (kStore == 0) {
                alignas(64) std::uint8_t tmp[HWY_MAX_BYTES];
                hn::Store(BoxPack<true>(fin, se, so), d8, tmp);
                const std::ptrdiff_t a = std::max<std::ptrdiff_t>(s, 0), b = std::min<std::ptrdiff_t>(s + std::ptrdiff_t(B), n);
                std::memcpy(dst + a, tmp + (a - s), std::size_t(b - a));
            } else {
                const auto q = BoxPack<!kPlain>(fin, se, so);
                if constexpr (kStore == 1) hn::StoreU(q, d8, dst + s);
                if constexpr (kStore == 2) hn::Store(q, d8, dst + s);
                if constexpr (kStore == 3) hn::Stream(q, d8, dst + s);
            }
        }
    };
    // A partial block before 0, whole blocks [full, full_end), a partial block at full_end.
    const std::ptrdiff_t Bs = std::ptrdiff_t(B);
    const std::ptrdiff_t full = r.s0 < 0 ? r.s0 + Bs : r.s0;
    const std::ptrdiff_t full_end = n > full ? full + (n - full) / Bs * Bs : full;
    if (r.s0 < 0) block.template operator()<0>(r.s0);
    auto whole = [&]<int kStore>() HWY_ATTR {
        for (std::ptrdiff_t s = full; s < full_end; s += Bs) block.template operator()<kStore>(s);
    };
    if ((reinterpret_cast<std::uintptr_t>(dst) + std::uintptr_t(full)) % B != 0) whole.template operator()<1>();
    else if (stream) whole.template operator()<3>();
    else whole.template operator()<2>();
    if (full_end < n) block.template operator()<0>(full_end);
}
#else
// One lane: a block of one sample.
template <int kMode, int kKind, bool kTie, bool kPlain, std::size_t kTaps>
void Box16T(const Box16Row& r, std::int16_t* HWY_RESTRICT out, const std::int16_t* const* rows, std::size_t count,
            const std::int16_t* HWY_RESTRICT sub, std::int16_t* HWY_RESTRICT sums, const IntFinish16& f,
            std::uint8_t* HWY_RESTRICT dst, bool) {
    const D16 d;
    const Finish16<kKind, kTie> fin(f);
    const std::ptrdiff_t n = std::ptrdiff_t(r.n);
    std::size_t g = 0;
    for (std::ptrdiff_t s = r.s0; s < n; ++s) {
        const std::size_t at = std::size_t(s - r.s0);
        std::uint16_t sum = 0;
        if constexpr (kMode == 1) {
            for (std::size_t k = 0; k < count; ++k) sum = std::uint16_t(sum + std::uint16_t(rows[k][at]));
        } else {
            while (s >= r.src[g].end) ++g;
            std::uint16_t t = 0;
            for (std::size_t i = 0; i < r.taps; ++i) t = std::uint16_t(t + r.src[g].base[s + std::ptrdiff_t(i * r.step)]);
            out[at] = std::int16_t(t);
            if constexpr (kMode == 0) continue;
            sum = std::uint16_t(std::uint16_t(sums[at]) + t - std::uint16_t(sub[at]));
        }
        if constexpr (kMode != 0) {
            sums[at] = std::int16_t(sum);
            const std::uint16_t q = hn::GetLane(fin(hn::Set(d, std::int16_t(sum))));
            if (s >= 0) dst[s] = std::uint8_t(std::min<std::uint16_t>(q, 255));
        }
    }
}
#endif

template <int kMode>
void Box16Go(const Box16Row& r, std::int16_t* out, const std::int16_t* const* rows, std::size_t count,
             const std::int16_t* sub, std::int16_t* sums, const IntFinish16& f, std::uint8_t* dst, bool stream) {
    if constexpr (kMode == 0) {
        Box16T<0, 0, false, true, 0>(r, out, rows, count, sub, sums, f, dst, stream);
    } else {
        // No delta, and no quotient past 255 over the range: the clamp goes.
        const bool plain = f.delta_add == 0 && f.delta_sub == 0 && f.mmax / f.d <= 255;
        auto go = [&]<int kKind, bool kTie>() HWY_ATTR {
            auto taps = [&]<bool kPlain>() HWY_ATTR {
                // The running pass with the common widths unrolled.
                if constexpr (kMode == 2) {
                    if (r.taps == 3) return Box16T<kMode, kKind, kTie, kPlain, 3>(r, out, rows, count, sub, sums, f, dst, stream);
                    if (r.taps == 5) return Box16T<kMode, kKind, kTie, kPlain, 5>(r, out, rows, count, sub, sums, f, dst, stream);
                }
                Box16T<kMode, kKind, kTie, kPlain, 0>(r, out, rows, count, sub, sums, f, dst, stream);
            };
            if (plain) taps.template operator()<true>();
            else taps.template operator()<false>();
        };
        switch (f.kind * 2 + (f.tie ? 1 : 0)) {
        case 0: return go.template operator()<0, false>();
        case 3: return go.template operator()<1, true>();
        case 4: return go.template operator()<2, false>();
        case 5: return go.template operator()<2, true>();
        case 6: return go.template operator()<3, false>();
        default: return go.template operator()<3, true>();
        }
    }
}

std::size_t Box16Block() {
#if HWY_TARGET == HWY_SCALAR
    return 1;
#else
    return hn::Lanes(D8());
#endif
}
void Box16Rows(const Box16Row& r, std::int16_t* out) { Box16Go<0>(r, out, nullptr, 0, nullptr, nullptr, IntFinish16{}, nullptr, false); }
void Box16First(const Box16Row& r, const std::int16_t* const* rows, std::size_t count, std::int16_t* sums,
                const IntFinish16& f, std::uint8_t* dst, bool stream) {
    Box16Go<1>(r, nullptr, rows, count, nullptr, sums, f, dst, stream);
}
void Box16Running(const Box16Row& r, std::int16_t* out, const std::int16_t* sub, std::int16_t* sums, const IntFinish16& f,
                  std::uint8_t* dst, bool stream) {
    Box16Go<2>(r, out, nullptr, 0, sub, sums, f, dst, stream);
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
    // Up to the first cache-line boundary of dst through a buffer, then aligned vectors.
    const std::size_t head = HeadSamples(dst, n);
    for (std::size_t s = 0; s < head; s += N) {
        auto a = hn::Zero(d);
        for (std::size_t k = 0; k < count; ++k)
            a = hn::Add(a, hn::MulFixedPoint15(hn::LoadU(d, rows[k] + s), hn::Set(d, w[k])));
        alignas(64) std::uint8_t buf[HWY_MAX_BYTES / 2];
        hn::StoreU(hn::DemoteTo(d8, hn::ShiftRight<7>(hn::SaturatedAdd(a, half))), d8, buf);
        std::memcpy(dst + s, buf, std::min(N, head - s));
    }
    std::size_t s = head;
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
    if (stream && StreamFrom(dst, n, hn::Lanes(hn::ScalableTag<std::int16_t>()))) SumRowsQ15T<true>(rows, w, count, dst, n);
    else SumRowsQ15T<false>(rows, w, count, dst, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace apron::cpu::simd {

HWY_EXPORT(SumTaps16);
HWY_EXPORT(SumTaps16Finish);
HWY_EXPORT(RunningSum16Finish);
HWY_EXPORT(Sums16ToFloat);
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

namespace {
// floor(a / b) for b > 0.
std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
} // namespace

// m = n + floor(d/2) + K d with n = S + offset: floor(m / d) - K is n / d rounded half up, the value for
// odd d (n / d is never a tie there); for even d the tie (m a multiple of d) goes down when the quotient
// is odd. K is the smallest that makes m >= 0 over the range, made even when d is (the parity of the
// quotient is then that of the result). The reciprocal M = ceil(2^k / d), e = M d - 2^k < d: for
// m = q d + r, m M / 2^k = q + r / d + m e / (d 2^k), so floor(m M / 2^k) = q whenever m e < 2^k
// (then r + m e / 2^k < d); the search takes the first k where that holds for m <= mmax, a 16-bit M
// first (one multiply-high and a shift), else M in [2^16, 2^17) (k = 16 + shift; a correction step).
bool int_finish16(const LinearFinish& f, PixelType out, std::int64_t smin, std::int64_t smax, IntFinish16& r) {
    if (!f.integer_rounding || (out != PixelType::u8 && out != PixelType::u16) || f.denominator < 1 ||
        f.denominator > 65535 || smin > smax || smax - smin > 65535)
        return false;
    constexpr std::int64_t big = std::int64_t(1) << 40;
    if (f.offset <= -big || f.offset >= big || f.delta_int <= -big || f.delta_int >= big || smin <= -big || smax >= big)
        return false;
    const std::int64_t d = f.denominator, h = d / 2;
    const std::int64_t lo = smin + f.offset + h, hi = smax + f.offset + h;
    std::int64_t K = -floor_div(lo, d);
    if (d % 2 == 0 && (K & 1)) ++K;
    const std::int64_t mmax = hi + K * d;
    if (mmax > 65535) return false;
    r = IntFinish16{};
    r.add = std::uint16_t(std::uint64_t(f.offset + h + K * d) & 0xFFFF);
    const std::int64_t delta = std::clamp<std::int64_t>(f.delta_int - K, -65535, 65535);
    r.delta_add = std::uint16_t(delta > 0 ? delta : 0);
    r.delta_sub = std::uint16_t(delta < 0 ? -delta : 0);
    r.d = std::uint16_t(d);
    r.mmax = std::uint32_t(mmax);
    if (d == 1) return true;
    r.tie = d % 2 == 0;
    if ((d & (d - 1)) == 0) {
        r.kind = 1;
        while ((std::int64_t(1) << r.shift) < d) ++r.shift;
        return true;
    }
    for (int wide = 0; wide < 2; ++wide)
        for (int shift = wide; shift <= 16; ++shift) {
            const std::uint64_t p = std::uint64_t(1) << (16 + shift);
            const std::uint64_t M = (p + std::uint64_t(d) - 1) / std::uint64_t(d);
            if (M >= (std::uint64_t(65536) << wide)) break;
            if (M < (std::uint64_t(wide) << 16)) continue;
            if ((M * std::uint64_t(d) - p) * std::uint64_t(mmax) < p) {
                r.kind = 2 + wide;
                r.magic = std::uint16_t(M & 0xFFFF);
                r.shift = shift;
                return true;
            }
        }
    return false;
}
HWY_EXPORT(Box16Block);
HWY_EXPORT(Box16Rows);
HWY_EXPORT(Box16First);
HWY_EXPORT(Box16Running);
std::size_t box16_block() { return HWY_DYNAMIC_DISPATCH(Box16Block)(); }
void box16_rows(const Box16Row& r, std::int16_t* out) { HWY_DYNAMIC_DISPATCH(Box16Rows)(r, out); }
void box16_first(const Box16Row& r, const std::int16_t* const* rows, std::size_t count, std::int16_t* sums,
                 const IntFinish16& f, std::uint8_t* dst, bool stream) {
    HWY_DYNAMIC_DISPATCH(Box16First)(r, rows, count, sums, f, dst, stream);
}
void box16_running(const Box16Row& r, std::int16_t* out, const std::int16_t* sub, std::int16_t* sums,
                   const IntFinish16& f, std::uint8_t* dst, bool stream) {
    HWY_DYNAMIC_DISPATCH(Box16Running)(r, out, sub, sums, f, dst, stream);
}
void sum_taps16(bool u8_in, const Taps16& t, std::int16_t* out, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(SumTaps16)(u8_in, t, out, n);
}
void sum_taps16_finish(bool u8_in, const Taps16& t, const IntFinish16& f, PixelType out, void* dst, std::size_t n,
                       bool stream, std::int16_t* sums) {
    HWY_DYNAMIC_DISPATCH(SumTaps16Finish)(u8_in, t, f, out, dst, n, stream, sums);
}
void running_sum16_finish(std::int16_t* sums, const std::int16_t* add, const std::int16_t* sub, const IntFinish16& f,
                          PixelType out, void* dst, std::size_t n, bool stream) {
    HWY_DYNAMIC_DISPATCH(RunningSum16Finish)(sums, add, sub, f, out, dst, n, stream);
}
void sums16_to_float(const std::int16_t* sums, std::int32_t base, float* out, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(Sums16ToFloat)(sums, base, out, n);
}

} // namespace apron::cpu::simd
#endif
