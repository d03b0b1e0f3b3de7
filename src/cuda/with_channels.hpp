#pragma once
// The one place that turns a run-time channel count (1-4 interleaved samples per pixel) into the
// compile-time stride of the kernels written over samples: f.template operator()<C>().
#include <string>

#include "apron/errors.hpp"

namespace apron::cuda {

template <class F>
decltype(auto) with_channels(int channels, F&& f) {
    switch (channels) {
    case 1: return f.template operator()<1>();
    case 2: return f.template operator()<2>();
    case 3: return f.template operator()<3>();
    case 4: return f.template operator()<4>();
    }
    throw Error("image: " + std::to_string(channels) + " channels (1 to 4 are supported)");
}

} // namespace apron::cuda
