#pragma once
// Helpers shared by the test suites: seeded random images, sample access and SPEC tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "apron/border.hpp"
#include "apron/image.hpp"
#include "core/dispatch.hpp"

namespace apron::test {

// Random pixels over the type's full range (f32: [-1, 2) so negative and >1 values are covered).
inline Image random_image(int w, int h, int channels, PixelType type, std::uint32_t seed) {
    Image img(w, h, channels, type);
    std::mt19937 rng(seed);
    with_type(type, [&]<class T>() {
        for (int y = 0; y < h; ++y)
            for (int k = 0; k < w * channels; ++k) {
                if constexpr (std::is_same_v<T, float>)
                    img.row<T>(y)[k] = std::uniform_real_distribution<float>(-1.0f, 2.0f)(rng);
                else
                    img.row<T>(y)[k] = T(std::uniform_int_distribution<int>(0, int(highest_value<T>()))(rng));
            }
    });
    return img;
}

inline double sample_at(ConstImageView v, int x, int y, int c) {
    return with_type(v.type(), [&]<class T>() { return double(v.row<T>(y)[std::size_t(x) * v.channels() + c]); });
}

// Largest absolute difference between two images of the same shape.
inline double max_abs_diff(ConstImageView a, ConstImageView b) {
    EXPECT_EQ(a.shape, b.shape);
    double worst = 0;
    for (int y = 0; y < a.height(); ++y)
        for (int x = 0; x < a.width(); ++x)
            for (int c = 0; c < a.channels(); ++c)
                worst = std::max(worst, std::fabs(sample_at(a, x, y, c) - sample_at(b, x, y, c)));
    return worst;
}

inline double max_abs(ConstImageView a) {
    double m = 0;
    for (int y = 0; y < a.height(); ++y)
        for (int x = 0; x < a.width(); ++x)
            for (int c = 0; c < a.channels(); ++c) m = std::max(m, std::fabs(sample_at(a, x, y, c)));
    return m;
}

inline bool identical(ConstImageView a, ConstImageView b) {
    if (!(a.shape == b.shape)) return false;
    for (int y = 0; y < a.height(); ++y)
        if (std::memcmp(a.row_bytes(y), b.row_bytes(y), a.shape.row_bytes()) != 0) return false;
    return true;
}

// identical, except that any NaN matches any NaN and -0 matches +0 (f32): which NaN or which zero an
// extremum returns is not part of a result (SPEC.md, Morphology).
inline bool same_samples(ConstImageView a, ConstImageView b) {
    if (!(a.shape == b.shape)) return false;
    if (a.type() != PixelType::f32) return identical(a, b);
    for (int y = 0; y < a.height(); ++y)
        for (int k = 0; k < a.width() * a.channels(); ++k) {
            const float p = a.row<float>(y)[k], q = b.row<float>(y)[k];
            if (!(p == q || (std::isnan(p) && std::isnan(q)))) return false;
        }
    return true;
}

inline std::string source_path(const std::string& relative) { return std::string(APRON_SOURCE_DIR) + "/" + relative; }

// The index an outside coordinate reads (SPEC.md "Border modes"), restated independently of
// core/border_index.hpp for the tests' own references; -1: the constant.
inline int border_index(int i, int n, BorderMode mode) {
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case BorderMode::constant: return -1;
    case BorderMode::nearest: return i < 0 ? 0 : n - 1;
    case BorderMode::wrap: return ((i % n) + n) % n;
    case BorderMode::reflect: {  // d c b a | a b c d | d c b a
        const int period = 2 * n;
        const int m = ((i % period) + period) % period;
        return m < n ? m : period - 1 - m;
    }
    case BorderMode::mirror: {  // d c b | a b c d | c b a
        if (n == 1) return 0;
        const int period = 2 * n - 2;
        const int m = ((i % period) + period) % period;
        return m < n ? m : period - m;
    }
    }
    return -1;
}

// Every sample of a volume (or image), plane by plane, row by row, as doubles: the tests' flat form for their
// own references.
inline std::vector<double> volume_samples(ConstImageView v) {
    std::vector<double> out;
    for (int z = 0; z < v.shape.depth; ++z)
        for (int y = 0; y < v.height(); ++y)
            for (int x = 0; x < v.width(); ++x)
                for (int c = 0; c < v.channels(); ++c) out.push_back(sample_at(v.plane(z), x, y, c));
    return out;
}

// A volume of random samples (fixed seed): f32 in -1..2 with a share of NaN, integers over their range; `levels`
// > 0 draws from that many values (ties, and -0 beside +0, common).
inline Image random_volume(int w, int h, int d, int c, PixelType t, std::uint32_t seed, double nan_fraction = 0, int levels = 0) {
    Image v(ImageShape{w, h, c, t, d});
    std::mt19937 rng(seed);
    with_type(t, [&]<class T>() {
        for (int y = 0; y < int(v.shape().rows()); ++y)
            for (int k = 0; k < w * c; ++k) {
                T& s = v.row<T>(y)[k];
                if constexpr (std::is_same_v<T, float>) {
                    // A few levels make ties (and -0 / +0) common; otherwise any float in -1..2.
                    s = levels ? float(int(rng() % unsigned(levels)) - levels / 2) * 0.5f
                               : std::uniform_real_distribution<float>(-1.0f, 2.0f)(rng);
                    if (s == 0 && rng() % 2) s = -0.0f;
                    if (std::uniform_real_distribution<double>(0, 1)(rng) < nan_fraction) s = NAN;
                } else {
                    const int top = levels ? levels - 1 : int(highest_value<T>());
                    s = T(std::uniform_int_distribution<int>(0, top)(rng));
                }
            }
    });
    return v;
}

} // namespace apron::test
