// Fuzz target: the PNG reader (libpng behind our setjmp guards), through decode_image (see decode_target.hpp).
#include "decode_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return apron::fuzz::decode(data, size, "fuzz.png");
}
