// The one-pass small-rectangle morphology kernels, included once per SIMD target by the files that
// instantiate them (simd_morph_rect_*.cpp: one per pixel type and fused combine, so the GPU machine's cores
// compile them side by side: all ten in one file took 335 s there, the build's longest step), as
// Highway's -inl.h headers are (the toggle guard below). simd_morph_rect.cpp dispatches between them.
//
// Small rectangles (up to max_small_rect per side) in one pass over memory: a task's rows go through a
// ring of mh + 1 horizontal extrema that stays in L1 / L2, and each output row is written once.
//
// The old path (doubling + van Herk, fast_morph.cpp) wrote about 6-8 rows in flight per output row; here
// output rows go in pairs, and one sweep along the pair computes the horizontal extrema of the two new
// input rows (mw loads at offsets 0, C, .., (mw - 1) C each, straight from the input row), stores them
// in the ring for the next pairs, and takes the vertical extremum with the mh - 1 older rows of the ring:
// rows o+1 .. o+mh-1 are shared by outputs o and o+1, so a pair costs 2 mw + mh - 1 loads, 2 (mw - 1) +
// mh extrema, 2 ring stores and 2 output stores per vector. Interleaved channels are a row of samples
// with a horizontal step of C, so colour runs at gray's rate per sample.
//
// Outputs whose window reaches outside the image (at most mw - 1 pixels a row) read a small padded copy
// of the row's ends, built from the column map; everything else reads the input in place. f32 samples
// become order keys first (core/morph_value.hpp, a padded row of keys per input row), as on the other
// morphology paths, and values again on output. Output stores are aligned (the ring rows share the
// output's offset from a vector boundary), non-temporal for large outputs.
//
// Square elements take the fused sweep; other small rectangles the same ring with a horizontal pass per
// row and a vertical pass per pair.
//
// The last pass of gradient, top-hat and black-hat (u8 / u16) also takes the combine that follows it
// (MorphRectTask::other): each output vector is the saturated difference with the other image's vector,
// formed in registers before the store (Epi), so the extremum image is never written nor read back.
#if defined(APRON_CPU_SIMD_MORPH_RECT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef APRON_CPU_SIMD_MORPH_RECT_INL_H_
#undef APRON_CPU_SIMD_MORPH_RECT_INL_H_
#else
#define APRON_CPU_SIMD_MORPH_RECT_INL_H_
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "core/morph_value.hpp"
#include "cpu/simd_kernels.hpp"
#include "cpu/simd_morph-inl.h"

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

enum Store { kUnaligned, kAligned, kStreamed };

template <Store kHow, class D, class V, class T>
HWY_INLINE void Put(D d, V v, T* p) {
    if constexpr (kHow == kStreamed) hn::Stream(v, d, p);
    else if constexpr (kHow == kAligned) hn::Store(v, d, p);
    else hn::StoreU(v, d, p);
}

// A vector of ring elements to the output type (f32: keys to values).
template <Store kHow, class T, class D, class V>
HWY_INLINE void PutOut(D d, V v, T* p) {
    if constexpr (std::is_same_v<T, float>) Put<kHow>(hn::RebindToFloat<D>(), KeyValues(d, v), p);
    else Put<kHow>(d, v, p);
}

template <class T, class B>
HWY_INLINE T OutS(B v) {
    if constexpr (std::is_same_v<T, float>) return morph_key_value(v);
    else return v;
}

// The fused combine (MorphRectTask::other, u8 / u16): SaturatedSub(other ^ flip, v ^ flip) is other - v
// clamped at 0 with flip = 0, and v - other with flip all ones (~x is max - x). Without kEpi, v itself.
template <bool kEpi, class D, class V, class T>
HWY_INLINE V Epi(D d, V v, const T* other, V flip) {
    if constexpr (kEpi) return hn::SaturatedSub(hn::Xor(hn::LoadU(d, other), flip), hn::Xor(v, flip));
    else return (void)d, (void)other, (void)flip, v;
}
template <bool kEpi, class T, class B>
HWY_INLINE T EpiS(B v, const T* other, B flip) {
    if constexpr (kEpi) {
        const B x = B(*other ^ flip), y = B(v ^ flip);
        return x > y ? T(x - y) : T(0);
    } else {
        return (void)other, (void)flip, OutS<T>(v);
    }
}

