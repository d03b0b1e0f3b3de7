// The square rank sweeps for u16 samples, for every SIMD target (simd_rank_square-inl.h).
#include <cstdint>

#include "cpu/simd_rank.hpp"

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/simd_rank_square_u16.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include "cpu/simd_rank_square-inl.h"

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {

void RankSweep_u16(const RankSquareSweep& a) { SweepTyped<std::uint16_t, false>(a); }

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace apron::cpu::simd {

HWY_EXPORT(RankSweep_u16);

void rank_sweep_square_u16(const RankSquareSweep& a) { HWY_DYNAMIC_DISPATCH(RankSweep_u16)(a); }

} // namespace apron::cpu::simd
#endif
