#pragma once
// Image files. The format follows the file's content on read (magic bytes) and the extension on write:
// .pgm .ppm .pnm (Netpbm P2/P3/P5/P6), .pfm (Pf/PF), .png, .jpg/.jpeg, .tif/.tiff (when built with libtiff).
// Every reader refuses malformed, truncated or absurd files with an apron::Error naming the file.
// Every writer writes a temporary file beside the target and renames it, so no partial output remains.
//
// What each format holds (read -> write):
//   PNM   P2/P5 gray, P3/P6 RGB, P7 (PAM) 1-4 channels, P1/P4 bitmaps (black 0, white 255) -> u8/u16, 1 or 3
//         channels (P5/P6, or P2/P3 with pnm_ascii). Samples are kept as stored, not rescaled: maxval <= 255
//         gives u8, larger gives u16 (a maxval-4095 file holds 0..4095). Wide samples are big-endian in files.
//   PFM   Pf (1 channel) / PF (3), either byte order, rows bottom to top -> f32, little-endian.
//   PNG   gray, gray+alpha, RGB, RGBA, palette (expanded to RGB/RGBA), 1-16 bits (below 8 expanded to 8)
//         -> u8/u16, 1-4 channels.
//   JPEG  gray, YCbCr/RGB (CMYK refused); corrupt or truncated data is refused, not patched -> u8, 1 or 3.
//   TIFF  8/16-bit unsigned and 32-bit float, 1-4 samples, gray/RGB, strips or tiles, contiguous or separate
//         planes, first page only -> u8/u16/f32, 1-4 channels, deflate-compressed strips.
// Multi-byte samples are native-endian in memory.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "apron/image.hpp"

namespace apron {

// Byte order of binary samples wider than a byte in PNM files: Netpbm says big-endian; GenConv writes its
// 16-bit PGM files little-endian.
enum class ByteOrder : unsigned char { big, little };

struct ReadOptions {
    std::uint64_t max_pixels = std::uint64_t(1) << 30;  // refuse larger images (1 Gpix by default)
    HostMemory memory = HostMemory::pageable;  // pinned: decode straight into page-locked memory (batches)
    // Bytes reading may take: the file itself and the decoded image (checked from the header, before
    // either is allocated). 0: no limit but max_pixels. The CLI passes its --memory budget here.
    std::uint64_t memory_budget = 0;
    ByteOrder pnm_byte_order = ByteOrder::big;  // 16-bit binary PNM samples (P5/P6/P7)
};

struct WriteOptions {
    int jpeg_quality = 95;   // 1..100
    int png_compression = 6; // 0..9 (zlib level)
    bool pnm_ascii = false;  // P2/P3 instead of P5/P6
};

enum class ImageFormat { pnm, pfm, png, jpeg, tiff };
const char* to_string(ImageFormat f);

Image read_image(const std::string& path, const ReadOptions& options = {});
// Decodes an image held in memory (the fuzz targets and tests use this); `name` is used in errors.
Image decode_image(std::span<const std::uint8_t> bytes, const std::string& name, const ReadOptions& options = {});

void write_image(const std::string& path, ConstImageView image, const WriteOptions& options = {});
std::vector<std::uint8_t> encode_image(ImageFormat format, ConstImageView image, const std::string& name,
                                       const WriteOptions& options = {});

// The format written for a path, from its extension; throws apron::Error for an unknown extension.
ImageFormat format_for_path(const std::string& path);
// Whether `format` can store `shape` (type and channels); the message says why not and what to use.
bool can_store(ImageFormat format, const ImageShape& shape, std::string* why = nullptr);
// Formats compiled into this build, e.g. "pnm pfm png jpeg tiff".
std::string supported_formats();

// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsync, then rename.
// Used by every writer and by anything else apron writes (reports, manifests).
void write_file_atomically(const std::string& path, std::span<const std::uint8_t> bytes);

} // namespace apron
