#pragma once
// The last arithmetic of a linear step: from the accumulated sum to the stored pixel
// (SPEC.md "Normalisation and scaling", then "rounding, saturation"). One definition for every backend,
// so integer paths store identical bits everywhere.
#include <cstdint>

#include "core/hd.hpp"
#include "core/pixel.hpp"

namespace apron {

struct LinearFinish {
    // Exact path (integer image, integer mask): value = (isum + offset) / denominator * scale + delta,
    // where isum is the exact integer sum over the integer weights. With scale 1 and an integral delta
    // the division rounds half to even in integers (correctly rounded); otherwise in double.
    std::int64_t offset = 0;
    std::int64_t denominator = 1;  // > 0
    bool integer_rounding = true;
    std::int64_t delta_int = 0;    // delta, when integer_rounding
    // Float path: value = sum * mul + add (normalisation folded in by the planner).
    double mul = 1, add = 0;
    double scale = 1, delta = 0;
};

// round_half_even(n / d) for d > 0, in integers.
APRON_HD std::int64_t divide_round_half_even(std::int64_t n, std::int64_t d) {
    std::int64_t q = n / d, r = n % d;
    if (r < 0) { r += d; q -= 1; }  // floor division
    const std::int64_t twice = 2 * r;
    if (twice > d || (twice == d && (q & 1))) q += 1;
    return q;
}

template <class T>
APRON_HD T finish_exact(std::int64_t isum, const LinearFinish& f) {
    const std::int64_t n = isum + f.offset;
    if (PixelTraits<T>::integer && f.integer_rounding) {
        const std::int64_t q = divide_round_half_even(n, f.denominator) + f.delta_int;
        const std::int64_t hi = std::int64_t(PixelTraits<T>::max);
        return T(q < 0 ? 0 : q > hi ? hi : q);
    }
    return store_pixel<T>(add_rn(mul_rn(double(n) / double(f.denominator), f.scale), f.delta));
}

template <class T, class Acc>
APRON_HD T finish_float(Acc sum, const LinearFinish& f) {
    return store_pixel<T>(Acc(sum * Acc(f.mul)) + Acc(f.add));
}

} // namespace apron
