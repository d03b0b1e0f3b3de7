// Highway helpers the rank kernels share (simd_rank.cpp, simd_rank_square.cpp): f32 order keys to values and
// back, and a compiled program run on vectors in registers. Included once per SIMD target, after
// hwy/highway.h, as Highway's -inl.h headers are (the toggle guard below).
#if defined(APRON_CPU_SIMD_RANK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef APRON_CPU_SIMD_RANK_INL_H_
#undef APRON_CPU_SIMD_RANK_INL_H_
#else
#define APRON_CPU_SIMD_RANK_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include <hwy/highway.h>

#include "core/rank_value.hpp"
#include "cpu/rank_programs.hpp"

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// rank_key of f32 values: flip the magnitude of negatives, set the sign bit of the others; NaN is the
// missing key (all ones).
template <class DU>
HWY_INLINE hn::Vec<DU> F32Keys(DU du, hn::Vec<hn::RebindToFloat<DU>> v) {
    const hn::RebindToSigned<DU> di;
    const auto bits = hn::BitCast(du, v);
    const auto negative = hn::BitCast(du, hn::BroadcastSignBit(hn::BitCast(di, v)));
    const auto key = hn::Xor(bits, hn::Or(negative, hn::Set(du, 0x80000000u)));
    return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), hn::Set(du, rank_missing_key), key);
}

// rank_value<float>: the inverse (the missing key becomes the NaN 0x7FFFFFFF, as in the reference).
template <class DU>
HWY_INLINE hn::Vec<hn::RebindToFloat<DU>> KeysF32(DU du, hn::Vec<DU> k) {
    const hn::RebindToSigned<DU> di;
    const auto positive = hn::BitCast(du, hn::BroadcastSignBit(hn::BitCast(di, k)));
    return hn::BitCast(hn::RebindToFloat<DU>(), hn::Xor(k, hn::Or(hn::Not(positive), hn::Set(du, 0x80000000u))));
}

// Stores a vector of keys as output samples: the keys themselves, or (kFloat) their f32 values.
template <bool kFloat, class D>
HWY_INLINE void PutKeys(D d, hn::Vec<D> v, void* out) {
    if constexpr (kFloat) hn::StoreU(KeysF32(d, v), hn::RebindToFloat<D>(), static_cast<float*>(out));
    else hn::StoreU(v, d, static_cast<hn::TFromD<D>*>(out));
}

// One operation of a compiled program (rank_programs.hpp): value inputs + I from two earlier values.
template <class Prog, std::size_t I, class V>
HWY_INLINE void ApplyOp(V* v) {
    constexpr rank_net::Op op = Prog::ops[I];
    if constexpr (op.kind == rank_net::Kind::min) v[std::size_t(Prog::inputs) + I] = hn::Min(v[op.a], v[op.b]);
    else v[std::size_t(Prog::inputs) + I] = hn::Max(v[op.a], v[op.b]);
}
// The program's operations in order, folded in chunks of 128: clang refuses a fold of more than 256 operands
// (its expression nesting limit; the 7x7 programs have about 300 operations).
template <class Prog, std::size_t Base, class V, std::size_t... I>
HWY_INLINE void RunChunk(V* v, std::index_sequence<I...>) {
    (ApplyOp<Prog, Base + I>(v), ...);
}
template <class Prog, std::size_t Base, std::size_t N, class V>
HWY_INLINE void RunFrom(V* v) {
    constexpr std::size_t chunk = N - Base < 128 ? N - Base : 128;
    RunChunk<Prog, Base>(v, std::make_index_sequence<chunk>{});
    if constexpr (Base + chunk < N) RunFrom<Prog, Base + chunk, N>(v);
}
template <class Prog, class V, std::size_t... I>
HWY_INLINE void RunCompiled(V* v, std::index_sequence<I...>) {
    RunFrom<Prog, 0, sizeof...(I)>(v);
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