// Vector positions covering [a, b) (b - a >= N): a, then the positions where the output is aligned
// (s + m a multiple of N) inside, then b - N; f(s, aligned). Without `align`, all unaligned.
template <class F>
HWY_INLINE void Sweep(std::size_t a, std::size_t b, std::size_t N, std::size_t m, bool align, F&& f) {
    std::size_t s = align ? a + (N - (a + m) % N) % N : a;
    if (s != a) f(a, false);
    for (; s + N <= b; s += N) f(s, align);
    if (s < b) f(b - N, false);
}

// Horizontal extremum of one vector: src[i C] for i < MW.
template <bool kMax, int MW, class D, class B>
HWY_INLINE hn::Vec<D> HVec(D d, const B* src, std::size_t C) {
    auto v = hn::LoadU(d, src);
    for (int i = 1; i < MW; ++i) v = Pick<kMax>(v, hn::LoadU(d, src + std::size_t(i) * C));
    return v;
}

// dst[s] = extremum over i < MW of src[s + i C], for s < n exactly; reads src[0, n + (MW - 1) C).
template <bool kMax, int MW, class B>
HWY_NOINLINE void HRow(const B* HWY_RESTRICT src, std::size_t C, B* HWY_RESTRICT dst, std::size_t n) {
    const hn::ScalableTag<B> d;
    const std::size_t N = hn::Lanes(d);
    if (n < N) {
        for (std::size_t s = 0; s < n; ++s) {
            B v = src[s];
            for (int i = 1; i < MW; ++i) v = PickScalar<kMax>(v, src[s + std::size_t(i) * C]);
            dst[s] = v;
        }
        return;
    }
    std::size_t s = 0;
    for (; s + N <= n; s += N) hn::StoreU(HVec<kMax, MW>(d, src + s, C), d, dst + s);
    if (s < n) hn::StoreU(HVec<kMax, MW>(d, src + n - N, C), d, dst + n - N);  // the last vector again
}

// Rows of the ring and outputs of one pair (or one row), for the vertical passes.
template <class T, class B>
struct Pair {
    const B* old[max_small_rect + 1];  // ring rows o, o+1, ..
    B* fresh[2];                       // fused: ring rows for the two new input rows o+mh-1, o+mh
    T* out[2];
    const T* other[2];  // the fused combine's rows for out[0], out[1] (without it, any readable rows)
    B flip;             // the fused combine's direction (Epi)
    std::size_t n, m;  // samples; output 0's (and the ring's) offset from a vector boundary
    bool align;        // both outputs and the ring share that offset
};

// Two output rows: out0 = extremum of old[0 .. MH), out1 = of old[1 .. MH].
template <bool kMax, int MH, bool kStream, bool kEpi, class T, class B>
HWY_NOINLINE void VPair(const Pair<T, B>& p) {
    const hn::ScalableTag<B> d;
    const std::size_t N = hn::Lanes(d), n = p.n;
    std::array<const B*, MH + 1> r;
    for (int j = 0; j <= MH; ++j) r[std::size_t(j)] = p.old[j];
    T* HWY_RESTRICT out0 = p.out[0];
    T* HWY_RESTRICT out1 = p.out[1];
    const T* const x0 = p.other[0];
    const T* const x1 = p.other[1];
    if (n < N) {
        for (std::size_t s = 0; s < n; ++s) {
            B c = r[1][s];
            for (int j = 2; j < MH; ++j) c = PickScalar<kMax>(c, r[std::size_t(j)][s]);
            out0[s] = EpiS<kEpi, T>(MH >= 2 ? PickScalar<kMax>(c, r[0][s]) : r[0][s], x0 + s, p.flip);
            out1[s] = EpiS<kEpi, T>(MH >= 2 ? PickScalar<kMax>(c, r[MH][s]) : c, x1 + s, p.flip);
        }
        return;
    }
    const auto flip = hn::Set(d, p.flip);
    Sweep(0, n, N, p.m, p.align, [&](std::size_t s, bool aligned) HWY_ATTR {
        auto o0 = hn::LoadU(d, r[0] + s), o1 = hn::LoadU(d, r[MH] + s);
        if constexpr (MH >= 2) {
            auto c = hn::LoadU(d, r[1] + s);
            for (int j = 2; j < MH; ++j) c = Pick<kMax>(c, hn::LoadU(d, r[std::size_t(j)] + s));
            o0 = Pick<kMax>(c, o0);
            o1 = Pick<kMax>(c, o1);
        }
        o0 = Epi<kEpi>(d, o0, x0 + s, flip);
        o1 = Epi<kEpi>(d, o1, x1 + s, flip);
        if (aligned) {
            PutOut<kStream ? kStreamed : kAligned>(d, o0, out0 + s);
            PutOut<kStream ? kStreamed : kAligned>(d, o1, out1 + s);
        } else {
            PutOut<kUnaligned>(d, o0, out0 + s);
            PutOut<kUnaligned>(d, o1, out1 + s);
        }
    });
}

