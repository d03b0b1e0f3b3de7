// Fuzz target: the TIFF reader (libtiff from memory: strips, tiles, planes), through decode_image (see decode_target.hpp).
#include "decode_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
#if APRON_HAVE_TIFF  // without libtiff there is no TIFF reader to fuzz: the target does nothing
    return apron::fuzz::decode(data, size, "fuzz.tiff");
#else
    (void)data;
    (void)size;
    return 0;
#endif
}
