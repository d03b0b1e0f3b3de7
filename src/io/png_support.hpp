#pragma once
// libpng's pieces shared by the whole-image codec (png.cpp) and the row source and sink (png_rows.cpp), so
// that both decode with the same transforms and give the same bits. The step_* functions set their own jump
// target (libpng reports errors by longjmp) and return false on error, the message left in the PngContext.
#include <png.h>

#include <bit>
#include <cstdint>

#include <string>
#include <vector>

#include "io/codecs.hpp"
#include "io/metadata_places.hpp"

namespace apron::io::png_detail {

constexpr bool little_endian_host = std::endian::native == std::endian::little;

// Shared by the read and write paths; plain data, so it survives the longjmp unharmed.
struct PngContext {
    const ByteSource* in = nullptr;  // reading: the file
    std::uint64_t pos = 0;
    Buffer* out = nullptr;  // writing: the growing file (the whole-image encoder)
    int fd = -1;            // writing: the partial file (the row sink), written with pwrite at `pos`
    int write_error = 0;    // errno of the first failed write to fd
    char message[256] = "";
};

void on_error(png_structp png, png_const_charp message);
void on_warning(png_structp, png_const_charp);
// Reads `in` at `pos`; "truncated data" at its end.
void read_from_source(png_structp png, png_bytep dst, std::size_t n);
bool step_read_info(png_structp png, png_infop info);
// The transforms read_image applies (palette to RGB, gray below 8 bits to 8, tRNS to alpha, 16-bit samples
// native-endian), then png_read_update_info. *passes: 7 for an interlaced file, else 1.
bool step_set_transforms(png_structp png, png_infop info, int* passes);
// The channels those transforms give, from the header.
int channels_after_transforms(png_structp png, png_infop info);

// What a PNG writer stores of ImageMetadata (metadata_places.hpp says where): the Exif block, the profile,
// pHYs, the description as UTF-8 iTXt (compressed when long) and the text tags as tEXt. Built in C++
// (png_metadata_of), then set inside a step function (set_png_metadata), which owns nothing.
struct PngMetadata {
    std::vector<std::uint8_t> exif;
    std::vector<std::uint8_t> icc;
    PngPhys phys;
    bool has_phys = false;
    std::vector<std::string> values;  // the texts png_text points into
    std::vector<png_text> text;
};
PngMetadata png_metadata_of(const ImageMetadata& m);
// Inside a step function (libpng may longjmp). libpng checks a profile against the image (gray or RGB, a
// sane header) and leaves out one that does not fit, with a warning: metadata never stops a write.
void set_png_metadata(png_structp png, png_infop info, const PngMetadata& m);

struct ReadStructs {
    png_structp png = nullptr;
    png_infop info = nullptr;
    ~ReadStructs() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};
struct WriteStructs {
    png_structp png = nullptr;
    png_infop info = nullptr;
    ~WriteStructs() { png_destroy_write_struct(&png, info ? &info : nullptr); }
};

}  // namespace apron::io::png_detail
