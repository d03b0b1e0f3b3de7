#pragma once
// The one place that turns a run-time mask size or radius into a compile-time one of the kernels written
// over samples: f.template operator()<S>() for an S taken from a list of instantiated_sizes.hpp, so a
// dispatch can name no size that no generated file compiles. (The channel count: with_channels.hpp.)
#include <cstddef>
#include <iterator>
#include <utility>

#include "cuda/instantiated_sizes.hpp"

namespace apron::cuda {

// The size of `List` equal to `size`; false (f not called) when the list lacks it.
template <const auto& List, class F>
bool with_size(int size, F&& f) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return ((List[I].size == size && (f.template operator()<List[I].size>(), true)) || ...);
    }(std::make_index_sequence<std::size(List)>{});
}

// The smallest size of `List` at least `reach` (a bucket: the kernel pads up to it); false (f not called)
// when every size is smaller.
template <const auto& List, class F>
bool with_bucket(int reach, F&& f) {
    static_assert(strictly_increasing(List), "the first bucket that covers the reach must be the smallest");
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return ((reach <= List[I].size && (f.template operator()<List[I].size>(), true)) || ...);
    }(std::make_index_sequence<std::size(List)>{});
}

} // namespace apron::cuda
