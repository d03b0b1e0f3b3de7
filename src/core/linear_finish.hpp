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
    double inverse_denominator = 1;  // 1.0 / denominator, for the quotient estimate
    bool integer_rounding = true;
    std::int64_t delta_int = 0;    // delta, when integer_rounding
    // Float path: value = sum * mul + add (normalisation folded in by the planner).
    double mul = 1, add = 0;
    double scale = 1, delta = 0;
};

// round_half_even(n / d) for d > 0, in integers. The quotient is estimated with the precomputed
// reciprocal (a 64-bit integer division costs ~70 instructions on a GPU, and was most of the u8 kernels'
// time) and then corrected until n = q*d + r with 0 <= r < d, so the result is exact whatever the estimate.
APRON_HD std::int64_t divide_round_half_even(std::int64_t n, std::int64_t d, double inverse_d) {
    std::int64_t q = static_cast<std::int64_t>(floor(double(n) * inverse_d));
    std::int64_t r = n - q * d;
    while (r < 0) r += d, q -= 1;
    while (r >= d) r -= d, q += 1;
    const std::int64_t twice = 2 * r;
    if (twice > d || (twice == d && (q & 1))) q += 1;
    return q;
}

template <class T>
APRON_HD T finish_exact(std::int64_t isum, const LinearFinish& f) {
    const std::int64_t n = isum + f.offset;
    if (PixelTraits<T>::integer && f.integer_rounding) {
        const std::int64_t q = divide_round_half_even(n, f.denominator, f.inverse_denominator) + f.delta_int;
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
