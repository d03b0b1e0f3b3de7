#pragma once
// libpng's pieces shared by the whole-image codec (png.cpp) and the row source and sink (png_rows.cpp), so
// that both decode with the same transforms and give the same bits. The step_* functions set their own jump
// target (libpng reports errors by longjmp) and return false on error, the message left in the PngContext.
#include <png.h>

#include <bit>
#include <cstdint>

#include "io/codecs.hpp"

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
