#pragma once
// Where each format keeps the metadata apron carries besides the profile and Exif (include/apron/io.hpp,
// ImageMetadata): the writers and fit_metadata (metadata_fit.cpp) ask the same functions, so what is said
// to be carried is what is written.
#include <cstdint>
#include <string>
#include <vector>

#include "apron/io.hpp"

namespace apron::io {

// PNG pHYs: pixels per metre (unit 1) or an aspect ratio alone (unit 0), as 31-bit integers. false when
// the metadata has no resolution or one pHYs cannot hold.
struct PngPhys {
    std::uint32_t x = 0, y = 0;
    int unit = 0;
};
bool png_phys(const ImageMetadata& m, PngPhys& out);

// JPEG JFIF density: dots per inch (unit 1), per centimetre (2) or an aspect ratio (0), whole numbers up to
// 65535. false when the metadata has no resolution or the density cannot state it exactly.
struct JpegDensity {
    std::uint16_t x = 0, y = 0;
    std::uint8_t unit = 0;
};
bool jpeg_density(const ImageMetadata& m, JpegDensity& out);

// Whether a PNG of `channels` channels would keep this colour profile: libpng checks it against the image
// (a gray profile for gray, RGB for colour, a sane header) and leaves out, with a mere warning, one that does
// not fit; `why` then holds libpng's reason (png.cpp).
bool png_keeps_profile(const std::vector<std::uint8_t>& icc, int channels, std::string* why = nullptr);

// Whether a description is OME-XML (an OME-TIFF's ImageDescription).
bool is_ome_xml(const std::string& description);

// The PNG keyword for a carried TIFF text tag (Software, DateTime, Artist, Copyright), or nullptr.
const char* png_keyword_of(std::uint16_t tiff_tag);

// The TIFF directory entries that state `m` (ImageDescription, Orientation, the resolution, the carried
// tags, the ICC profile), in tag order, as a writer of its own directories stores them: ASCII with its final
// NUL, RATIONAL as two LONGs, values in this machine's byte order. The tiled TIFF row sink uses them.
std::vector<TiffTag> tiff_directory_tags(const ImageMetadata& m);

// The keyword of a FITS card (its first 8 columns without trailing blanks: "OBJECT", "DATE-OBS", "HISTORY",
// "" for a blank card).
std::string fits_keyword(const std::string& card);
// Whether a FITS writer writes the card anew (SIMPLE, XTENSION, BITPIX, NAXIS, NAXISn, EXTEND, BZERO, BSCALE,
// PCOUNT, GCOUNT, END) or the new data would contradict it (CHECKSUM, DATASUM): never carried.
bool is_structural_fits_card(const std::string& card);

// A JPEG comment holds at most 65533 bytes.
constexpr std::size_t max_jpeg_comment = 65533;

}  // namespace apron::io