// One output row, any height (the odd last row of a task).
template <bool kMax, bool kEpi, class T, class B>
void VOne(const B* const* rows, int mh, T* HWY_RESTRICT out, std::size_t n, const T* other, B flip_value) {
    const hn::ScalableTag<B> d;
    const std::size_t N = hn::Lanes(d);
    if (n < N) {
        for (std::size_t s = 0; s < n; ++s) {
            B c = rows[0][s];
            for (int j = 1; j < mh; ++j) c = PickScalar<kMax>(c, rows[j][s]);
            out[s] = EpiS<kEpi, T>(c, other + s, flip_value);
        }
        return;
    }
    const auto flip = hn::Set(d, flip_value);
    Sweep(0, n, N, 0, false, [&](std::size_t s, bool) HWY_ATTR {
        auto c = hn::LoadU(d, rows[0] + s);
        for (int j = 1; j < mh; ++j) c = Pick<kMax>(c, hn::LoadU(d, rows[j] + s));
        PutOut<kUnaligned>(d, Epi<kEpi>(d, c, other + s, flip), out + s);
    });
}

// Where the fused sweep reads the two new input rows: positions [0, el) from the padded copies left[k]
// (left[k][s] is padded sample s), [ma, mb) from mid[k][off + s] (the input row, or f32's padded keys),
// [n - er, n) from right[k] (right[k][j] is padded sample n - er + j).
template <class B>
struct FusedSources {
    const B* left[2];
    const B* mid[2];
    const B* ahead[2];  // rows read by later pairs, prefetched along mid (same offsets)
    void* ahead_out[2]; // output rows of the next pair, prefetched for writing (nullptr: none)
    const void* ahead_other[2];  // the fused combine's rows of the next pair, prefetched (kEpi only)
    const B* right[2];
    std::ptrdiff_t off;
    std::size_t C, el, ma, mb, er;
};

// The same from two loads, where every tap lies within 16 bytes: x = src[0 ..], y = src[16 bytes ..];
// tap i is x shifted by i C samples within each 128-bit block, with y's block supplying the rest
// (alignr), so the K - 1 shifted loads that each cross a cache line become one load and K - 1 shuffles.
// Reads src up to 16 bytes past the vector.
template <int kBytes, class D, class V>
HWY_INLINE V Tap(D d, V x, V y) {
    if constexpr (kBytes == 0) return x;
    else if constexpr (kBytes == 16) return y;
#if HWY_TARGET != HWY_SCALAR
    else return hn::CombineShiftRightBytes<kBytes>(d, y, x);
#else
    else return (void)d, x;  // not reached: kShuffles is false without 16-byte vectors
#endif
}
template <class D, class B, int K, std::size_t C>
constexpr bool kShuffles = HWY_TARGET != HWY_SCALAR && sizeof(hn::Vec<D>) >= 16 && (K - 1) * C * sizeof(B) <= 16;
template <bool kMax, std::size_t C, class D, class B, int... I>
HWY_INLINE hn::Vec<D> HShuffle(D d, const B* src, std::integer_sequence<int, I...>) {
    const auto x = hn::LoadU(d, src), y = hn::LoadU(d, src + 16 / sizeof(B));
    auto v = x;
    ((v = Pick<kMax>(v, Tap<int((I + 1) * C * sizeof(B))>(d, x, y))), ...);
    return v;
}
template <bool kMax, int K, std::size_t C, bool kShuffle, class D, class B>
HWY_INLINE hn::Vec<D> HTaps(D d, const B* src) {
    if constexpr (kShuffle) return HShuffle<kMax, C>(d, src, std::make_integer_sequence<int, K - 1>());
    else return HVec<kMax, K>(d, src, C);
}

