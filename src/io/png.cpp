// PNG through libpng. Reading expands palettes to RGB(A), gray below 8 bits to 8 bits and tRNS to an
// alpha channel, so every file becomes u8 or u16 with 1 to 4 channels; 16-bit samples become native-endian.
//
// libpng reports errors by longjmp. A longjmp that skips a C++ destructor is undefined behaviour, so every
// libpng call that can fail runs inside one of the small `step_*` functions below, which own no C++
// objects: each sets its own jump target and returns false on error. The C++ code around them owns the
// libpng structs, the image and the row pointers, and turns the captured message into an apron::Error.
#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "io/codecs.hpp"
#include "io/exif.hpp"
#include "io/metadata_places.hpp"
#include "io/png_support.hpp"

namespace apron::io {

namespace png_detail {

PngMetadata png_metadata_of(const ImageMetadata& m) {
    PngMetadata p;
    p.exif = exif_to_write(m, SIZE_MAX);
    p.icc = m.icc_profile;
    p.has_phys = png_phys(m, p.phys);
    p.values.reserve(m.tiff_tags.size() + 1);  // text points into values: no reallocation
    const auto add = [&](const char* key, std::string value, int compression) {
        p.values.push_back(std::move(value));
        png_text t{};
        t.compression = compression;
        t.key = const_cast<png_charp>(key);
        t.text = p.values.back().data();
        t.text_length = p.values.back().size();
        t.itxt_length = compression >= PNG_ITXT_COMPRESSION_NONE ? p.values.back().size() : 0;
        p.text.push_back(t);
    };
    if (!m.description.empty())
        add("Description", m.description, m.description.size() > 1024 ? PNG_ITXT_COMPRESSION_zTXt : PNG_ITXT_COMPRESSION_NONE);
    for (const TiffTag& t : m.tiff_tags)
        if (const char* key = png_keyword_of(t.number); key && t.type == 2)
            add(key, std::string(t.bytes.begin(), t.bytes.end()), PNG_TEXT_COMPRESSION_NONE);
    return p;
}

void set_png_metadata(png_structp png, png_infop info, const PngMetadata& m) {
    png_set_benign_errors(png, 1);
    if (!m.icc.empty())
        png_set_iCCP(png, info, "ICC profile", PNG_COMPRESSION_TYPE_BASE, m.icc.data(), png_uint_32(m.icc.size()));
    if (!m.exif.empty()) png_set_eXIf_1(png, info, png_uint_32(m.exif.size()), const_cast<png_bytep>(m.exif.data()));
    if (m.has_phys)
        png_set_pHYs(png, info, m.phys.x, m.phys.y, m.phys.unit == 1 ? PNG_RESOLUTION_METER : PNG_RESOLUTION_UNKNOWN);
    if (!m.text.empty()) png_set_text(png, info, const_cast<png_textp>(m.text.data()), int(m.text.size()));
}

void on_error(png_structp png, png_const_charp message) {
    auto* ctx = static_cast<PngContext*>(png_get_error_ptr(png));
    std::snprintf(ctx->message, sizeof ctx->message, "%s", message);
    png_longjmp(png, 1);
}
// Warnings (a damaged ancillary chunk, an unknown chunk) do not make the pixels wrong; stay quiet.
void on_warning(png_structp, png_const_charp) {}

void read_from_source(png_structp png, png_bytep dst, std::size_t n) {
    auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
    if (ctx->in->read(ctx->pos, dst, n) != n) png_error(png, "truncated data");
    ctx->pos += n;
}

bool step_read_info(png_structp png, png_infop info) {
    if (setjmp(png_jmpbuf(png))) return false;
    // libpng reads an eXIf chunk a byte at a time (a read callback per byte: 46 s for 20 MB from a file);
    // apron reads it itself, whole, wherever it lies (png_exif_chunk), so libpng skips it.
    static constexpr png_byte exif_chunk[] = {'e', 'X', 'I', 'f', 0};
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, exif_chunk, 1);
    png_read_info(png, info);
    return true;
}

// Called only after the caller checked the size: update_info allocates row buffers of the full width.
bool step_set_transforms(png_structp png, png_infop info, int* passes) {
    if (setjmp(png_jmpbuf(png))) return false;
    const int color = png_get_color_type(png, info);
    const int depth = png_get_bit_depth(png, info);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (depth == 16 && little_endian_host) png_set_swap(png);
    *passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    return true;
}

// The channels the expanding transforms of step_set_transforms will give, from the header: colour (3) or
// gray (1), plus alpha from the colour type or from a tRNS chunk; a palette expands to RGB.
int channels_after_transforms(png_structp png, png_infop info) {
    const int color = png_get_color_type(png, info);
    int channels = (color & PNG_COLOR_MASK_COLOR) ? 3 : 1;
    if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) ++channels;
    return channels;
}

}  // namespace png_detail

