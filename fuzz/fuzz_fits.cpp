// Fuzz target: the FITS reader (cfitsio from memory: headers, the image of the primary HDU or the first
// extension, tile-compressed images, cubes), through decode_image (see decode_target.hpp).
#include "decode_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
#if APRON_HAVE_FITS  // without cfitsio there is no FITS reader to fuzz: the target does nothing
    return apron::fuzz::decode(data, size, "fuzz.fits");
#else
    (void)data;
    (void)size;
    return 0;
#endif
}
