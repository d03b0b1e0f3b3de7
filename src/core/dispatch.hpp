#pragma once
// Turns a run-time PixelType into a compile-time sample type: with_type(t, [&]<class T>() { ... }).
#include <cstdint>
#include <utility>

#include "apron/image.hpp"

namespace apron {

template <class F>
decltype(auto) with_type(PixelType t, F&& f) {
    switch (t) {
    case PixelType::u8: return std::forward<F>(f).template operator()<std::uint8_t>();
    case PixelType::u16: return std::forward<F>(f).template operator()<std::uint16_t>();
    case PixelType::f32: break;
    }
    return std::forward<F>(f).template operator()<float>();
}

// Lowest and highest finite values of a sample type, as double. (Morphology's identities, NaN for f32, are
// in core/morph_value.hpp.)
template <class T> constexpr double lowest_value() { return std::is_same_v<T, float> ? -3.4028234663852886e38 : 0.0; }
template <class T> constexpr double highest_value() {
    return std::is_same_v<T, float> ? 3.4028234663852886e38 : std::is_same_v<T, std::uint8_t> ? 255.0 : 65535.0;
}

} // namespace apron
