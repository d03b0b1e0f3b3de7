#pragma once
// The last arithmetic of a linear step: from the accumulated sum to the stored pixel
// (SPEC.md "Normalisation and scaling", then "rounding, saturation"). One definition for every backend,
// so integer paths store identical bits everywhere.
#include <cmath>
#include <cstdint>
#include <cstring>

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
    // fits_int32, and |isum + offset|, the denominator and |delta| all below 2^22: finish_exact_f32 applies
    // (every step of it an exact float operation).
    bool f32_exact = false;
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

// The bits of a float (__float_as_uint on the device).
APRON_HD std::uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
#endif
}

// finish_exact for sums below 2^24 in magnitude (the f32 accumulator), in 32-bit integers: the same
// quotient and rounding (a GPU has no 64-bit integer unit, and the 64-bit form was half the time of the
// u8 3x3 kernel). Falls back to finish_exact where the plan does not fit.
template <class T>
APRON_HD T finish_exact32(int isum, const LinearFinish& f) {
    if (!(PixelTraits<T>::integer && f.fits_int32)) return finish_exact<T>(isum, f);
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

// finish_exact32 for a sum held exactly in a float accumulator, in float operations alone. The GPU
// kernels' f32 sums otherwise cross the conversion unit three times per sample (F2I of the sum, I2F of the
// dividend, F2I of the quotient), a quarter-rate pipe (the register kernel's exact u8 3x3 plans on colour
// gain 8 % with this form; docs/perf-notes.md). Where f.f32_exact holds, every value below is an integer
// (or a quotient of one by a power of two) under 2^23 in magnitude, so each addition, product and fma is
// exact, and adding 1.5 * 2^23 rounds half to even in the FADD itself:
// - the quotient estimate rint(n * (1/d)) is within one of the answer (the reciprocal's and product's
//   errors stay below |n| * 2^-23 < 1/2), and a power-of-two d divides exactly, so needs no correction;
// - the remainder r = n - q d is exact in one fma; one step brings 2r into [-d, d], and |2r| = d is a tie,
//   which goes to the even neighbour.
// Elsewhere it is finish_exact32 of the sum.
template <class T>
APRON_HD T finish_exact_f32(float sum, const LinearFinish& f) {
    if constexpr (PixelTraits<T>::integer) {
        if (f.f32_exact) {
            constexpr float round_magic = 12582912.0f;  // 1.5 * 2^23
            const float n = sum + float(f.offset);
            const float d = float(f.denominator);
            float q = (n * float(f.inverse_denominator) + round_magic) - round_magic;
            if (!f.power_of_two) {
                float r2 = 2.0f * fmaf(-q, d, n);
                if (r2 > d) q += 1.0f, r2 -= 2.0f * d;
                else if (r2 < -d) q -= 1.0f, r2 += 2.0f * d;
                const bool odd = (float_bits(q + round_magic) & 1u) != 0;  // 1.5 * 2^23 is even
                if (odd && r2 == d) q += 1.0f;
                else if (odd && r2 == -d) q -= 1.0f;
            }
            const float v = fminf(fmaxf(q + float(f.delta_int), 0.0f), float(PixelTraits<T>::max));
            return T(float_bits(v + 8388608.0f) & 0xFFFFu);  // 2^23 + v holds v in its low mantissa bits
        }
    }
    return finish_exact32<T>(static_cast<int>(sum), f);
}

template <class T, class Acc>
APRON_HD T finish_float(Acc sum, const LinearFinish& f) {
    return store_pixel<T>(Acc(sum * Acc(f.mul)) + Acc(f.add));
}

} // namespace apron
