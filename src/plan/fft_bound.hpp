#pragma once
// When an exact plan may go through a double-precision FFT: the one rule both backends apply (FFTW on the
// CPU, cuFFT on CUDA), each for the transform size it would use.
#include <cmath>

#include "core/dispatch.hpp"
#include "plan/plan.hpp"

namespace apron {

// The rounded sum is the exact integer sum while the error stays below 1/2; the backends ask for 1/4.
constexpr double fft_exact_error_limit = 0.25;

// The largest error of one output of an exact plan's sum computed through double nx x ny transforms,
// bounded above by 16 u log2(n) |region|_2 |mask|_1 (u = 2^-53, n = nx ny; generous constant): each
// transform adds an error of about u log2(n) relative to the L2 norm of what it transforms, and the
// spectrum product grows that norm by at most max |M| <= sum |m| (the L1 norm, not the L2). Infinite for
// float plans and empty tiles.
inline double double_fft_error_bound(const LinearPlan& plan, int nx, int ny) {
    if (nx <= 0 || ny <= 0 || !plan.exact) return INFINITY;
    const double norm1 = double(plan.integer_mask.abs_sum);
    const double n = double(nx) * double(ny);
    const double in_max = with_type(plan.in, []<class T>() { return highest_value<T>(); });
    const double in_norm = in_max * std::sqrt(n);  // |region|_2 <= max |in| sqrt(n)
    return 16.0 * 0x1p-53 * std::log2(n) * in_norm * norm1;
}

} // namespace apron
