// Fuzz target: the TIFF reader (libtiff from memory: strips, tiles, planes), through decode_image (see decode_target.hpp),
// and a page of more than 4 samples as a band stack (apron/volume_io.hpp): probed, decoded to the probe's shape,
// written back as bands and read again to the same bits.
#include "decode_target.hpp"

#include <cstring>

#include "io/codecs.hpp"

namespace {

#if APRON_HAVE_TIFF
void decode_bands(const std::uint8_t* data, std::size_t size) {
    using namespace apron;
    ReadOptions options;
    options.max_pixels = std::uint64_t(1) << 22;
    options.memory_budget = fuzz::fuzz_memory_budget_mb << 20;
    const io::MemorySource source({data, size});
    try {
        const TiffBands bands = io::probe_tiff_bands(source, "fuzz.tiff", options);
        if (bands.bands == 0) return;
        const Image stack = io::decode_tiff_bands(source, "fuzz.tiff", options);
        if (!(stack.shape() == bands.shape)) std::abort();  // probing is decoding's first step
        if (stack.shape().pixels() > 4096) return;
        WriteOptions write;
        write.metadata = read_metadata({data, size}, "fuzz.tiff", options);
        const io::Buffer file = io::encode_tiff_bands(stack.view(), bands, "fuzz.tiff", write);
        const Image again = io::decode_tiff_bands(io::MemorySource(file), "fuzz.tiff", options);
        if (!(again.shape() == stack.shape())) std::abort();
        for (int y = 0; y < int(stack.shape().rows()); ++y)
            if (std::memcmp(again.view().row_bytes(y), stack.view().row_bytes(y), stack.shape().row_bytes()) != 0) std::abort();
    } catch (const Error&) {
    }
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
#if APRON_HAVE_TIFF  // without libtiff there is no TIFF reader to fuzz: the target does nothing
    decode_bands(data, size);
    return apron::fuzz::decode(data, size, "fuzz.tiff");
#else
    (void)data;
    (void)size;
    return 0;
#endif
}
