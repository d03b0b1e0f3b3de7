#pragma once
// Masks of extreme weights (1e38, 1e200, 1e308, 1e-300, subnormal 1e-320, 1e30 beside 1e-30) and their
// float64 result computed here, independently of the planner and of every executor: long double sums of
// the mask's own double weights (64-bit mantissa, exponent range past 1e4900, so nothing here overflows),
// SPEC.md's border rules, normalisation, scale and delta, then SPEC's tolerance: f32 results within 1e-5
// of sum |m| x max |in| (x |scale|, / |S| when normalised) of that value, inf where it lies beyond float;
// integer results within 1 of it rounded and saturated.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/image.hpp"
#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "test_support.hpp"

namespace apron::test::large {

using Real = long double;

struct WeightCase {
    std::string name;
    Mask mask;
    bool rank1 = false;  // the separable path must take it
    bool rank2 = false;  // the low-rank path must take it (float plans)
};

// The magnitudes the cases scale their masks to: the float limit, far past it, the double limit, tiny,
// near double's smallest normal, and subnormal.
inline const std::vector<double>& magnitudes() {
    static const std::vector<double> m = {1.0, 1e38, 1e200, 1e308, 1e-30, 1e-300, 1e-320};
    return m;
}

inline std::vector<double> uniform(std::mt19937& rng, int n, double lo, double hi) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (double& x : v) x = std::uniform_real_distribution<double>(lo, hi)(rng);
    return v;
}

// Masks of base weights of size about 1 (at most 1.5, so 1e308 x base stays finite) times `magnitude`.
inline std::vector<WeightCase> masks_at(double magnitude, std::uint32_t seed) {
    std::mt19937 rng(seed);
    auto scaled = [&](int w, int h, const std::vector<double>& base) {
        std::vector<double> v = base;
        for (double& x : v) x *= magnitude;
        return Mask(w, h, v);
    };
    // Subnormal weights keep a few bits each: products of factors are then of rank 1 (or 2) no more.
    const bool normal = magnitude * 0.25 >= DBL_MIN;
    std::vector<WeightCase> out;
    out.push_back({"uniform 3x3", scaled(3, 3, std::vector<double>(9, 1.0)), true, false});
    {  // rank 1, odd and even sides
        const auto row = uniform(rng, 5, 0.5, 1.2), col = uniform(rng, 4, 0.5, 1.2);
        std::vector<double> b;
        for (double c : col)
            for (double r : row) b.push_back(c * r);
        out.push_back({"outer 5x4", scaled(5, 4, b), normal, false});
    }
    {  // rank 2, mixed signs (the second term), sum well away from zero
        const auto r1 = uniform(rng, 7, 0.5, 1.0), c1 = uniform(rng, 5, 0.5, 1.0);
        const auto r2 = uniform(rng, 7, -0.7, 0.7), c2 = uniform(rng, 5, -0.7, 0.7);
        std::vector<double> b;
        for (int j = 0; j < 5; ++j)
            for (int i = 0; i < 7; ++i) b.push_back(c1[std::size_t(j)] * r1[std::size_t(i)] + c2[std::size_t(j)] * r2[std::size_t(i)]);
        out.push_back({"rank-2 7x5", scaled(7, 5, b), false, normal});
    }
    // Full rank, mixed signs, a sum of about a third of sum |m|: even by odd, and odd square (the CUDA
    // backend's tiled kernels take those).
    out.push_back({"signed 6x7", scaled(6, 7, uniform(rng, 42, -0.5, 1.5)), false, false});
    out.push_back({"signed 5x5", scaled(5, 5, uniform(rng, 25, -0.5, 1.5)), false, false});
    return out;
}

// Huge weights beside tiny ones (and a negative tiny weight): the tiny ones are far below the tolerance,
// and must neither overflow nor poison anything.
inline std::vector<WeightCase> mixed_magnitudes() {
    std::vector<WeightCase> out;
    for (double big : {1e30, 1e200}) {
        const double tiny = 1 / big;
        out.push_back({"1e" + std::to_string(int(std::lround(std::log10(big)))) + " beside its inverse",
                       Mask(3, 3, {big, tiny, 2 * big, tiny, 3 * big, -tiny, 1.5 * big, tiny, big}), false, false});
    }
    return out;
}

// SPEC.md's border rules, written out again: the source index of i on an axis of n, or -1 (constant).
inline long long source_index(long long i, int n, BorderMode mode) {
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case BorderMode::constant: return -1;
    case BorderMode::nearest: return i < 0 ? 0 : n - 1;
    case BorderMode::reflect: {  // d c b a | a b c d | d c b a
        const long long p = 2ll * n, k = ((i % p) + p) % p;
        return k < n ? k : p - 1 - k;
    }
    case BorderMode::mirror: {  // d c b | a b c d | c b a
        if (n == 1) return 0;
        const long long p = 2ll * n - 2, k = ((i % p) + p) % p;
        return k < n ? k : p - k;
    }
    case BorderMode::wrap: return ((i % n) + n) % n;
    }
    return -1;
}

