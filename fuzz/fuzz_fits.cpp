// Fuzz target: the FITS reader (cfitsio from memory: headers, the image of the primary HDU or the first
// extension, tile-compressed images, cubes), through decode_image (see decode_target.hpp); a cube's second
// plane is decoded too (ReadOptions::page), since one image of a cube is only read by plane.
#include "decode_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
#if APRON_HAVE_FITS  // without cfitsio there is no FITS reader to fuzz: the target does nothing
    apron::fuzz::decode(data, size, "fuzz.fits");
    apron::ReadOptions plane;
    plane.max_pixels = std::uint64_t(1) << 22;
    plane.memory_budget = apron::fuzz::fuzz_memory_budget_mb << 20;
    plane.page = 1;
    try {
        const apron::Image image = apron::decode_image({data, size}, "fuzz.fits", plane);
        if (!(apron::probe_image({data, size}, "fuzz.fits", plane) == image.shape())) std::abort();
    } catch (const apron::Error&) {
    }
    return 0;
#else
    (void)data;
    (void)size;
    return 0;
#endif
}
