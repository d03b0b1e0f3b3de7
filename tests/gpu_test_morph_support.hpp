#pragma once
// What the GPU morphology suites share: the skip without a device, type names for messages, the border
// options every morphology op takes, and random structuring elements.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "apron/border.hpp"
#include "apron/image.hpp"
#include "apron/mask.hpp"
#include "apron/pipeline.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

namespace apron::test {

inline const char* type_name(PixelType t) { return t == PixelType::u8 ? "u8" : t == PixelType::u16 ? "u16" : "f32"; }

// Border options of an op spec: ignored (none), constant with a value the type holds, the four mapped modes.
inline std::vector<std::string> morph_borders(PixelType t) {
    const std::string value = t == PixelType::u8 ? "200" : t == PixelType::u16 ? "40000" : "0.625";
    return {"", ",border=constant,value=" + value, ",border=nearest", ",border=reflect", ",border=mirror", ",border=wrap"};
}

// A random w x h 0/1 element with at least one cell and a random anchor, as a mask file's text would give.
inline Mask random_element(int w, int h, double density, std::mt19937& rng) {
    std::bernoulli_distribution set(density);
    Mask m(w, h, std::vector<double>(std::size_t(w) * h, 0.0));
    for (double& v : m.weights) v = set(rng) ? 1.0 : 0.0;
    m.at(int(rng() % unsigned(w)), int(rng() % unsigned(h))) = 1;  // at least one cell
    m.anchor_x = int(rng() % unsigned(w));
    m.anchor_y = int(rng() % unsigned(h));
    return m;
}

// The derived operations (open, close, gradient, tophat, blackhat, iterations) on 3-channel u8 and f32
// images: each planned with `label` (the element's algorithm) and matching `reference`'s result, bit for
// bit on u8 (f32 within 1e-5: gradient and tophat combine in float).
inline void expect_derived_operations_match(const std::vector<std::string>& ops, const std::string& label,
                                            Backend reference) {
    for (PixelType t : {PixelType::u8, PixelType::f32}) {
        const Image in = random_image(203, 150, 3, t, 11);
        for (const std::string& op : ops) {
            const Pipeline p({op});
            EXPECT_NE(p.describe(in.shape(), {.backend = Backend::cuda}).find(label), std::string::npos) << op;
            const Image gpu = p.run(in, {.backend = Backend::cuda}), ref = p.run(in, {.backend = reference});
            if (t == PixelType::u8) EXPECT_TRUE(identical(gpu, ref)) << op;
            else EXPECT_LE(max_abs_diff(gpu, ref), 1e-5) << op;
        }
    }
}

// f32 images for the NaN rule (SPEC.md, Morphology), each with a name: random samples with a NaN hole of
// 24 x 18 pixels at (10, 8) (larger than every element the NaN tests use inside it), scattered NaN, +inf and
// -inf; images all NaN, all +inf, all -inf; 1x1 images; a one-row image with a NaN run.
inline std::vector<std::pair<std::string, Image>> nan_images(int channels, std::uint32_t seed) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    auto filled = [&](int w, int h, float v) {
        Image img(w, h, channels, PixelType::f32);
        for (int y = 0; y < h; ++y) std::fill(img.row<float>(y), img.row<float>(y) + std::size_t(w) * channels, v);
        return img;
    };
    Image holed = random_image(57, 43, channels, PixelType::f32, seed);
    std::mt19937 rng(seed);
    for (int n = 0; n < 300; ++n) {
        const float pick[] = {nan, nan, inf, -inf};
        holed.row<float>(int(rng() % 43u))[rng() % (57u * unsigned(channels))] = pick[rng() % 4];
    }
    for (int y = 8; y < 26; ++y)
        for (int k = 10 * channels; k < 34 * channels; ++k) holed.row<float>(y)[k] = nan;
    Image row = random_image(40, 1, channels, PixelType::f32, seed + 1);
    for (int k = 5 * channels; k < 30 * channels; ++k) row.row<float>(0)[k] = nan;
    std::vector<std::pair<std::string, Image>> images;  // Image moves, it does not copy
    images.emplace_back("holed", std::move(holed));
    images.emplace_back("all NaN", filled(9, 7, nan));
    images.emplace_back("all +inf", filled(9, 7, inf));
    images.emplace_back("all -inf", filled(9, 7, -inf));
    images.emplace_back("1x1 NaN", filled(1, 1, nan));
    images.emplace_back("1x1 -inf", filled(1, 1, -inf));
    images.emplace_back("1x1 0.25", filled(1, 1, 0.25f));
    images.emplace_back("one row", std::move(row));
    return images;
}

// Borders of the NaN tests: ignored, constant (value 0.5), the four mapped modes.
inline std::vector<std::optional<BorderMode>> nan_border_modes() {
    return {std::nullopt, BorderMode::constant, BorderMode::nearest, BorderMode::reflect, BorderMode::mirror, BorderMode::wrap};
}
inline std::string border_option(std::optional<BorderMode> m) {
    if (!m) return "";
    return std::string(",border=") + to_string(*m) + (*m == BorderMode::constant ? ",value=0.5" : "");
}

// The centre of nan_images' hole, and a sample of it: NaN after dilate or erode with any element of at most
// 17 x 13 cells (the hole is 24 x 18), whatever the border.
inline bool hole_centre_is_nan(const Image& out) { return std::isnan(out.row<float>(17)[22 * out.channels()]); }

} // namespace apron::test