inline Real book_add(PixelType in, Real S) {
    const Real mid = in == PixelType::u8 ? 128 : in == PixelType::u16 ? 32768 : 0.5L;
    const Real max = in == PixelType::u8 ? 255 : in == PixelType::u16 ? 65535 : 1;
    return S == 0 ? mid : max;
}

// Round half to even, then saturate (SPEC.md), in long double.
inline Real stored_integer(Real v, PixelType out) {
    const Real hi = out == PixelType::u8 ? 255 : 65535;
    if (!(v > 0)) return 0;
    if (v >= hi) return hi;
    return std::nearbyint(v);
}

// Checks `got` (the step's result on `in`) against the float64 result of SPEC.md. Returns the number of
// samples out of tolerance (the first few are reported).
inline int expect_within_spec(const LinearStep& s, ConstImageView in, ConstImageView got, const std::string& what) {
    const Mask& m = s.mask;
    Real S = 0, A = 0;
    for (double w : m.weights) S += w, A += std::fabs(Real(w));
    const bool divide = (s.normalise == Normalise::sum && S != 0) || (s.normalise == Normalise::book && S > 0);
    const Real offset = s.normalise == Normalise::book && !divide ? book_add(in.type(), S) : 0;
    const Real outside = with_type(in.type(), [&]<class T>() { return Real(store_pixel<T>(s.border_value)); });
    Real in_max = s.border == BorderMode::constant ? std::fabs(outside) : 0;
    for (int y = 0; y < in.height(); ++y)
        for (int x = 0; x < in.width(); ++x)
            for (int c = 0; c < in.channels(); ++c) in_max = std::max(in_max, std::fabs(Real(sample_at(in, x, y, c))));
    const Real tol = 1e-5L * std::fabs(Real(s.scale)) * (divide ? A / std::fabs(S) : A) * std::max<Real>(in_max, 1e-30L);
    int bad = 0;
    for (int y = 0; y < in.height(); ++y)
        for (int x = 0; x < in.width(); ++x)
            for (int c = 0; c < in.channels(); ++c) {
                Real sum = 0;
                for (int j = 0; j < m.height; ++j)
                    for (int i = 0; i < m.width; ++i) {
                        const long long sx = source_index(x + i - m.anchor_x, in.width(), s.border);
                        const long long sy = source_index(y + j - m.anchor_y, in.height(), s.border);
                        const Real v = sx < 0 || sy < 0 ? outside : Real(sample_at(in, int(sx), int(sy), c));
                        sum += Real(m.at(i, j)) * v;
                    }
                const Real exact = Real(s.scale) * (divide ? sum / S : sum + offset) + Real(s.delta);
                const Real g = Real(sample_at(got, x, y, c));
                bool ok;
                if (got.type() == PixelType::f32) {
                    const Real slack = tol + std::fabs(exact) * 0x1p-24L + Real(FLT_TRUE_MIN);
                    if (std::isnan(g)) ok = false;
                    else if (std::fabs(exact) - slack > FLT_MAX) ok = std::isinf(g) && (g > 0) == (exact > 0);
                    else if (std::fabs(exact) + slack < FLT_MAX) ok = std::fabs(g - exact) <= slack;
                    else ok = true;  // within the tolerance of float's largest value: finite or inf
                } else {
                    ok = g >= stored_integer(exact - tol, got.type()) - 1 && g <= stored_integer(exact + tol, got.type()) + 1;
                }
                if (!ok && ++bad <= 3)
                    ADD_FAILURE() << what << ": at (" << x << "," << y << "," << c << ") got " << double(g)
                                  << ", float64 result " << double(exact) << " (tolerance " << double(tol) << ")";
            }
    return bad;
}

// "u8->f32" and the like, for messages.
inline std::string types_of(PixelType in, PixelType out) { return std::string(to_string(in)) + "->" + to_string(out); }

// "%g" of a weight, scale or delta, for messages.
inline std::string number_text(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return b;
}

// A pipeline of the one linear step (no op string: the step is built directly with its extreme weights).
inline Pipeline pipeline_of(const LinearStep& s) {
    Pipeline p;
    Step step;
    step.action = s;
    p.add(OpProgram{"correlate", {step}});
    return p;
}

// Runs `s` on `in` with `o` and checks the result against the float64 one. A path may decline the step
// (an apron::Error) unless `must_accept`; returns whether it ran.
inline bool run_and_check(const LinearStep& s, const Image& in, const RunOptions& o, bool must_accept,
                          const std::string& what) {
    Image got;
    try {
        got = pipeline_of(s).run(in, o);
    } catch (const Error& e) {
        if (must_accept) ADD_FAILURE() << what << ": " << e.what();
        return false;
    }
    expect_within_spec(s, in.view(), got.view(), what);
    return true;
}

} // namespace apron::test::large
