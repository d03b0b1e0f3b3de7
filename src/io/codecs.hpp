#pragma once
// Internal interface between the dispatch (image_file.cpp) and the per-format codecs. Each decoder gets
// the whole file in memory and the name to put in errors; each encoder gets a host view that the
// dispatch has already checked with can_store(), so encoders only re-check what they alone know.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "apron/errors.hpp"
#include "apron/image.hpp"
#include "apron/io.hpp"

namespace apron::io {

using Bytes = std::span<const std::uint8_t>;
using Buffer = std::vector<std::uint8_t>;

Image decode_pnm(Bytes bytes, const std::string& name, const ReadOptions& options);
Image decode_pfm(Bytes bytes, const std::string& name, const ReadOptions& options);
Image decode_png(Bytes bytes, const std::string& name, const ReadOptions& options);
Image decode_jpeg(Bytes bytes, const std::string& name, const ReadOptions& options);
Image decode_tiff(Bytes bytes, const std::string& name, const ReadOptions& options);

Buffer encode_pnm(ConstImageView image, const std::string& name, const WriteOptions& options);
Buffer encode_pfm(ConstImageView image, const std::string& name, const WriteOptions& options);
Buffer encode_png(ConstImageView image, const std::string& name, const WriteOptions& options);
Buffer encode_jpeg(ConstImageView image, const std::string& name, const WriteOptions& options);
Buffer encode_tiff(ConstImageView image, const std::string& name, const WriteOptions& options);

// Checks a size read from a file header against the reader's limits (positive, at most INT_MAX a side,
// at most options.max_pixels) and returns width * height. Sizes arrive as 64-bit so that a header
// promising 4e9 x 4e9 pixels is refused, not wrapped around.
std::uint64_t check_size(const std::string& name, std::uint64_t width, std::uint64_t height,
                         const ReadOptions& options);
// check_size, then allocates the image (an allocation failure names the file too).
Image allocate_image(const std::string& name, std::uint64_t width, std::uint64_t height, int channels, PixelType type,
                     const ReadOptions& options);

// Byte order helpers: files carry a fixed order, memory holds native order.
inline void swap_bytes_16(std::uint8_t* p, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i, p += 2) std::swap(p[0], p[1]);
}
inline void swap_bytes_32(std::uint8_t* p, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i, p += 4) {
        std::swap(p[0], p[3]);
        std::swap(p[1], p[2]);
    }
}

}  // namespace apron::io
