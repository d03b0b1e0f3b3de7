// Fuzz target: the FITS reader (cfitsio from memory: headers, the image of the primary HDU or the first
// extension, tile-compressed images, cubes), through decode_image (see decode_target.hpp); a cube's second
// plane is decoded too (ReadOptions::page), since one image of a cube is only read by plane, and the whole
// cube as one volume (read_volume's reader, decode_fits_volume, from memory here), whose plane 1 must be that
// page bit for bit.
#include <cstring>

#include "decode_target.hpp"
#include "io/codecs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
#if APRON_HAVE_FITS  // without cfitsio there is no FITS reader to fuzz: the target does nothing
    apron::fuzz::decode(data, size, "fuzz.fits");
    apron::ReadOptions plane;
    plane.max_pixels = std::uint64_t(1) << 22;
    plane.memory_budget = apron::fuzz::fuzz_memory_budget_mb << 20;
    plane.page = 1;
    apron::Image page;
    try {
        page = apron::decode_image({data, size}, "fuzz.fits", plane);
        if (!(apron::probe_image({data, size}, "fuzz.fits", plane) == page.shape())) std::abort();
    } catch (const apron::Error&) {
    }
    apron::ReadOptions whole = plane;
    whole.page = -1;
    try {
        const apron::Image volume = apron::io::decode_fits_volume(apron::io::MemorySource({data, size}), "fuzz.fits", whole);
        if (page.width() > 0) {
            if (volume.depth() < 2 || !(volume.view().plane(1).shape == page.shape())) std::abort();
            for (int y = 0; y < page.height(); ++y)
                if (std::memcmp(volume.view().plane(1).row_bytes(y), page.view().row_bytes(y), page.shape().row_bytes()) != 0) std::abort();
        }
    } catch (const apron::Error&) {
    }
    return 0;
#else
    (void)data;
    (void)size;
    return 0;
#endif
}
