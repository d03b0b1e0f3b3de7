// Fuzz target: the JPEG reader (libjpeg behind our setjmp guards, warnings made fatal), through decode_image (see decode_target.hpp).
#include "decode_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return apron::fuzz::decode(data, size, "fuzz.jpeg");
}
