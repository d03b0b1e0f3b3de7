// Fuzzes op-spec parsing ("NAME:key=value,...") and planning; small pipelines also run on a tiny image.
#include <cstdint>
#include <string>

#include "apron/errors.hpp"
#include "apron/pipeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string spec(reinterpret_cast<const char*>(data), size);
    // Mask files are read by path; keep the fuzzer away from the filesystem.
    if (spec.find('/') != std::string::npos || spec.find("mask=") != std::string::npos) return 0;
    try {
        apron::Pipeline p({spec});
        apron::Image img(5, 3, 2, apron::PixelType::u8);
        for (int y = 0; y < 3; ++y)
            for (int k = 0; k < 10; ++k) img.row<std::uint8_t>(y)[k] = std::uint8_t(y * 31 + k * 7);
        apron::RunOptions o;
        o.backend = apron::Backend::reference;
        (void)p.describe(img.shape(), o);
        // Large masks or many iterations on a tiny image are still cheap; cap them anyway.
        if (size < 64) (void)p.run(img, o);
    } catch (const apron::Error&) {
    }
    return 0;
}
