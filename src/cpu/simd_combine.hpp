#pragma once
// The combine step's row kernel (gradient, top-hat, black-hat: a*A + b*B + c) for integer images whose
// inputs and output share one type, with integer coefficients: the sum is exact in int32, so it is computed
// there, clamped to the type's range and stored, as store_pixel would round and saturate the same integer.
// Compiled once per SIMD target (simd_combine.cpp).
#include <cstddef>

#include "apron/image.hpp"
#include "apron/ops.hpp"

namespace apron::cpu::simd {

// t: u8 or u16. b == nullptr: a*A + c. |a|, |b| <= 2^14 and |c| <= 2^24 (no int32 overflow).
void combine_integer(PixelType t, const void* a, const void* b, void* out, std::size_t n, int ka, int kb, int kc);

// Any types, any coefficients: (a*A + b*B) + c in double, lane by lane in the reference's order of
// operations (no fused multiply-add), then store_pixel's rule: integers clamp (NaN and <= 0 to 0) and round
// half to even, f32 rounds to nearest. Bit-identical to the scalar form. b == nullptr: a*A + c.
void combine_double(PixelType ta, PixelType tb, PixelType tout, const void* a, const void* b, void* out, std::size_t n,
                    double ka, double kb, double kc);

// The forms of NaN- and nodata-aware linear filters (fill, valid, ratio, mark: apron/ops.hpp's CombineForm),
// any types, in double lanes: the bits of core/missing_sample.hpp's per-sample rule, which the scalar tail
// calls. b == nullptr where the form reads no B (s.b == 0).
void combine_missing(PixelType ta, PixelType tb, PixelType tout, const void* a, const void* b, void* out, std::size_t n,
                     const CombineStep& s);

} // namespace apron::cpu::simd
