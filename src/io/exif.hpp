#pragma once
// The one Exif field apron reads and writes itself: Orientation (tag 0x0112 of the first directory). An Exif
// block is a small TIFF file (a byte-order mark, then directories of 12-byte entries); apron otherwise
// copies it whole, unread.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "apron/io.hpp"

namespace apron::io {

// The Orientation of an Exif block (1..8), or 0 when it has none, one out of range or the block is damaged.
// Read as Pillow's exif_transpose reads it: the directory's last Orientation entry, of any numeric type
// (SHORT, LONG, BYTE...), its first value when there are several.
int exif_orientation(std::span<const std::uint8_t> exif);

// An Orientation entry outside 1..8 (0, 9, 255, 65535, or not a number) set to 1 (as stored), so that no
// output repeats it; true when the block changed.
bool drop_bad_exif_orientation(std::vector<std::uint8_t>& exif);

// Sets the Orientation of an Exif block in place (as a SHORT of count 1, whatever the entry was); false when
// it has no Orientation entry to set (a viewer
// then shows the picture as stored) or `orientation` is outside 1..8.
bool set_exif_orientation(std::vector<std::uint8_t>& exif, int orientation);

// A minimal Exif block holding only this orientation (1..8): for a TIFF's orientation written to JPEG or PNG.
std::vector<std::uint8_t> exif_with_orientation(int orientation);

// The orientation metadata says: its own field (a TIFF's tag, or set by mark_upright), else its Exif block's.
int orientation_of(const ImageMetadata& metadata);

// The Exif block a writer stores for `metadata`, at most `max_bytes`: the block itself when it fits, else one
// holding only the orientation (what a viewer needs of it), else nothing.
std::vector<std::uint8_t> exif_to_write(const ImageMetadata& metadata, std::size_t max_bytes);

}  // namespace apron::io
