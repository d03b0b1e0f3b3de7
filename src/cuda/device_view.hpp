#pragma once
// What a kernel needs to know of an image: a plain struct passed by value.
#include <cstddef>

#include "apron/image.hpp"

namespace apron::cuda {

struct DeviceView {
    const std::byte* data;
    std::size_t pitch;
    int width, height, channels;
};

inline DeviceView device_view(ConstImageView v) { return {v.data, v.pitch, v.width(), v.height(), v.channels()}; }

} // namespace apron::cuda