// One vector position of the fused sweep: horizontal extrema of the new rows (at s0, s1), stored in the
// ring (f0, f1), and the two outputs. Everything by value so that the pointers stay in registers (u8
// stores may alias anything in memory).
template <bool kMax, int K, std::size_t C, Store kHow, bool kEpi, bool kShuffle = false, class D, class T, class B>
HWY_INLINE void FusedStep(D d, const B* s0, const B* s1, const std::array<const B*, K>& old, B* f0, B* f1, T* out0,
                          T* out1, const T* x0, const T* x1, hn::Vec<D> flip) {
    const auto h0 = HTaps<kMax, K, C, kShuffle>(d, s0), h1 = HTaps<kMax, K, C, kShuffle>(d, s1);
    Put<kHow == kStreamed ? kAligned : kHow>(d, h0, f0);
    Put<kHow == kStreamed ? kAligned : kHow>(d, h1, f1);
    auto o0 = h0, o1 = h1;
    if constexpr (K >= 2) {
        auto c = h0;  // rows o+1 .. o+K-1
        for (int j = 1; j + 1 < K; ++j) c = Pick<kMax>(c, hn::LoadU(d, old[std::size_t(j)]));
        o0 = Pick<kMax>(c, hn::LoadU(d, old[0]));
        o1 = Pick<kMax>(c, h1);
    }
    PutOut<kHow>(d, Epi<kEpi>(d, o0, x0, flip), out0);
    PutOut<kHow>(d, Epi<kEpi>(d, o1, x1, flip), out1);
}

// The aligned run of the middle: positions s = a, a + N, .. while s + N <= b.
template <bool kMax, int K, std::size_t C, Store kHow, bool kPrefetchOut, bool kEpi, class T, class B>
HWY_INLINE std::size_t FusedRun(std::size_t a, std::size_t b, const B* mid0, const B* mid1, const B* pf0, const B* pf1,
                                T* pfo0, T* pfo1, std::array<const B*, K> old, B* f0, B* f1, T* out0, T* out1,
                                const T* x0, const T* x1, B flip_value, const T* pfx0, const T* pfx1) {
    const hn::ScalableTag<B> d;
    const std::size_t N = hn::Lanes(d);
    constexpr bool kShuffle = kShuffles<decltype(d), B, K, C>;
    // The shuffles' second load reaches this far past the taps: stop before it leaves [a, b + (K-1) C).
    constexpr std::size_t over = kShuffle ? 16 / sizeof(B) - std::size_t(K - 1) * C : 0;
    const auto flip = hn::Set(d, flip_value);
    std::size_t s = a;
    for (; s + N + over <= b; s += N) {
        hwy::Prefetch(pf0 + s);
        hwy::Prefetch(pf1 + s);
        if constexpr (kPrefetchOut) {
            __builtin_prefetch(pfo0 + s, 1);
            __builtin_prefetch(pfo1 + s, 1);
        }
        if constexpr (kEpi) {
            hwy::Prefetch(pfx0 + s);
            hwy::Prefetch(pfx1 + s);
        }
        std::array<const B*, K> at;
        for (int j = 0; j + 1 < K; ++j) at[std::size_t(j)] = old[std::size_t(j)] + s;
        FusedStep<kMax, K, C, kHow, kEpi, kShuffle>(d, mid0 + s, mid1 + s, at, f0 + s, f1 + s, out0 + s, out1 + s, x0 + s,
                                                   x1 + s, flip);
    }
    return s;
}

