#pragma once
// The body every image-format fuzz target shares: decode through decode_image, as every file is, with a
// small pixel limit so each run stays fast. Refusing the input with apron::Error is the expected outcome
// for most inputs; any other exception, crash, leak or sanitizer report is a bug. The targets differ by
// their seed corpus (fuzz/corpus/<target>), which steers each one into its own format's reader.
#include <cstddef>
#include <cstdint>

#include "apron/errors.hpp"
#include "apron/io.hpp"

namespace apron::fuzz {

inline int decode(const std::uint8_t* data, std::size_t size, const char* name) {
    ReadOptions options;
    options.max_pixels = std::uint64_t(1) << 22;
    try {
        decode_image({data, size}, name, options);
    } catch (const Error&) {
    }
    return 0;
}

} // namespace apron::fuzz
