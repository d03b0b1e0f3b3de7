#pragma once
// The one Exif field apron reads and writes itself: Orientation (tag 0x0112 of the first directory). An Exif
// block is a small TIFF file (a byte-order mark, then directories of 12-byte entries); apron otherwise
// copies it whole, unread.
#include <cstdint>
#include <span>
#include <vector>

namespace apron::io {

// The Orientation of an Exif block (1..8), or 0 when it has none or the block is damaged.
int exif_orientation(std::span<const std::uint8_t> exif);

// Sets the Orientation of an Exif block in place; false when it has no Orientation entry to set (a viewer
// then shows the picture as stored) or `orientation` is outside 1..8.
bool set_exif_orientation(std::vector<std::uint8_t>& exif, int orientation);

// A minimal Exif block holding only this orientation (1..8): for a TIFF's orientation written to JPEG or PNG.
std::vector<std::uint8_t> exif_with_orientation(int orientation);

}  // namespace apron::io