// Output rows o and o+1 of a square K x K element over C channels, with the horizontal extrema of input
// rows o+K-1 and o+K computed on the way (and stored in the ring for the next pairs).
template <bool kMax, int K, std::size_t C, bool kEpi, class T, class B>
HWY_NOINLINE void Fused(const Pair<T, B>& p, const FusedSources<B>& f, bool stream) {
    const hn::ScalableTag<B> d;
    const std::size_t N = hn::Lanes(d), n = p.n;
    std::array<const B*, K> old;  // rows o .. o+K-2
    for (int j = 0; j + 1 < K; ++j) old[std::size_t(j)] = p.old[j];
    B* const f0 = p.fresh[0];
    B* const f1 = p.fresh[1];
    T* const out0 = p.out[0];
    T* const out1 = p.out[1];
    const T* const x0 = p.other[0];
    const T* const x1 = p.other[1];
    const auto flip = hn::Set(d, p.flip);
    auto one = [&](const B* s0, const B* s1, std::size_t s) HWY_ATTR {
        std::array<const B*, K> at;
        for (int j = 0; j + 1 < K; ++j) at[std::size_t(j)] = old[std::size_t(j)] + s;
        FusedStep<kMax, K, C, kUnaligned, kEpi>(d, s0, s1, at, f0 + s, f1 + s, out0 + s, out1 + s, x0 + s, x1 + s, flip);
    };
    if (f.el) {
        for (std::size_t s = 0; s + N <= f.el; s += N) one(f.left[0] + s, f.left[1] + s, s);
        if (f.el % N) one(f.left[0] + f.el - N, f.left[1] + f.el - N, f.el - N);
    }
    // Padded sample s of new row k is mid[k][s] for s in [ma, mb + (K-1) C).
    const B* mid0 = f.mid[0] + f.off;
    const B* mid1 = f.mid[1] + f.off;
    const std::size_t a = f.ma, b = f.mb;
    // From the first aligned position, the shuffled run; rows whose outputs do not share one offset (a pitch
    // that is not a multiple of the vector) take plain vectors from a.
    std::size_t s = p.align ? a + (N - (a + p.m) % N) % N : a;
    if (s != a) one(mid0 + a, mid1 + a, a);
    if (p.align && s + N <= b) {
        const B* pf0 = f.ahead[0] + f.off;
        const B* pf1 = f.ahead[1] + f.off;
        T* pfo0 = static_cast<T*>(f.ahead_out[0]);
        T* pfo1 = static_cast<T*>(f.ahead_out[1]);
        const T* pfx0 = static_cast<const T*>(f.ahead_other[0]);
        const T* pfx1 = static_cast<const T*>(f.ahead_other[1]);
        if (stream) s = FusedRun<kMax, K, C, kStreamed, false, kEpi>(s, b, mid0, mid1, pf0, pf1, pfo0, pfo1, old, f0, f1, out0, out1, x0, x1, p.flip, pfx0, pfx1);
        else if (pfo0) s = FusedRun<kMax, K, C, kAligned, true, kEpi>(s, b, mid0, mid1, pf0, pf1, pfo0, pfo1, old, f0, f1, out0, out1, x0, x1, p.flip, pfx0, pfx1);
        else s = FusedRun<kMax, K, C, kAligned, false, kEpi>(s, b, mid0, mid1, pf0, pf1, pfo0, pfo1, old, f0, f1, out0, out1, x0, x1, p.flip, pfx0, pfx1);
    }
    for (; s + N <= b; s += N) one(mid0 + s, mid1 + s, s);  // where the shuffles stopped early
    if (s < b) one(mid0 + b - N, mid1 + b - N, b - N);
    if (f.er) {
        const std::size_t s0 = n - f.er;
        for (std::size_t t = s0; t + N <= n; t += N) one(f.right[0] + (t - s0), f.right[1] + (t - s0), t);
        if (f.er % N) one(f.right[0] + f.er - N, f.right[1] + f.er - N, n - N);
    }
}

