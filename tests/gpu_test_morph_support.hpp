#pragma once
// What the GPU morphology suites share: the skip without a device, type names for messages, and the border
// options every morphology op takes.
#include <string>
#include <vector>

#include "apron/image.hpp"
#include "plan/plan.hpp"  // cuda_available

#define REQUIRE_GPU() \
    if (!apron::cuda_available()) GTEST_SKIP() << "no CUDA device"

namespace apron::test {

inline const char* type_name(PixelType t) { return t == PixelType::u8 ? "u8" : t == PixelType::u16 ? "u16" : "f32"; }

// Border options of an op spec: ignored (none), constant with a value the type holds, the four mapped modes.
inline std::vector<std::string> morph_borders(PixelType t) {
    const std::string value = t == PixelType::u8 ? "200" : t == PixelType::u16 ? "40000" : "0.625";
    return {"", ",border=constant,value=" + value, ",border=nearest", ",border=reflect", ",border=mirror", ",border=wrap"};
}

} // namespace apron::test
