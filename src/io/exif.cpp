#include "io/exif.hpp"

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>

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

// The Orientation entry of the first directory, read as Pillow reads it (ImageFileDirectory_v2, then
// ImageOps.exif_transpose): the last such entry of the directory, of any numeric type (BYTE, SHORT, LONG,
// their signed kinds, RATIONAL, FLOAT, DOUBLE), its first value when the count is larger than 1. `at` is
// where the 12-byte entry lies (0: none).
struct OrientationEntry {
    std::size_t at = 0;
    double value = 0;  // the first value; NaN when it cannot be read as a number
};

OrientationEntry orientation_entry(std::span<const std::uint8_t> exif) {
    if (exif.size() < 8) return {};
    if (!((exif[0] == 'I' && exif[1] == 'I') || (exif[0] == 'M' && exif[1] == 'M'))) return {};
    const ExifReader r{exif, exif[0] == 'I'};
    std::uint16_t magic = 0, entries = 0;
    std::uint32_t ifd = 0;
    if (!r.u16(2, magic) || magic != 42 || !r.u32(4, ifd) || !r.u16(ifd, entries)) return {};
    OrientationEntry found;
    for (std::uint32_t i = 0; i < entries; ++i) {
        const std::size_t at = std::size_t(ifd) + 2 + 12 * std::size_t(i);
        std::uint16_t tag = 0, type = 0;
        std::uint32_t count = 0;
        if (!r.u16(at, tag) || !r.u16(at + 2, type) || !r.u32(at + 4, count)) break;
        if (tag != orientation_tag || count == 0) continue;
        static constexpr std::size_t widths[] = {0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8};
        if (type >= sizeof widths / sizeof widths[0] || type == 2 || type == 7) {  // ASCII, UNDEFINED: no number
            found = {at, std::nan("")};
            continue;
        }
        const std::size_t bytes = widths[type] * std::size_t(count);
        std::uint32_t offset = 0;
        if (bytes > 4 && !r.u32(at + 8, offset)) break;
        const std::size_t v = bytes > 4 ? offset : at + 8;
        std::uint16_t h = 0;
        std::uint32_t w = 0, d = 0;
        double value = std::nan("");
        switch (type) {
        case 1: if (v < exif.size()) value = exif[v]; break;
        case 6: if (v < exif.size()) value = std::int8_t(exif[v]); break;
        case 3: if (r.u16(v, h)) value = h; break;
        case 8: if (r.u16(v, h)) value = std::int16_t(h); break;
        case 4: if (r.u32(v, w)) value = w; break;
        case 9: if (r.u32(v, w)) value = std::int32_t(w); break;
        case 5: if (r.u32(v, w) && r.u32(v + 4, d) && d) value = double(w) / d; break;
        case 10: if (r.u32(v, w) && r.u32(v + 4, d) && d) value = double(std::int32_t(w)) / std::int32_t(d); break;
        case 11: if (r.u32(v, w)) value = std::bit_cast<float>(w); break;
        case 12: if (r.u32(v, w) && r.u32(v + 4, d)) value = std::bit_cast<double>(r.little ? std::uint64_t(d) << 32 | w : std::uint64_t(w) << 32 | d); break;
        default: break;
        }
        found = {at, value};  // a later entry replaces an earlier one, as in Pillow's dictionary
    }
    return found;
}

int orientation_in_range(double value) {
    return value >= 1 && value <= 8 && value == std::floor(value) ? int(value) : 0;
}

}  // namespace

int exif_orientation(std::span<const std::uint8_t> exif) { return orientation_in_range(orientation_entry(exif).value); }

bool set_exif_orientation(std::vector<std::uint8_t>& exif, int orientation) {
    const OrientationEntry e = orientation_entry(exif);
    if (e.at == 0 || orientation < 1 || orientation > 8) return false;
    // Rewritten as a SHORT of count 1, the value in the entry itself: whatever type and count it had.
    const bool little = exif[0] == 'I';
    const std::uint8_t entry[10] = {std::uint8_t(little ? 3 : 0), std::uint8_t(little ? 0 : 3),  // type
                                    std::uint8_t(little ? 1 : 0), 0, 0, std::uint8_t(little ? 0 : 1),  // count 1
                                    std::uint8_t(little ? orientation : 0), std::uint8_t(little ? 0 : orientation), 0, 0};
    std::memcpy(exif.data() + e.at + 2, entry, sizeof entry);
    return true;
}

bool drop_bad_exif_orientation(std::vector<std::uint8_t>& exif) {
    const OrientationEntry e = orientation_entry(exif);
    if (e.at == 0 || orientation_in_range(e.value) != 0) return false;
    return set_exif_orientation(exif, 1);
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
