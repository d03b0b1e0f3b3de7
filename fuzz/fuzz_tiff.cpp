// Fuzz target: the TIFF reader (libtiff over an in-memory file; strips, tiles, planes), entered through
// decode_image as every file is. A small pixel limit keeps each run fast; refusing the input with
// apron::Error is the expected outcome for most inputs, while any other exception, crash, leak or sanitizer
// report is a bug.
#include <cstddef>
#include <cstdint>

#include "apron/errors.hpp"
#include "apron/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
#if APRON_HAVE_TIFF  // without libtiff there is no TIFF reader to fuzz: the target does nothing
    apron::ReadOptions options;
    options.max_pixels = std::uint64_t(1) << 22;
    try {
        apron::decode_image({data, size}, "fuzz.tiff", options);
    } catch (const apron::Error&) {
    }
#else
    (void)data;
    (void)size;
#endif
    return 0;
}
