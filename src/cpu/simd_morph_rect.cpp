// Small rectangles in one pass over memory: the kernels are in simd_morph_rect-inl.h (how they work),
// instantiated per pixel type and fused combine in simd_morph_rect_*.cpp; this picks the one for a task.
#include "cpu/simd_kernels.hpp"

namespace apron::cpu::simd {

void morph_rect_u8(const MorphRectTask& t);
void morph_rect_u8_fused(const MorphRectTask& t);
void morph_rect_u16(const MorphRectTask& t);
void morph_rect_u16_fused(const MorphRectTask& t);
void morph_rect_f32(const MorphRectTask& t);

void morph_rect(const MorphRectTask& t) {
    switch (t.type) {
    case PixelType::u8: return t.other ? morph_rect_u8_fused(t) : morph_rect_u8(t);
    case PixelType::u16: return t.other ? morph_rect_u16_fused(t) : morph_rect_u16(t);
    case PixelType::f32: return morph_rect_f32(t);  // no fused combine (the executor keeps f32 on the combine step)
    }
}

} // namespace apron::cpu::simd
