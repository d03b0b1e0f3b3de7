// PNG through libpng. Reading expands palettes to RGB(A), gray below 8 bits to 8 bits and tRNS to an
// alpha channel, so every file becomes u8 or u16 with 1 to 4 channels; 16-bit samples become native-endian.
//
// libpng reports errors by longjmp. A longjmp that skips a C++ destructor is undefined behaviour, so every
// libpng call that can fail runs inside one of the small `step_*` functions below, which own no C++
// objects: each sets its own jump target and returns false on error. The C++ code around them owns the
// libpng structs, the image and the row pointers, and turns the captured message into an apron::Error.
#include <png.h>

#include <bit>
#include <cstdio>
#include <cstring>

#include "io/codecs.hpp"

namespace apron::io {

namespace {

constexpr bool little_endian_host = std::endian::native == std::endian::little;

// Shared by the read and write paths; plain data, so it survives the longjmp unharmed.
struct PngContext {
    Bytes in{};  // reading: the file
    std::size_t pos = 0;
    Buffer* out = nullptr;  // writing: the growing file
    char message[256] = "";
};

void on_error(png_structp png, png_const_charp message) {
    auto* ctx = static_cast<PngContext*>(png_get_error_ptr(png));
    std::snprintf(ctx->message, sizeof ctx->message, "%s", message);
    png_longjmp(png, 1);
}
// Warnings (a damaged ancillary chunk, an unknown chunk) do not make the pixels wrong; stay quiet.
void on_warning(png_structp, png_const_charp) {}

void read_from_memory(png_structp png, png_bytep dst, std::size_t n) {
    auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
    if (ctx->in.size() - ctx->pos < n) png_error(png, "truncated data");
    std::memcpy(dst, ctx->in.data() + ctx->pos, n);
    ctx->pos += n;
}

void write_to_memory(png_structp png, png_bytep src, std::size_t n) {
    auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
    bool failed = false;
    try {
        ctx->out->insert(ctx->out->end(), src, src + n);
    } catch (...) {
        failed = true;
    }
    if (failed) png_error(png, "out of memory");  // outside the catch: no exception is in flight
}
void flush_memory(png_structp) {}

bool step_read_info(png_structp png, png_infop info) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_read_info(png, info);
    return true;
}

// Called only after the caller checked the size: update_info allocates row buffers of the full width.
bool step_set_transforms(png_structp png, png_infop info) {
    if (setjmp(png_jmpbuf(png))) return false;
    const int color = png_get_color_type(png, info);
    const int depth = png_get_bit_depth(png, info);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (depth == 16 && little_endian_host) png_set_swap(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    return true;
}

bool step_read_rows(png_structp png, png_infop info, png_bytepp rows) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_read_image(png, rows);
    png_read_end(png, info);  // verifies the chunks after the pixels up to IEND: a cut file is refused
    return true;
}

bool step_write(png_structp png, png_infop info, int width, int height, int depth, int color, int level,
                png_bytepp rows) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_set_IHDR(png, info, png_uint_32(width), png_uint_32(height), depth, color, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, level);
    png_write_info(png, info);
    if (depth == 16 && little_endian_host) png_set_swap(png);
    png_write_image(png, rows);
    png_write_end(png, nullptr);
    return true;
}

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

}  // namespace

Image decode_png(Bytes bytes, const std::string& name, const ReadOptions& options) {
    PngContext ctx;
    ctx.in = bytes;
    ReadStructs s;
    s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, on_error, on_warning);
    if (s.png) s.info = png_create_info_struct(s.png);
    if (!s.png || !s.info) fail(name, "out of memory starting the PNG decoder");
    png_set_read_fn(s.png, &ctx, read_from_memory);
    // Our own max_pixels check is the limit; libpng's default (1e6 a side) would refuse wide strips.
    png_set_user_limits(s.png, 0x7fffffff, 0x7fffffff);

    auto png_failed = [&]() { fail(name, std::string("bad PNG file: ") + ctx.message); };
    if (!step_read_info(s.png, s.info)) png_failed();
    check_size(name, png_get_image_width(s.png, s.info), png_get_image_height(s.png, s.info), options);
    if (!step_set_transforms(s.png, s.info)) png_failed();

    const int channels = png_get_channels(s.png, s.info);
    const int depth = png_get_bit_depth(s.png, s.info);
    if (channels < 1 || channels > 4 || (depth != 8 && depth != 16))
        fail(name, "unsupported PNG layout (" + std::to_string(channels) + " channels of " + std::to_string(depth) +
                       " bits)");
    Image img = allocate_image(name, png_get_image_width(s.png, s.info), png_get_image_height(s.png, s.info), channels,
                               depth == 16 ? PixelType::u16 : PixelType::u8, options);
    std::vector<png_bytep> rows(std::size_t(img.height()));
    for (int y = 0; y < img.height(); ++y) rows[y] = reinterpret_cast<png_bytep>(img.view().row_bytes(y));
    if (!step_read_rows(s.png, s.info, rows.data())) png_failed();
    return img;
}

Buffer encode_png(ConstImageView image, const std::string& name, const WriteOptions& options) {
    if (options.png_compression < 0 || options.png_compression > 9)
        fail(name, "PNG compression level " + std::to_string(options.png_compression) + " is outside 0..9");
    static constexpr int color_of_channels[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                                PNG_COLOR_TYPE_RGB_ALPHA};
    Buffer out;
    PngContext ctx;
    ctx.out = &out;
    WriteStructs s;
    s.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &ctx, on_error, on_warning);
    if (s.png) s.info = png_create_info_struct(s.png);
    if (!s.png || !s.info) fail(name, "out of memory starting the PNG encoder");
    png_set_write_fn(s.png, &ctx, write_to_memory, flush_memory);

    // libpng copies each row before transforming it, so handing it our const rows is safe.
    std::vector<png_bytep> rows(std::size_t(image.height()));
    for (int y = 0; y < image.height(); ++y)
        rows[y] = reinterpret_cast<png_bytep>(const_cast<std::byte*>(image.row_bytes(y)));
    const int depth = image.type() == PixelType::u16 ? 16 : 8;
    if (!step_write(s.png, s.info, image.width(), image.height(), depth, color_of_channels[image.channels()],
                    options.png_compression, rows.data()))
        fail(name, std::string("cannot encode PNG: ") + ctx.message);
    return out;
}

}  // namespace apron::io