namespace {

using namespace png_detail;

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

// Row by row straight into the image, every row in each Adam7 pass (libpng fills in the pass's pixels),
// so that no array of row pointers as tall as the image is needed.
bool step_read_rows(png_structp png, png_infop info, std::byte* image, std::size_t pitch, png_uint_32 height,
                    int passes) {
    if (setjmp(png_jmpbuf(png))) return false;
    for (int pass = 0; pass < passes; ++pass)
        for (png_uint_32 y = 0; y < height; ++y)
            png_read_row(png, reinterpret_cast<png_bytep>(image + std::size_t(y) * pitch), nullptr);
    png_read_end(png, info);  // verifies the chunks after the pixels up to IEND: a cut file is refused
    return true;
}

// exif and icc: the Exif block and the colour profile, or empty. libpng checks a profile against the image
// (gray or RGB, a sane header) and leaves out one that does not fit, with a warning rather than an error:
// metadata never stops an image from being written.
// The profile set on a 1x1 image of `color`, as the writer sets it: *kept tells whether libpng took it.
bool step_try_profile(png_structp png, png_infop info, int color, const std::vector<std::uint8_t>* icc, bool* kept) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_set_IHDR(png, info, 1, 1, 8, color, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_benign_errors(png, 1);
    png_set_iCCP(png, info, "ICC profile", PNG_COMPRESSION_TYPE_BASE, icc->data(), png_uint_32(icc->size()));
    *kept = png_get_valid(png, info, PNG_INFO_iCCP) != 0;
    return true;
}

bool step_write(png_structp png, png_infop info, int width, int height, int depth, int color, int level,
                png_bytepp rows, const PngMetadata& metadata) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_set_IHDR(png, info, png_uint_32(width), png_uint_32(height), depth, color, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, level);
    set_png_metadata(png, info, metadata);
    png_write_info(png, info);
    if (depth == 16 && little_endian_host) png_set_swap(png);
    png_write_image(png, rows);
    png_write_end(png, nullptr);
    return true;
}

// The Exif block of a PNG file: the data of its eXIf chunk, each read whole in one read, the chunks between
// skipped by their lengths. Where the file has several, or one after the pixels (PNG asks for one, before
// IDAT, but writers differ), the last one whose CRC is right counts, as Pillow reads it (a later eXIf
// chunk replaces an earlier one; exif_transpose loads the image, so one after IDAT is read too).
Buffer png_exif_chunk(const ByteSource& source) {
    Buffer exif;
    std::uint64_t pos = 8;
    std::uint8_t header[8];
    while (pos + 12 <= source.size() && source.read(pos, header, 8) == 8) {
        const std::uint32_t length = std::uint32_t(header[0]) << 24 | std::uint32_t(header[1]) << 16 |
                                     std::uint32_t(header[2]) << 8 | header[3];
        if (length > 0x7fffffffu || pos + 12 + length > source.size()) break;
        if (std::memcmp(header + 4, "IEND", 4) == 0) break;
        if (std::memcmp(header + 4, "eXIf", 4) == 0) {
            Buffer data(std::size_t(length) + 4);  // the data and its CRC
            if (source.read(pos + 8, data.data(), data.size()) != data.size()) break;
            const std::uint32_t crc = std::uint32_t(data[length]) << 24 | std::uint32_t(data[length + 1]) << 16 |
                                      std::uint32_t(data[length + 2]) << 8 | data[length + 3];
            uLong sum = crc32(crc32(0, header + 4, 4), data.data(), uInt(length));
            if (sum == crc) {
                data.resize(length);
                exif = std::move(data);
            }
        }
        pos += 12 + std::uint64_t(length);
    }
    return exif;
}

