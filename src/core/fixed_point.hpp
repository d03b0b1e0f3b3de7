#pragma once
// Fixed-point weights for a float plan on 8-bit images, with a proven bound on their error.
//
// The GPU's two-way dot product (IDP.2A) multiplies two 16-bit weights by two bytes and adds both to a 32-bit
// integer in one instruction, where the float kernels spend an FMA per tap and convert every sample. A float
// plan's value is v = sum_i m_i x_i + c (m_i: the mask's weights times the finish's scale; c its offset), and
// SPEC.md lets a float plan store any value within one unit of the correctly rounded one. With
// q_i = round(m_i 2^s) and b = round(c 2^s), the fixed value v' = (sum_i q_i x_i + b) / 2^s differs from v by
// at most E = max_sample * sum_i |q_i 2^-s - m_i| + |b 2^-s - c| for every input, and floor(v' + 1/2) is
// within one unit of rint(v) whenever E < 1/2. fixed_point_mask picks the largest shift whose weights fit 16
// bits and whose sums fit 32, and refuses a mask whose bound exceeds the caller's limit (the kernels ask for
// 1/4, leaving room for the reference's own rounding); the plan names the bound it took.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

namespace apron {

struct FixedPointMask {
    std::vector<int> q;      // round(m_i * 2^shift), each in [-32767, 32767]
    int shift = 0;           // 1 .. 30
    std::int64_t bias = 0;   // round(c * 2^shift) + 2^(shift - 1): (sum + bias) >> shift is floor(v' + 1/2)
    double error_bound = 0;  // |v' - v| for every sample in [0, max_sample]
};

inline std::optional<FixedPointMask> fixed_point_mask(const std::vector<double>& weights, double scale,
                                                      double offset, int max_sample, double max_error) {
    if (!std::isfinite(scale) || !std::isfinite(offset) || max_sample < 0) return std::nullopt;
    std::vector<double> m(weights.size());
    double largest = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        m[i] = weights[i] * scale;
        if (!std::isfinite(m[i])) return std::nullopt;
        largest = std::max(largest, std::fabs(m[i]));
    }
    const double int32_limit = 2147483647.0;
    for (int s = 30; s >= 1; --s) {
        const double f = std::ldexp(1.0, s);
        if (largest * f > 32767.0) continue;  // 16-bit weights
        FixedPointMask r;
        r.shift = s;
        r.q.resize(m.size());
        double abs_q = 0, weight_error = 0;
        for (std::size_t i = 0; i < m.size(); ++i) {
            r.q[i] = int(std::llround(m[i] * f));
            abs_q += std::fabs(double(r.q[i]));
            weight_error += std::fabs(double(r.q[i]) / f - m[i]);
        }
        const double b = std::nearbyint(offset * f);
        const double rounding = std::ldexp(1.0, s - 1);
        // Every partial sum (the accumulator starts at the bias) and the total stay inside int32.
        if (double(max_sample) * abs_q + std::fabs(b) + rounding >= int32_limit) continue;
        r.bias = std::int64_t(b) + std::int64_t(rounding);
        r.error_bound = double(max_sample) * weight_error + std::fabs(b / f - offset);
        // The largest shift that fits is the finest; a smaller one only rounds more coarsely.
        if (!(r.error_bound <= max_error)) return std::nullopt;
        return r;
    }
    return std::nullopt;
}

} // namespace apron
