#pragma once
// The pointwise forms of the combine step that NaN- and nodata-aware linear filters are made of (fill, valid,
// ratio, mark: apron/ops.hpp's CombineForm; SPEC.md "NaN and nodata in linear filters"), one sample at a time.
// One definition for every backend (the reference, the CPU pool, the CUDA kernel), so they store the same
// bits: the ratio is (a*A) / B + c in double, each operation rounded once, never fused.
#include <cmath>

#include "apron/ops.hpp"
#include "core/hd.hpp"
#include "core/pixel.hpp"

namespace apron {

// Whether sample v is missing: NaN (f32), or equal to the step's nodata value where it has one.
template <class T>
APRON_HD bool missing_sample(T v, const CombineStep& s) {
    if constexpr (!PixelTraits<T>::integer) {
        if (v != v) return true;  // NaN
    }
    return s.has_nodata && double(v) == s.nodata;
}

// What a missing output is written as: NaN in f32; nodata (or 0, as NaN converts) in u8 and u16.
template <class Out>
APRON_HD Out missing_output(const CombineStep& s) {
    if constexpr (PixelTraits<Out>::integer)
        return s.has_nodata ? store_pixel<Out>(s.nodata) : Out(0);
    else
        return Out(NAN);
}

// One output sample of a step of form fill, valid, ratio, mark, max or min (not affine: the combine kernels' own).
template <class A, class B, class Out>
APRON_HD Out missing_form_sample(const CombineStep& s, A a, B b) {
    switch (s.form) {
    case CombineForm::fill: return missing_sample(a, s) ? store_pixel<Out>(s.c) : store_pixel<Out>(double(a));
    case CombineForm::valid: return Out(missing_sample(a, s) ? 0 : 1);
    case CombineForm::ratio: {
        const double w = double(b);
        if (!(w > s.b)) return missing_output<Out>(s);  // NaN weights too
        return store_pixel<Out>(add_rn(mul_rn(s.a, double(a)) / w, s.c));
    }
    case CombineForm::mark: {
        const double v = double(a);
        if (v != v || (s.b != 0 && missing_sample(b, s))) return missing_output<Out>(s);
        return store_pixel<Out>(v);
    }
    case CombineForm::max:
    case CombineForm::min: {
        const double x = double(a), y = double(b);
        if (x != x) return store_pixel<Out>(y);  // NaN: missing, the other sample (NaN when both are)
        if (y != y) return store_pixel<Out>(x);
        return store_pixel<Out>(s.form == CombineForm::max ? (x < y ? y : x) : (y < x ? y : x));
    }
    default: return store_pixel<Out>(add_rn(add_rn(mul_rn(s.a, double(a)), mul_rn(s.b, double(b))), s.c));
    }
}

} // namespace apron