// f32 samples to order keys (morph_key), n exactly.
HWY_INLINE void Keys(bool max, const float* HWY_RESTRICT src, std::int32_t* HWY_RESTRICT dst, std::size_t n) {
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

template <bool kMax, class B, int... I>
constexpr auto HTable(std::integer_sequence<int, I...>) {
    return std::array{&HRow<kMax, I + 1, B>...};
}
template <bool kMax, bool kStream, bool kEpi, class T, class B, int... I>
constexpr auto VTable(std::integer_sequence<int, I...>) {
    return std::array{&VPair<kMax, I + 1, kStream, kEpi, T, B>...};
}
// Fused kernels for K = 2 .. max_small_rect (index K - 2) and C = 1 .. 4 (index C - 1).
template <bool kMax, std::size_t C, bool kEpi, class T, class B, int... I>
constexpr auto FRow(std::integer_sequence<int, I...>) {
    return std::array{&Fused<kMax, I + 2, C, kEpi, T, B>...};
}
template <bool kMax, bool kEpi, class T, class B>
constexpr auto FTable() {
    constexpr auto seq = std::make_integer_sequence<int, max_small_rect - 1>();
    return std::array{FRow<kMax, 1, kEpi, T, B>(seq), FRow<kMax, 2, kEpi, T, B>(seq), FRow<kMax, 3, kEpi, T, B>(seq),
                      FRow<kMax, 4, kEpi, T, B>(seq)};
}

// kEpi: with the fused combine (t.other; u8 / u16 only).
template <bool kMax, bool kEpi, class T, class B>
void Task(const MorphRectTask& t) {
    constexpr bool kKeys = std::is_same_v<T, float>;
    constexpr auto seq = std::make_integer_sequence<int, max_small_rect>();
    static constexpr auto hrow = HTable<kMax, B>(seq);
    static constexpr auto vpair = VTable<kMax, false, kEpi, T, B>(seq);
    static constexpr auto vpair_stream = VTable<kMax, true, kEpi, T, B>(seq);
    static constexpr auto fused = FTable<kMax, kEpi, T, B>();
    const hn::ScalableTag<B> d;
    const std::size_t N = hn::Lanes(d);
    const auto h = hrow[std::size_t(t.mw - 1)];
    const int mw = t.mw, mh = t.mh;
    const std::size_t C = std::size_t(t.channels), n = std::size_t(t.pixels) * C;
    const std::size_t halo = std::size_t(mw - 1) * C;
    const int right = t.pixels - t.left - t.middle;
    const B fill = B(t.fill);

    // The outputs' offset from a vector boundary (in samples), shared by every ring row.
    const std::size_t vec_bytes = N * sizeof(T);
    const auto out_addr = reinterpret_cast<std::uintptr_t>(t.out);
    const bool align = out_addr % sizeof(T) == 0 && std::size_t(t.out_stride) % vec_bytes == 0;
    const std::size_t m = align ? out_addr % vec_bytes / sizeof(T) : 0;
    const bool stream = t.stream && align;
    B* const ring = static_cast<B*>(t.ring) + m;
    auto slot = [&](int i) { return ring + std::size_t(i % (mh + 1)) * t.ring_stride; };
    auto out_row = [&](int o) {
        return reinterpret_cast<T*>(static_cast<char*>(t.out) + std::ptrdiff_t(o) * t.out_stride);
    };
    // The fused combine's row for output o; without it, the output row (read by nothing, but a valid address).
    auto other_row = [&](int o) -> const T* {
        if constexpr (kEpi) return reinterpret_cast<const T*>(static_cast<const char*>(t.other) + std::ptrdiff_t(o) * t.other_stride);
        else return out_row(o);
    };
    auto row = [&](int i) { return static_cast<const T*>(t.rows[i]); };
    auto pad = [&](int k) { return static_cast<B*>(t.pad) + std::size_t(k) * t.pad_stride; };

    // Padded samples [j0, j1) of input row r into dst: the run inside the image from the row itself,
    // the rest through the column map.
    const std::size_t in0 = std::size_t(std::clamp<long long>(-(long long)t.first_col, 0, t.pixels + mw - 1)) * C;
    const std::size_t in1 = std::max<std::size_t>(
        in0, std::size_t(std::clamp<long long>((long long)t.width - t.first_col, 0, t.pixels + mw - 1)) * C);
    const std::ptrdiff_t off = std::ptrdiff_t(t.first_col) * std::ptrdiff_t(C);  // padded sample j is row[off + j]
    auto build = [&](const T* r, std::size_t j0, std::size_t j1, B* dst) {
        const std::size_t a = std::clamp(in0, j0, j1), b = std::clamp(in1, a, j1);
        auto gather = [&](std::size_t from, std::size_t to) {
            if (from >= to) return;
            std::size_t px = from / C, c = from % C;
            for (std::size_t j = from; j < to; ++j) {
                const int col = t.cols[px];
                B v = fill;
                if (col >= 0) {
                    if constexpr (kKeys) v = morph_key(r[std::size_t(col) * C + c], kMax);
                    else v = r[std::size_t(col) * C + c];
                }
                dst[j - j0] = v;
                if (++c == C) {
                    c = 0;
                    ++px;
                }
            }
        };
        gather(j0, a);
        if (b > a) {
            if constexpr (kKeys) Keys(kMax, r + (off + std::ptrdiff_t(a)), dst + (a - j0), b - a);
            else std::memcpy(dst + (a - j0), r + (off + std::ptrdiff_t(a)), (b - a) * sizeof(T));
        }
        gather(b, j1);
    };

    // Horizontal extrema of input row i into its ring slot.
    auto produce = [&](int i) {
        const T* r = row(i);
        B* dst = slot(i);
        if (!r) {
            std::fill(dst, dst + n, fill);
            return;
        }
        if (kKeys || !t.middle) {  // the whole padded row
            build(r, 0, n + halo, pad(0));
            h(pad(0), C, dst, n);
            return;
        }
        if constexpr (!kKeys) {
            const std::size_t l = std::size_t(t.left) * C, e = l + std::size_t(t.middle) * C;
            if (l) {
                build(r, 0, l + halo, pad(0));
                h(pad(0), C, dst, l);
            }
            h(r + (off + std::ptrdiff_t(l)), C, dst + l, e - l);
            if (e < n) {
                build(r, e, n + halo, pad(0));
                h(pad(0), C, dst + e, n - e);
            }
        }
    };

    // The fused sweep's sources for the new rows of a pair, or false where it does not apply.
    const bool square = mw == mh;
    const std::size_t el = t.left ? std::max(N, std::size_t(t.left) * C) : 0;
    const std::size_t er = right ? std::max(N, std::size_t(right) * C) : 0;
    const bool fusable = square && mh >= 2 && C <= 4 && n >= N && (kKeys || std::size_t(t.middle) * C >= N);
    [[maybe_unused]] constexpr std::size_t right_at = 256;  // where a pad row keeps its right end (ints)
    auto sources = [&](int i0, FusedSources<B>& f) {
        const int rows_in = t.rows_out + mh - 1;
        for (int k = 0; k < 2; ++k) {
            const T* r = row(i0 + k);
            const int next = i0 + k + 2;
            const T* ahead = next < rows_in && row(next) ? row(next) : r;
            if constexpr (kKeys) {
                build(r, 0, n + halo, pad(k));
                f.mid[k] = f.left[k] = f.right[k] = pad(k);
                f.ahead[k] = pad(k);
            } else {
                f.mid[k] = r;
                f.ahead[k] = ahead;
                f.left[k] = pad(k);
                f.right[k] = pad(k) + right_at;
                if (el) build(r, 0, el + halo, pad(k));
                if (er) build(r, n - er, n + halo, pad(k) + right_at);
            }
        }
        f.C = C;
        if constexpr (kKeys) {
            f.off = 0;
            f.el = f.er = 0;
            f.ma = 0;
            f.mb = n;
        } else {
            f.off = off;
            f.el = el;
            f.er = er;
            f.ma = std::size_t(t.left) * C;
            f.mb = std::size_t(t.left + t.middle) * C;
        }
    };

    Pair<T, B> p{};
    p.n = n;
    p.m = m;
    p.align = align;
    p.flip = kEpi && t.minus_other ? B(~B(0)) : B(0);
    for (int i = 0; i < mh - 1; ++i) produce(i);
    for (int o = 0; o < t.rows_out; o += 2) {
        const int i0 = o + mh - 1;
        if (o + 1 >= t.rows_out) {
            produce(i0);
            const B* rows[max_small_rect];
            for (int j = 0; j < mh; ++j) rows[j] = slot(o + j);
            VOne<kMax, kEpi, T, B>(rows, mh, out_row(o), n, other_row(o), p.flip);
            break;
        }
        for (int j = 0; j <= mh; ++j) p.old[j] = slot(o + j);
        p.out[0] = out_row(o);
        p.out[1] = out_row(o + 1);
        p.other[0] = other_row(o);
        p.other[1] = other_row(o + 1);
        if (fusable && row(i0) && row(i0 + 1)) {
            FusedSources<B> f;
            sources(i0, f);
            const bool pfw = !stream && o + 3 < t.rows_out;
            f.ahead_out[0] = pfw ? out_row(o + 2) : nullptr;
            f.ahead_out[1] = pfw ? out_row(o + 3) : nullptr;
            const bool next = o + 3 < t.rows_out;
            f.ahead_other[0] = other_row(next ? o + 2 : o);
            f.ahead_other[1] = other_row(next ? o + 3 : o + 1);
            p.fresh[0] = slot(i0);
            p.fresh[1] = slot(i0 + 1);
            fused[C - 1][std::size_t(mh - 2)](p, f, stream);
        } else {
            produce(i0);
            produce(i0 + 1);
            (stream ? vpair_stream : vpair)[std::size_t(mh - 1)](p);
        }
    }
    if (stream) hwy::FlushStream();
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#endif  // APRON_CPU_SIMD_MORPH_RECT_INL_H_
