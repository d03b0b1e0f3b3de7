// The one-pass small-rectangle kernels for u8 with the fused combine, for every SIMD target (simd_morph_rect-inl.h).
#include <cstdint>

#include "cpu/simd_kernels.hpp"

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/simd_morph_rect_u8_fused.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include "cpu/simd_morph_rect-inl.h"

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {

void MorphRect_u8_fused(const MorphRectTask& t) {
    return t.max ? Task<true, true, std::uint8_t, std::uint8_t>(t) : Task<false, true, std::uint8_t, std::uint8_t>(t);
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace apron::cpu::simd {

HWY_EXPORT(MorphRect_u8_fused);

void morph_rect_u8_fused(const MorphRectTask& t) { HWY_DYNAMIC_DISPATCH(MorphRect_u8_fused)(t); }

} // namespace apron::cpu::simd
#endif