// The header (up to the first image data), then on request the pixels. libpng reads from the source as it
// goes, so a probe reads no more of a file than its chunks before IDAT.
class PngReader {
public:
    PngReader(const ByteSource& source, const std::string& name) : name_(name) {
        ctx_.in = &source;
        s_.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx_, on_error, on_warning);
        if (s_.png) s_.info = png_create_info_struct(s_.png);
        if (!s_.png || !s_.info) fail(name, "out of memory starting the PNG decoder");
        png_set_read_fn(s_.png, &ctx_, read_from_source);
        // Our own max_pixels check is the limit; libpng's default (1e6 a side) would refuse wide strips.
        png_set_user_limits(s_.png, 0x7fffffff, 0x7fffffff);
    }

    // The image the pixels will fill: the size, and channels and depth after the expanding transforms,
    // checked against the limits before the transforms are set up (libpng then allocates row buffers).
    // libpng decodes straight into the image's rows (Adam7 passes included), so it holds no image-sized
    // buffer of its own.
    ImageShape read_header(const ReadOptions& options, std::uint64_t file_bytes) {
        if (!step_read_info(s_.png, s_.info)) failed();
        const std::uint64_t width = png_get_image_width(s_.png, s_.info);
        const std::uint64_t height = png_get_image_height(s_.png, s_.info);
        const int expected_channels = channels_after_transforms(s_.png, s_.info);
        const PixelType type = png_get_bit_depth(s_.png, s_.info) == 16 ? PixelType::u16 : PixelType::u8;
        const ImageShape shape = check_image(name_, width, height, expected_channels, type, options, {file_bytes, 0});
        if (!step_set_transforms(s_.png, s_.info, &passes_)) failed();
        const int channels = png_get_channels(s_.png, s_.info);
        const int depth = png_get_bit_depth(s_.png, s_.info);
        if (channels != expected_channels || depth != 8 * int(bytes_per_sample(type)))
            fail(name_, "unsupported PNG layout (" + std::to_string(channels) + " channels of " +
                            std::to_string(depth) + " bits)");
        return shape;
    }

    void read_pixels(Image& img) {
        if (!step_read_rows(s_.png, s_.info, img.view().data, img.view().pitch, png_uint_32(img.height()), passes_))
            failed();
    }

    // The colour profile (iCCP, inflated and checked by libpng, which leaves out a damaged one) and the
    // Exif block (eXIf) among the chunks before the pixels.
    ImageMetadata metadata() {
        ImageMetadata m;
        if (!step_read_info(s_.png, s_.info)) failed();
        png_charp profile_name = nullptr;
        int compression = 0;
        png_bytep profile = nullptr;
        png_uint_32 profile_bytes = 0;
        if (png_get_iCCP(s_.png, s_.info, &profile_name, &compression, &profile, &profile_bytes) && profile)
            m.icc_profile.assign(profile, profile + profile_bytes);
        m.exif = png_exif_chunk(*ctx_.in);
        // pHYs in pixels per metre, kept as per centimetre (TIFF's unit); an aspect ratio alone as unit none.
        png_uint_32 x = 0, y = 0;
        int unit = 0;
        if (png_get_pHYs(s_.png, s_.info, &x, &y, &unit) && x > 0 && y > 0) {
            const bool metre = unit == PNG_RESOLUTION_METER;
            m.x_resolution = metre ? x / 100.0 : x;
            m.y_resolution = metre ? y / 100.0 : y;
            m.resolution_unit = metre ? ResolutionUnit::centimetre : ResolutionUnit::none;
        }
        // The description and the text tags apron writes (metadata_places.hpp), from the chunks before IDAT.
        png_textp text = nullptr;
        const int texts = png_get_text(s_.png, s_.info, &text, nullptr);
        for (int i = 0; i < texts; ++i) {
            const std::string key = text[i].key ? text[i].key : "";
            // iTXt gives its length in itxt_length (text_length is 0 there).
            const std::size_t length = text[i].compression >= PNG_ITXT_COMPRESSION_NONE ? text[i].itxt_length : text[i].text_length;
            const std::string value(text[i].text ? text[i].text : "", text[i].text ? length : 0);
            if (key == "Description" && m.description.empty()) m.description = value;
            for (std::uint16_t tag : {305, 315, 33432})  // not 306: PNG's Creation Time is free text, TIFF's DateTime is not
                if (key == png_keyword_of(tag))
                    m.tiff_tags.push_back({tag, 2, std::uint32_t(value.size()), std::vector<std::uint8_t>(value.begin(), value.end())});
        }
        std::sort(m.tiff_tags.begin(), m.tiff_tags.end(), [](const TiffTag& a, const TiffTag& b) { return a.number < b.number; });
        return m;
    }

