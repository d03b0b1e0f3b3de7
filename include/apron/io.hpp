#pragma once
// Image files. The format follows the file's content on read (magic bytes) and the extension on write:
// .pgm .ppm .pnm (Netpbm P2/P3/P5/P6), .pfm (Pf/PF), .png, .jpg/.jpeg, .tif/.tiff (when built with libtiff).
// Every reader refuses malformed, truncated or absurd files with an apron::Error naming the file.
// Every writer writes a temporary file beside the target and renames it, so no partial output remains.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "apron/image.hpp"

namespace apron {

struct ReadOptions {
    std::uint64_t max_pixels = std::uint64_t(1) << 30;  // refuse larger images (1 Gpix by default)
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
