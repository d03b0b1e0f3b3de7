#pragma once
// What the GPU morphology suites share: the skip without a device, type names for messages, and the border
// options every morphology op takes.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apron/image.hpp"
#include "apron/pipeline.hpp"
#include "plan/plan.hpp"  // cuda_available
#include "test_support.hpp"

#define REQUIRE_GPU() \
    if (!apron::cuda_available()) GTEST_SKIP() << "no CUDA device"

namespace apron::test {

inline const char* type_name(PixelType t) { return t == PixelType::u8 ? "u8" : t == PixelType::u16 ? "u16" : "f32"; }

// Border options of an op spec: ignored (none), constant with a value the type holds, the four mapped modes.
inline std::vector<std::string> morph_borders(PixelType t) {
    const std::string value = t == PixelType::u8 ? "200" : t == PixelType::u16 ? "40000" : "0.625";
    return {"", ",border=constant,value=" + value, ",border=nearest", ",border=reflect", ",border=mirror", ",border=wrap"};
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

} // namespace apron::test
