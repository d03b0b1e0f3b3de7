#pragma once
// The body every image-format fuzz target shares: decode through decode_image, as every file is, with a
// small pixel limit so each run stays fast and a memory budget, so that a decompression bomb is refused
// from its header. Refusing the input with apron::Error is the expected outcome for most inputs; any
// other exception, crash, leak or sanitizer report is a bug, and so is an allocation past the budget:
// run_briefly.sh sets libFuzzer's -malloc_limit_mb and -rss_limit_mb from fuzz_memory_budget_mb, so a
// bomb that gets through is reported as a finding rather than exhausting the machine.
//
// Each input is probed too (probe_image, the header alone): whatever decodes must probe, to the same shape.
// Its metadata is read too (read_metadata never throws for a damaged file: it returns what it could read),
// and written back with the image, so the Exif, profile and FITS card paths of both directions see hostile
// bytes.
// The targets differ by their seed corpus (fuzz/corpus/<target>), which steers each one into its own
// format's reader.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/io.hpp"

namespace apron::fuzz {

// Keep in step with run_briefly.sh (FUZZ_MEMORY_BUDGET_MB).
constexpr std::uint64_t fuzz_memory_budget_mb = 256;

inline int decode(const std::uint8_t* data, std::size_t size, const char* name) {
    ReadOptions options;
    options.max_pixels = std::uint64_t(1) << 22;
    options.memory_budget = fuzz_memory_budget_mb << 20;
    ImageShape probed{};
    bool probe_ok = false;
    try {
        probed = probe_image({data, size}, name, options);
        probe_ok = true;
    } catch (const Error&) {
    }
    const ImageMetadata metadata = read_metadata({data, size}, name, options);
    if (metadata.orientation < 0 || metadata.orientation > 8) std::abort();
    try {
        const Image image = decode_image({data, size}, name, options);
        if (!probe_ok || !(probed == image.shape())) std::abort();  // probing is decoding's first step
        if (!metadata.empty() && image.width() * image.height() <= 4096) {
            WriteOptions write;
            write.metadata = metadata;
            for (ImageFormat f : {ImageFormat::jpeg, ImageFormat::png, ImageFormat::tiff, ImageFormat::fits})
                if (can_store(f, image.shape()) && supported_formats().find(to_string(f)) != std::string::npos) {
                    const std::vector<std::uint8_t> file = encode_image(f, image.view(), name, write);
                    const ImageMetadata again = read_metadata(file, name, options);
                    // A profile may be left out where the format refuses it (PNG checks it); never changed.
                    if (!again.icc_profile.empty() && again.icc_profile != metadata.icc_profile) std::abort();
                }
        }
    } catch (const Error&) {
    }
    return 0;
}

} // namespace apron::fuzz
