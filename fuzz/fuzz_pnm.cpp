// Fuzz target: the Netpbm reader (P1-P7 headers, comments, plain and binary samples), through decode_image (see decode_target.hpp).
#include "decode_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return apron::fuzz::decode(data, size, "fuzz.pnm");
}
