#include "io/exif.hpp"

#include <cstddef>

namespace apron::io {

namespace {

constexpr std::uint16_t orientation_tag = 0x0112;
constexpr std::uint16_t short_type = 3;

// Reads the block's integers in its own byte order, refusing reads past its end.
struct ExifReader {
    std::span<const std::uint8_t> b;
    bool little = false;

    bool u16(std::size_t at, std::uint16_t& v) const {
        if (at > b.size() || b.size() - at < 2) return false;
        v = little ? std::uint16_t(b[at] | b[at + 1] << 8) : std::uint16_t(b[at] << 8 | b[at + 1]);
        return true;
    }
    bool u32(std::size_t at, std::uint32_t& v) const {
        std::uint16_t hi = 0, lo = 0;
        if (!u16(at, little ? lo : hi) || !u16(at + 2, little ? hi : lo)) return false;
        v = std::uint32_t(hi) << 16 | lo;
        return true;
    }
};

// Where the Orientation entry's value lies in the block (a SHORT, count 1), or 0 when there is none.
std::size_t orientation_value_at(std::span<const std::uint8_t> exif) {
    if (exif.size() < 8) return 0;
    if (!((exif[0] == 'I' && exif[1] == 'I') || (exif[0] == 'M' && exif[1] == 'M'))) return 0;
    const ExifReader r{exif, exif[0] == 'I'};
    std::uint16_t magic = 0, entries = 0;
    std::uint32_t ifd = 0;
    if (!r.u16(2, magic) || magic != 42 || !r.u32(4, ifd) || !r.u16(ifd, entries)) return 0;
    for (std::uint32_t i = 0; i < entries; ++i) {
        const std::size_t at = std::size_t(ifd) + 2 + 12 * std::size_t(i);
        std::uint16_t tag = 0, type = 0, value = 0;
        std::uint32_t count = 0;
        if (!r.u16(at, tag) || !r.u16(at + 2, type) || !r.u32(at + 4, count) || !r.u16(at + 8, value)) return 0;
        if (tag == orientation_tag) return type == short_type && count == 1 ? at + 8 : 0;
    }
    return 0;
}

}  // namespace

int exif_orientation(std::span<const std::uint8_t> exif) {
    const std::size_t at = orientation_value_at(exif);
    std::uint16_t value = 0;
    if (at == 0 || !ExifReader{exif, exif[0] == 'I'}.u16(at, value)) return 0;
    return value >= 1 && value <= 8 ? int(value) : 0;
}

bool set_exif_orientation(std::vector<std::uint8_t>& exif, int orientation) {
    const std::size_t at = orientation_value_at(exif);
    if (at == 0 || orientation < 1 || orientation > 8) return false;
    const bool little = exif[0] == 'I';
    exif[at] = std::uint8_t(little ? orientation : 0);
    exif[at + 1] = std::uint8_t(little ? 0 : orientation);
    return true;
}

int orientation_of(const ImageMetadata& metadata) {
    return metadata.orientation ? metadata.orientation : exif_orientation(metadata.exif);
}

std::vector<std::uint8_t> exif_to_write(const ImageMetadata& metadata, std::size_t max_bytes) {
    if (!metadata.exif.empty() && metadata.exif.size() <= max_bytes) return metadata.exif;
    return exif_with_orientation(orientation_of(metadata));
}

std::vector<std::uint8_t> exif_with_orientation(int orientation) {
    if (orientation < 1 || orientation > 8) return {};
    // Big-endian: "MM", 42, the first directory at 8; one entry (SHORT, count 1, the value left-aligned in
    // its 4-byte field); no next directory.
    return {'M', 'M', 0, 42, 0, 0, 0, 8,                                 // header
            0, 1,                                                        // one entry
            0x01, 0x12, 0, short_type, 0, 0, 0, 1, 0, std::uint8_t(orientation), 0, 0,  // Orientation
            0, 0, 0, 0};                                                 // no next directory
}

}  // namespace apron::io
