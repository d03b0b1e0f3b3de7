#pragma once
// The last arithmetic of a linear step: from the accumulated sum to the stored pixel
// (SPEC.md "Normalisation and scaling", then "rounding, saturation"). One definition for every backend,
// so integer paths store identical bits everywhere.
#include <cmath>
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
    // integer_rounding, and (isum + offset), the quotient and delta all fit in 32 bits whenever the sum
    // does (|isum| < 2^24, the f32 accumulator): finish_exact32 applies.
    bool fits_int32 = false;
    // fits_int32, a power-of-two denominator, and |isum + offset| < 2^24: the quotient is an exact float,
    // and rounding it half to even is one conversion.
    bool power_of_two = false;
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

// finish_exact for sums below 2^24 in magnitude (the f32 accumulator), in 32-bit integers: the same
// quotient and rounding (a GPU has no 64-bit integer unit, and the 64-bit form was half the time of the
// u8 3x3 kernel). finish_exact32_fitting is that form alone, for callers that have checked that the plan
// fits (the GPU kernels check once per block, so that the 64-bit and double forms are not inlined at every
// output sample); finish_exact32 checks and falls back to finish_exact where it does not.
template <class T>
APRON_HD T finish_exact32_fitting(int isum, const LinearFinish& f) {
    const int n = isum + int(f.offset), d = int(f.denominator);
    int q = n;
    if (f.power_of_two) {
        const float x = float(n) * float(f.inverse_denominator);  // exact
#if defined(__CUDA_ARCH__)
        q = __float2int_rn(x);
#else
        q = int(std::nearbyint(x));  // the default rounding mode: half to even
#endif
    } else if (d != 1) {
        q = int(floorf(float(n) * float(f.inverse_denominator)));  // within a few units; corrected below
        int r = n - q * d;
        while (r < 0) r += d, --q;
        while (r >= d) r -= d, ++q;
        if (2 * r > d || (2 * r == d && (q & 1))) ++q;
    }
    q += int(f.delta_int);
    const int hi = int(PixelTraits<T>::max);
    return T(q < 0 ? 0 : q > hi ? hi : q);
}

template <class T>
APRON_HD T finish_exact32(int isum, const LinearFinish& f) {
    if (!(PixelTraits<T>::integer && f.fits_int32)) return finish_exact<T>(isum, f);
    return finish_exact32_fitting<T>(isum, f);
}

// An exact plan into f32 whose value is its integer sum over a power of two plus an integral delta (Sobel,
// unnormalised integer masks, binomial masks over 2^k; |isum + offset| < 2^24, the f32 accumulator). Then
// (isum + offset) * 2^-k is an exact float, and one FMA adding the delta rounds the exact value once: the
// double form's value (its quotient and sum are exact in double, then rounded to float once).
APRON_HD bool finish_is_scaled_sum(const LinearFinish& f) {
    return f.power_of_two && f.integer_rounding && f.offset > -(1 << 24) && f.offset < (1 << 24) &&
           f.delta_int >= -(1 << 24) && f.delta_int <= (1 << 24);
}

// That value, from the exact sum held in a float (or an int below 2^24).
APRON_HD float finish_scaled_sum(float exact_sum, const LinearFinish& f) {
    return fmaf(exact_sum + float(f.offset), float(f.inverse_denominator), float(f.delta_int));
}

// The float form of an exact plan's finish, where it stores the same bits (the GPU kernels take it: the
// 32-bit integer form spends three conversions per sample, at a quarter of the FMA rate on sm_90, and the
// exact 3x3 plans on colour ran 25 % below the float ones). For an integer output, a power-of-two
// denominator d <= 2^8 and |offset + delta * d| < 2^24 (delta even: the planner moved an odd unit into the
// offset), the result is clamp(rint(t)), t = (isum + offset) / d + delta. In float: isum * (1/d) is exact
// (|isum| < 2^24 and a power of two), add = (offset + delta * d) / d is exact, and their sum is exact
// wherever t lies in [-1/2, max + 1/2], as t * d is then an integer below 65536 * 2^8 = 2^24; outside that
// range the rounded sum stays on the same side of the bound (rounding is monotonic, the bounds are floats),
// so the clamp of store_pixel gives the same value. Returns false where the conditions do not hold.
APRON_HD bool exact_finish_as_float(const LinearFinish& f, bool integer_output, LinearFinish& as_float) {
    if (!integer_output || !f.power_of_two || f.denominator > 256 || (f.delta_int & 1)) return false;
    const std::int64_t numerator = f.offset + f.delta_int * f.denominator;
    if (numerator <= -(std::int64_t(1) << 24) || numerator >= (std::int64_t(1) << 24)) return false;
    as_float = f;
    as_float.mul = 1.0 / double(f.denominator);
    as_float.add = double(numerator) / double(f.denominator);
    return true;
}

template <class T, class Acc>
APRON_HD T finish_float(Acc sum, const LinearFinish& f) {
    return store_pixel<T>(Acc(sum * Acc(f.mul)) + Acc(f.add));
}

} // namespace apron