private:
    [[noreturn]] void failed() const { fail(name_, std::string("bad PNG file: ") + ctx_.message); }

    const std::string& name_;
    PngContext ctx_;
    ReadStructs s_;
    int passes_ = 1;
};

}  // namespace

// From memory or from a file read as libpng asks (the file's size is counted either way, as the prober does).
Image decode_png(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    PngReader reader(source, name);
    const ImageShape shape = reader.read_header(options, source.size());
    Image img = allocate_image(name, std::uint64_t(shape.width), std::uint64_t(shape.height), shape.channels,
                               shape.type, options, {source.size(), 0});
    reader.read_pixels(img);
    return img;
}

Image decode_png(Bytes bytes, const std::string& name, const ReadOptions& options) {
    return decode_png(MemorySource(bytes), name, options);
}

ImageShape probe_png(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    PngReader reader(source, name);
    return reader.read_header(options, source.size());
}

ImageMetadata metadata_png(const ByteSource& source, const std::string& name) {
    PngReader reader(source, name);
    return reader.metadata();
}

namespace {

// Warnings kept (the reason libpng leaves a profile out), for png_keeps_profile.
void keep_warning(png_structp png, png_const_charp message) {
    auto* ctx = static_cast<PngContext*>(png_get_error_ptr(png));
    if (!ctx->message[0]) std::snprintf(ctx->message, sizeof ctx->message, "%s", message);
}

}  // namespace

bool png_keeps_profile(const std::vector<std::uint8_t>& icc, int channels, std::string* why) {
    if (icc.empty() || icc.size() > 0x7fffffff) return icc.empty();
    PngContext ctx;
    WriteStructs s;
    s.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &ctx, on_error, keep_warning);
    if (s.png) s.info = png_create_info_struct(s.png);
    if (!s.png || !s.info) return true;  // out of memory: the writer will say so
    static constexpr int color_of_channels[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                                PNG_COLOR_TYPE_RGB_ALPHA};
    bool kept = false;
    const bool ran = step_try_profile(s.png, s.info, color_of_channels[std::clamp(channels, 1, 4)], &icc, &kept);
    if (!(ran && kept) && why) *why = ctx.message[0] ? ctx.message : "libpng refuses it";
    return ran && kept;
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
    const PngMetadata metadata = png_metadata_of(options.metadata);
    if (!step_write(s.png, s.info, image.width(), image.height(), depth, color_of_channels[image.channels()],
                    options.png_compression, rows.data(), metadata))
        fail(name, std::string("cannot encode PNG: ") + ctx.message);
    return out;
}

}  // namespace apron::io
