// TIFF through libtiff: 8/16-bit unsigned and 32-bit float samples, 1 to 4 per pixel, gray or RGB (extra
// samples such as alpha are kept as channels), strips or tiles, contiguous or separate planes, any
// compression libtiff was built with. Every page of a multi-page file is an image of its own (decode_tiff_pages);
// one image asked of a file of several pages is refused by name. Written as contiguous strips or tiles
// (WriteOptions::tiff_tile), deflate-, zstd- or LZW-compressed with a predictor, or uncompressed
// (WriteOptions::tiff_compression), one directory per page. A page of more than 4 samples is a band stack
// (apron/volume_io.hpp): read as one-channel planes, band b plane b, and written back as one page of the
// bands, interleaved or separate as the input was (decode_tiff_bands, encode_tiff_bands).
//
// Tags carried from a TIFF input to a TIFF output (ImageMetadata): the resolution, ImageDescription, the
// text tags and the GeoTIFF and GDAL tags, which libtiff does not know: a tag extender registers them with
// their types (GeoTIFF's own definitions: doubles and shorts of any count, ASCII), for reading and writing.
//
// Files whose samples are not apron's types are converted as they are read, exactly (SampleMap): palette
// images to RGB u8, 1/2/4-bit gray (bilevel scans, fax) to u8 0..255, min-is-white gray inverted, 8/16-bit
// signed samples (elevation models, signed sensor data) to f32, and JPEG-compressed YCbCr (whole-slide
// microscopy, orthophotos) to RGB by libjpeg. Wider integers and 64-bit floats would lose precision in f32
// and are refused by name.
//
// libtiff works on a file it reads and writes through callbacks, so a small in-memory "file" stands in for
// one. Its messages go to per-handle handlers (libtiff >= 4.5) that keep the first error for our
// apron::Error instead of printing to stderr.
#include "apron/memory.hpp"
#include "io/codecs.hpp"
#include "io/exif.hpp"
#include "io/row_stream.hpp"

#if APRON_HAVE_TIFF

#include <tiffio.h>

#include "io/tiff_client.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>

namespace apron::io {

namespace {

struct MemoryFile {
    const ByteSource* in = nullptr;  // reading
    Buffer* out = nullptr;           // writing
    std::uint64_t pos = 0;
    TiffMessage message;

    std::uint64_t size() const { return out ? out->size() : in->size(); }
};

MemoryFile& file_of(thandle_t h) { return *static_cast<MemoryFile*>(h); }

tmsize_t file_read(thandle_t h, void* dst, tmsize_t n) {
    MemoryFile& f = file_of(h);
    if (n < 0 || f.pos >= f.size()) return 0;
    if (f.out) {  // writing a page links it to the one before: libtiff reads that directory back
        const std::size_t count = std::size_t(std::min<std::uint64_t>(std::uint64_t(n), f.out->size() - f.pos));
        std::memcpy(dst, f.out->data() + f.pos, count);
        f.pos += count;
        return tmsize_t(count);
    }
    const std::size_t count = f.in->read(f.pos, dst, std::size_t(n));
    f.pos += count;
    return tmsize_t(count);
}

tmsize_t file_write(thandle_t h, void* src, tmsize_t n) {
    MemoryFile& f = file_of(h);
    if (!f.out || n < 0 || f.pos > (std::uint64_t(1) << 48)) return -1;
    try {
        if (f.out->size() < f.pos + std::uint64_t(n)) f.out->resize(f.pos + std::uint64_t(n));
    } catch (...) {
        return -1;  // libtiff reports a write error; an exception must not cross its C frames
    }
    std::memcpy(f.out->data() + f.pos, src, std::size_t(n));
    f.pos += std::uint64_t(n);
    return n;
}

toff_t file_seek(thandle_t h, toff_t offset, int whence) {
    MemoryFile& f = file_of(h);
    const std::optional<std::uint64_t> to = tiff_seek_position(f.pos, f.size(), offset, whence);
    if (!to) return toff_t(-1);
    return f.pos = *to;
}

int file_close(thandle_t) { return 0; }
toff_t file_size(thandle_t h) { return file_of(h).size(); }

// Mapping a file in memory lets libtiff read strips without copying; it only ever reads the map. A file
// being probed is not in memory: libtiff then reads the few bytes of its header and directory.
int file_map(thandle_t h, void** base, toff_t* size) {
    MemoryFile& f = file_of(h);
    if (f.out || f.in->memory().empty()) return 0;
    *base = const_cast<std::uint8_t*>(f.in->memory().data());
    *size = f.in->memory().size();
    return 1;
}
void file_unmap(thandle_t, void*, toff_t) {}

[[noreturn]] void tiff_failed(const std::string& name, const MemoryFile& f, const char* what) {
    fail(name, std::string(what) + ": " + (f.message.text[0] ? f.message.text : "truncated or damaged image data"));
}

struct TiffHandle {
    TIFF* tif = nullptr;
    ~TiffHandle() {
        if (tif) TIFFClose(tif);
    }
};

// The GeoTIFF and GDAL tags as libgeotiff and GDAL define them, so that libtiff reads them typed and writes
// them back.
const TIFFFieldInfo carried_fields[] = {
    {33550, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, const_cast<char*>("ModelPixelScaleTag")},
    {33922, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, const_cast<char*>("ModelTiepointTag")},
    {34264, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, const_cast<char*>("ModelTransformationTag")},
    {34735, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_SHORT, FIELD_CUSTOM, 1, 1, const_cast<char*>("GeoKeyDirectoryTag")},
    {34736, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, const_cast<char*>("GeoDoubleParamsTag")},
    {34737, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0, const_cast<char*>("GeoAsciiParamsTag")},
    {42112, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0, const_cast<char*>("GDAL_METADATA")},
    {42113, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0, const_cast<char*>("GDAL_NODATA")},
};
// libtiff's own text tags carried as they are.
constexpr std::uint16_t carried_text_tags[] = {TIFFTAG_SOFTWARE, TIFFTAG_DATETIME, TIFFTAG_ARTIST, TIFFTAG_COPYRIGHT};

TIFFExtendProc previous_extender = nullptr;
void extend_tags(TIFF* tif) {
    TIFFMergeFieldInfo(tif, carried_fields, sizeof carried_fields / sizeof carried_fields[0]);
    if (previous_extender) previous_extender(tif);
}

}  // namespace

void register_carried_tiff_tags() {
    static std::once_flag extender_set;
    std::call_once(extender_set, [] { previous_extender = TIFFSetTagExtender(extend_tags); });
}

namespace {

TIFF* open_memory_file(MemoryFile& f, const std::string& name, const char* mode, tmsize_t max_alloc) {
    register_carried_tiff_tags();
    const TiffOpenOptions opts = quiet_tiff_options(name, f.message);
    TIFFOpenOptionsSetMaxSingleMemAlloc(opts.get(), max_alloc);
    return TIFFClientOpenExt(name.c_str(), mode, &f, file_read, file_write, file_seek, file_close, file_size, file_map,
                             file_unmap, opts.get());
}

// How a file's samples become the image's.
enum class SampleMap : unsigned char {
    copy,          // u8, u16 or f32 samples, as stored
    invert,        // min-is-white u8/u16 gray: the type's maximum minus the first sample of a pixel
    expand_bits,   // 1/2/4-bit gray to u8, v * 255 / (2^bits - 1) (inverted when min-is-white), as PNG's are
    palette,       // 1/2/4/8-bit indices to RGB u8 through the colour map
    signed_float,  // 8/16-bit signed to f32 (every value is exact in f32)
};

// How the samples of one strip or tile are laid out, how they are converted, and where they go.
struct Layout {
    int spp = 1;        // channels of the image
    int file_spp = 1;   // samples per pixel in the file (1 for a palette image)
    int chunk_spp = 1;  // samples per pixel in a strip/tile: file_spp (contiguous) or 1 (separate planes)
    int file_bits = 8;  // bits of a sample in the file
    std::size_t sample_bytes = 1;  // bytes of a sample in the image
    SampleMap map = SampleMap::copy;
    bool min_is_white = false;          // expand_bits: 0 is white
    std::vector<std::uint8_t> colours;  // palette: RGB of each index
    std::vector<std::uint8_t> converted;  // one converted row of a strip/tile (scratch)

    // A band stack: the rows of one band's plane (band b's row y is image row b * band_rows + y); 0: an image.
    int band_rows = 0;

    int planes() const { return file_spp / chunk_spp; }
    // Bytes of a row of `width` pixels in a decoded strip or tile (rows start on a byte, as TIFF says).
    std::size_t chunk_row_bytes(std::uint64_t width) const {
        return std::size_t((width * std::uint64_t(chunk_spp) * std::uint64_t(file_bits) + 7) / 8);
    }
    // Decoded strip rows are image rows: libtiff may decode straight into the image.
    bool rows_as_stored() const { return map == SampleMap::copy && chunk_spp == spp; }
};

// The n-bit field (n = 1, 2, 4 or 8) of index i in a row packed from the most significant bit (libtiff
// hands decoded rows over in that order whatever the file's fill order).
inline unsigned packed_field(const std::uint8_t* row, std::size_t i, int bits) {
    const std::size_t bit = i * std::size_t(bits);
    return unsigned(row[bit >> 3] >> (8 - bits - int(bit & 7))) & ((1u << bits) - 1);
}

// Converts w pixels of one decoded strip/tile row (plane `plane` when planes are separate) into image
// samples: w * chunk_spp of them (w * 3 for a palette), in l.converted.
const std::uint8_t* convert_row(Layout& l, const std::uint8_t* src, int w, int plane) {
    if (l.map == SampleMap::copy) return src;
    const std::size_t n = std::size_t(w) * std::size_t(l.map == SampleMap::palette ? 3 : l.chunk_spp);
    l.converted.resize(n * l.sample_bytes);
    std::uint8_t* out = l.converted.data();
    switch (l.map) {
    case SampleMap::copy: break;
    case SampleMap::invert: {
        // Only gray is inverted, not the extra samples (alpha) beside it.
        const auto is_gray = [&](std::size_t i) { return l.chunk_spp == 1 ? plane == 0 : i % std::size_t(l.chunk_spp) == 0; };
        if (l.sample_bytes == 1) {
            for (std::size_t i = 0; i < n; ++i) out[i] = is_gray(i) ? std::uint8_t(255 - src[i]) : src[i];
        } else {
            for (std::size_t i = 0; i < n; ++i) {
                std::uint16_t v;
                std::memcpy(&v, src + 2 * i, 2);
                if (is_gray(i)) v = std::uint16_t(65535 - v);
                std::memcpy(out + 2 * i, &v, 2);
            }
        }
        return out;
    }
    case SampleMap::expand_bits: {
        const unsigned top = (1u << l.file_bits) - 1, invert = l.min_is_white ? 255 : 0;
        for (std::size_t i = 0; i < n; ++i)
            out[i] = std::uint8_t(invert ^ (packed_field(src, i, l.file_bits) * 255 / top));
        return out;
    }
    case SampleMap::palette:
        for (int x = 0; x < w; ++x)
            std::memcpy(out + 3 * std::size_t(x), &l.colours[3 * std::size_t(packed_field(src, std::size_t(x), l.file_bits))], 3);
        return out;
    case SampleMap::signed_float:
        for (std::size_t i = 0; i < n; ++i) {
            float v;
            if (l.file_bits == 8) {
                v = float(std::int8_t(src[i]));
            } else {
                std::int16_t s;
                std::memcpy(&s, src + 2 * i, 2);
                v = float(s);
            }
            std::memcpy(out + 4 * i, &v, 4);
        }
        return out;
    }
    return src;
}

// One converted row of w pixels of a band stack's strip or tile to row y, from x0, of each band's plane: the
// band `plane`'s samples when planes are separate, every band's when they are interleaved.
template <class T>
void copy_band_row(ImageView img, const Layout& l, const std::uint8_t* src, int x0, int y, int w, int plane) {
    const T* in = reinterpret_cast<const T*>(src);
    if (l.chunk_spp == 1) {
        std::memcpy(img.row<T>(plane * l.band_rows + y) + x0, in, std::size_t(w) * sizeof(T));
        return;
    }
    const std::size_t stride = std::size_t(l.chunk_spp);
    for (int b = 0; b < l.chunk_spp; ++b) {
        T* out = img.row<T>(b * l.band_rows + y) + x0;
        for (int x = 0; x < w; ++x) out[x] = in[std::size_t(x) * stride + std::size_t(b)];
    }
}

// Copies a w x h block of a decoded strip/tile (rows `chunk_pitch` bytes apart) to (x0, y0) of the image,
// converted; `plane` is the sample it holds when planes are separate.
void copy_block(ImageView img, Layout& l, const std::uint8_t* chunk, std::size_t chunk_pitch, int x0, int y0, int w,
                int h, int plane) {
    const std::size_t pixel_bytes = l.sample_bytes * std::size_t(l.spp);
    for (int r = 0; r < h; ++r) {
        const std::uint8_t* src = convert_row(l, chunk + std::size_t(r) * chunk_pitch, w, plane);
        if (l.band_rows) {
            if (l.sample_bytes == 1) copy_band_row<std::uint8_t>(img, l, src, x0, y0 + r, w, plane);
            else if (l.sample_bytes == 2) copy_band_row<std::uint16_t>(img, l, src, x0, y0 + r, w, plane);
            else copy_band_row<float>(img, l, src, x0, y0 + r, w, plane);
            continue;
        }
        auto* dst = reinterpret_cast<std::uint8_t*>(img.row_bytes(y0 + r)) + std::size_t(x0) * pixel_bytes;
        if (l.chunk_spp == l.file_spp) {
            std::memcpy(dst, src, std::size_t(w) * pixel_bytes);
        } else {
            dst += std::size_t(plane) * l.sample_bytes;
            for (int x = 0; x < w; ++x)
                std::memcpy(dst + std::size_t(x) * pixel_bytes, src + x * l.sample_bytes, l.sample_bytes);
        }
    }
}

struct Tiles {
    std::uint32_t width = 0, height = 0;
    std::size_t pitch = 0;  // bytes of a row of one decoded tile
    std::uint64_t buffer_bytes() const { return std::uint64_t(pitch) * height; }
};

// The tile size, checked before its buffer (one decoded tile) is allocated.
Tiles tile_size(TIFF* tif, const Layout& l, std::uint64_t width, std::uint64_t height, const std::string& name) {
    Tiles t;
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &t.width);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &t.height);
    if (t.width == 0 || t.height == 0) fail(name, "bad TIFF file: zero tile size");
    // A tile may overhang the image, but not absurdly.
    const std::uint64_t tile_pixels = std::uint64_t(t.width) * t.height;
    if (tile_pixels > std::max<std::uint64_t>(2 * width * height, 1 << 20))
        fail(name, "bad TIFF file: tiles of " + std::to_string(t.width) + "x" + std::to_string(t.height) +
                       " are far larger than the image");
    t.pitch = l.chunk_row_bytes(t.width);
    if (std::uint64_t(TIFFTileRowSize64(tif)) != t.pitch) fail(name, "unsupported TIFF tile layout");
    return t;
}

void read_tiles(TIFF* tif, MemoryFile& f, Image& img, Layout& l, const Tiles& t, const std::string& name) {
    std::vector<std::uint8_t> buffer(t.buffer_bytes());
    const int planes = l.planes();
    // 64-bit positions: a tile side can be close to 2^32, and y + th must not wrap around.
    for (int p = 0; p < planes; ++p)
        for (std::uint64_t y = 0; y < std::uint64_t(img.height()); y += t.height)
            for (std::uint64_t x = 0; x < std::uint64_t(img.width()); x += t.width) {
                const std::uint32_t tile =
                    TIFFComputeTile(tif, std::uint32_t(x), std::uint32_t(y), 0, std::uint16_t(p));
                if (TIFFReadEncodedTile(tif, tile, buffer.data(), tmsize_t(buffer.size())) != tmsize_t(buffer.size()) ||
                    f.message.damaged)
                    tiff_failed(name, f, "bad TIFF file");
                copy_block(img.view(), l, buffer.data(), t.pitch, int(x), int(y),
                           int(std::min<std::uint64_t>(t.width, img.width() - x)),
                           int(std::min<std::uint64_t>(t.height, img.height() - y)), p);
            }
}

// Strips are decoded a row at a time, straight into the image (through one row buffer when planes are
// separate or samples are converted): a whole-image strip, which a deflate bomb of a few hundred KiB
// declares, never needs a second image-sized buffer.
void read_strips(TIFF* tif, MemoryFile& f, Image& img, Layout& l, const std::string& name) {
    const std::size_t row_pitch = l.chunk_row_bytes(std::uint64_t(img.width()));
    if (std::uint64_t(TIFFScanlineSize64(tif)) != row_pitch) fail(name, "unsupported TIFF strip layout");
    const bool direct = l.rows_as_stored();
    std::vector<std::uint8_t> row(direct ? 0 : row_pitch);
    for (int p = 0; p < l.planes(); ++p)
        for (int y = 0; y < img.height(); ++y) {
            // A band stack's separate planes: band p's rows are its plane's.
            void* dst = direct ? static_cast<void*>(img.view().row_bytes(p * l.band_rows + y)) : row.data();
            if (TIFFReadScanline(tif, dst, std::uint32_t(y), std::uint16_t(p)) < 0 || f.message.damaged)
                tiff_failed(name, f, "bad TIFF file");
            if (!direct) copy_block(img.view(), l, row.data(), row_pitch, 0, y, img.width(), 1, p);
        }
}

// A palette's colours as RGB u8. The map holds 16-bit values; files whose values all fit in 8 bits were
// written by old tools that stored 8-bit colours there, and are taken as they are (libtiff's rule).
std::vector<std::uint8_t> palette_colours(TIFF* tif, int bits, const std::string& name) {
    std::uint16_t *red = nullptr, *green = nullptr, *blue = nullptr;
    if (!TIFFGetField(tif, TIFFTAG_COLORMAP, &red, &green, &blue) || !red || !green || !blue)
        fail(name, "bad TIFF file: a palette image without a colour map");
    const std::size_t count = std::size_t(1) << bits;
    const bool eight_bit = std::all_of(red, red + count, [](auto v) { return v < 256; }) &&
                           std::all_of(green, green + count, [](auto v) { return v < 256; }) &&
                           std::all_of(blue, blue + count, [](auto v) { return v < 256; });
    std::vector<std::uint8_t> rgb(3 * count);
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint16_t v[3] = {red[i], green[i], blue[i]};
        for (int k = 0; k < 3; ++k) rgb[3 * i + std::size_t(k)] = std::uint8_t(eight_bit ? v[k] : v[k] >> 8);
    }
    return rgb;
}

// Reads the photometric interpretation and the samples into `l` (all but the tile and strip geometry) and
// returns the image's sample type, or fails saying what the file holds instead.
PixelType sample_layout(TIFF* tif, std::uint16_t spp, Layout& l, const std::string& name) {
    std::uint16_t bits = 1, format = SAMPLEFORMAT_UINT, photometric = PHOTOMETRIC_MINISBLACK, compression = 0;
    std::uint16_t planar = PLANARCONFIG_CONTIG;
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
    TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
    const char* kind = format == SAMPLEFORMAT_UINT     ? "unsigned"
                       : format == SAMPLEFORMAT_INT    ? "signed"
                       : format == SAMPLEFORMAT_IEEEFP ? "float"
                                                       : "other";
    const std::string samples = std::to_string(bits) + "-bit " + kind + " samples";
    l.file_spp = l.spp = spp;
    l.file_bits = bits;
    switch (photometric) {
    case PHOTOMETRIC_MINISBLACK:
    case PHOTOMETRIC_MINISWHITE:
    case PHOTOMETRIC_RGB: break;
    case PHOTOMETRIC_PALETTE: {
        if (format != SAMPLEFORMAT_UINT || spp != 1 || (bits != 1 && bits != 2 && bits != 4 && bits != 8))
            fail(name, "palette TIFF of " + std::to_string(spp) + " x " + samples +
                           " is not supported (apron reads 1 index of 1, 2, 4 or 8 bits)");
        l.map = SampleMap::palette;
        l.spp = 3;
        l.colours = palette_colours(tif, bits, name);
        return PixelType::u8;
    }
    case PHOTOMETRIC_YCBCR:
        // libjpeg converts JPEG-compressed YCbCr to RGB as it decodes (upsampling the chroma), so the
        // strips and tiles libtiff hands over are plain RGB; it can do so only for interleaved samples
        // (separate planes would come out as Y, Cb and Cr).
        if (compression != COMPRESSION_JPEG || spp != 3 || bits != 8 || planar != PLANARCONFIG_CONTIG)
            fail(name, "YCbCr TIFF files are read only JPEG-compressed, 3 x 8-bit, interleaved (convert to RGB first)");
        if (!TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB))
            fail(name, "cannot decode this JPEG-compressed YCbCr TIFF to RGB");
        return PixelType::u8;
    case PHOTOMETRIC_SEPARATED: fail(name, "CMYK TIFF files are not supported (convert to RGB first)");
    default: fail(name, "TIFF photometric interpretation " + std::to_string(photometric) + " is not supported");
    }
    const bool white = photometric == PHOTOMETRIC_MINISWHITE;
    if (format == SAMPLEFORMAT_UINT && (bits == 8 || bits == 16)) {
        l.map = white ? SampleMap::invert : SampleMap::copy;
        return bits == 8 ? PixelType::u8 : PixelType::u16;
    }
    if (format == SAMPLEFORMAT_UINT && (bits == 1 || bits == 2 || bits == 4) && photometric != PHOTOMETRIC_RGB) {
        if (spp != 1)
            fail(name, "TIFF gray of " + samples + " with extra samples is not supported (apron reads it alone)");
        l.map = SampleMap::expand_bits;
        l.min_is_white = white;
        return PixelType::u8;
    }
    if (format == SAMPLEFORMAT_IEEEFP && bits == 32 && !white) return PixelType::f32;
    if (format == SAMPLEFORMAT_INT && (bits == 8 || bits == 16) && !white) {
        l.map = SampleMap::signed_float;
        return PixelType::f32;
    }
    fail(name, "TIFF " + std::string(white ? "min-is-white " : "") + samples +
                   " are not supported (apron reads 8/16-bit unsigned, 32-bit float, 8/16-bit signed as float, "
                   "1/2/4-bit gray and palettes)");
}

// An offset array shorter than the strips or tiles: libtiff warns and pads it with zeros, and an offset of 0
// with bytes to read would decode the file's header as pixels. Every reader (whole, by rows, the probe)
// refuses such a file here, before a pixel is read.
void check_strile_offsets(TIFF* tif, const std::string& name) {
    const bool tiled = TIFFIsTiled(tif);
    const std::uint32_t count = tiled ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
    for (std::uint32_t i = 0; i < count; ++i)
        if (TIFFGetStrileOffset(tif, i) == 0 && TIFFGetStrileByteCount(tif, i) != 0)
            fail(name, std::string("bad TIFF file: ") + (tiled ? "tile " : "strip ") + std::to_string(i) +
                           " has no data offset (the offset array is shorter than the " + (tiled ? "tiles" : "strips") + ")");
}

// A band stack's limits, as check_image's for an image: the size of a band, the samples of every band within
// max_pixels, and the stack's pixels with the file and the decoder's buffers within the memory budget.
ImageShape check_band_stack(const std::string& name, std::uint64_t width, std::uint64_t height, int bands, PixelType type,
                            const ReadOptions& options, const Held& held) {
    const std::uint64_t pixels = check_size(name, width, height, options);
    const std::string what = std::to_string(bands) + " bands of " + std::to_string(width) + "x" + std::to_string(height);
    if (pixels > options.max_pixels / std::uint64_t(bands))
        fail(name, what + " are " + std::to_string(pixels) + " x " + std::to_string(bands) + " samples, over the limit of " +
                       std::to_string(options.max_pixels) + " (raise it with --max-pixels)");
    const ImageShape shape{int(width), int(height), 1, type, bands};
    validate_shape(shape, name.c_str());
    const std::uint64_t bytes = image_bytes(width, height * std::uint64_t(bands), 1, type);
    const std::uint64_t needed = bytes + held.file_bytes + held.decoder_bytes;
    if (options.memory_budget && (needed < bytes || needed > options.memory_budget))
        fail(name, "decoding " + what + " " + to_string(type) + " needs " + format_bytes(needed) + " (file " +
                       format_bytes(held.file_bytes) + " + pixels " + format_bytes(bytes) +
                       (held.decoder_bytes ? " + decoder buffers " + format_bytes(held.decoder_bytes) : "") +
                       "), over the memory budget of " + format_bytes(options.memory_budget) + " (raise it with --memory)");
    return shape;
}

// The first directory (size, samples, layout), then on request the pixels.
class TiffReader {
public:
    TiffReader(const ByteSource& source, const std::string& name, const ReadOptions& options) : name_(name) {
        f_.in = &source;
        // Bounds libtiff's own allocations (tag arrays, compressed strips) for hostile files.
        const std::uint64_t max_alloc = std::clamp<std::uint64_t>(
            options.max_pixels > (std::uint64_t(1) << 58) ? std::uint64_t(1) << 62 : options.max_pixels * 16,
            std::uint64_t(256) << 20, std::uint64_t(1) << 62);
        h_.tif = open_memory_file(f_, name, "r", tmsize_t(max_alloc));
        if (!h_.tif) tiff_failed(name, f_, "bad TIFF file");
    }

    int pages() {
        if (pages_ < 0) pages_ = int(TIFFNumberOfDirectories(h_.tif));
        return pages_;
    }

    // Makes `page` the current directory: -1 the file's only one (a file of several pages is refused, never
    // read as its first page alone). `all_pages`: every page is being read, and a page that is another
    // page's reduced copy or mask is refused rather than filtered as an image of its own.
    void select_page(int page, bool all_pages) {
        const int count = pages();
        if (page < 0 && count > 1)
            fail(name_, "a TIFF file of " + std::to_string(count) +
                            " pages, and one image was asked for (apron filter writes every page to a .tif output; "
                            "the library reads them with read_pages, or one with ReadOptions::page)");
        const int p = std::max(page, 0);
        if (p >= std::max(count, 1))
            fail(name_, "no page " + std::to_string(p) + " (the TIFF file has " + std::to_string(count) + ")");
        // The next page from the current one (TIFFSetDirectory walks the chain from the first: pages one
        // after another would read it N^2 / 2 times).
        const int current = int(TIFFCurrentDirectory(h_.tif));
        if (p != current && !(p == current + 1 ? TIFFReadDirectory(h_.tif) : TIFFSetDirectory(h_.tif, tdir_t(p))))
            tiff_failed(name_, f_, ("bad TIFF file: page " + std::to_string(p)).c_str());
        std::uint32_t subfile = 0;
        TIFFGetField(h_.tif, TIFFTAG_SUBFILETYPE, &subfile);
        const std::string which = count > 1 ? "page " + std::to_string(p) + " of " + std::to_string(count) : "the image";
        if (all_pages && count > 1 && (subfile & (FILETYPE_REDUCEDIMAGE | FILETYPE_MASK)))
            fail(name_, which + " is " +
                            ((subfile & FILETYPE_MASK) ? "a transparency mask" : "a reduced-resolution copy (a pyramid level or overview)") +
                            " of another page (NewSubfileType " + std::to_string(subfile) +
                            "); apron does not filter pyramids or masks (extract the full-resolution pages first)");
        std::uint16_t subifds = 0;
        void* offsets = nullptr;
        if (TIFFGetField(h_.tif, TIFFTAG_SUBIFD, &subifds, &offsets) && subifds > 0)
            fail(name_, which + " has " + std::to_string(subifds) +
                            " SubIFDs (reduced-resolution copies or other images), which apron does not read");
        page_ = p;
    }

    // `bands`: the page is read as a band stack (more than 4 samples), else as an image (1 to 4).
    ImageShape read_header(const ReadOptions& options, std::uint64_t file_bytes, bool bands = false) {
        if (page_ < 0) select_page(options.page, false);
        layout_ = Layout{};
        tiles_ = Tiles{};
        std::uint32_t width = 0, height = 0;
        std::uint16_t spp = 1, planar = PLANARCONFIG_CONTIG;
        TIFFGetField(h_.tif, TIFFTAG_IMAGEWIDTH, &width);
        TIFFGetField(h_.tif, TIFFTAG_IMAGELENGTH, &height);
        TIFFGetFieldDefaulted(h_.tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
        TIFFGetFieldDefaulted(h_.tif, TIFFTAG_PLANARCONFIG, &planar);
        const std::string which = pages() > 1 ? "page " + std::to_string(page_) + " of the TIFF file" : "the TIFF file";
        if (spp < 1) fail(name_, which + " has no samples per pixel");
        if (spp > 4 && !bands)
            fail(name_, which + " has " + std::to_string(spp) + " samples per pixel (bands), more than an image's 4 channels: apron "
                               "filter reads such a page alone as a band stack (a TIFF of one page, or --page; read_bands)");
        if (spp <= 4 && bands)
            fail(name_, which + " has " + std::to_string(spp) + " samples per pixel: an image, not a band stack (read_image reads it)");
        const PixelType type = sample_layout(h_.tif, spp, layout_, name_);
        check_size(name_, width, height, options);
        layout_.chunk_spp = planar == PLANARCONFIG_SEPARATE ? 1 : int(spp);
        if (bands) {
            layout_.spp = 1;
            layout_.band_rows = int(height);
        }
        layout_.sample_bytes = bytes_per_sample(type);
        held_ = {file_bytes, 0};
        if (TIFFIsTiled(h_.tif)) {
            tiles_ = tile_size(h_.tif, layout_, width, height, name_);
            held_.decoder_bytes = tiles_.buffer_bytes();
        }
        check_strile_offsets(h_.tif, name_);
        TIFFGetFieldDefaulted(h_.tif, TIFFTAG_COMPRESSION, &compression_);
        TIFFGetFieldDefaulted(h_.tif, TIFFTAG_ROWSPERSTRIP, &rows_per_strip_);
        rows_per_strip_ = std::max<std::uint32_t>(rows_per_strip_, 1);
        if (bands) return check_band_stack(name_, width, height, spp, type, options, held_);
        return check_image(name_, width, height, layout_.spp, type, options, held_);
    }

    // The selected page's band layout: bands 0 for 1 to 4 samples.
    TiffBands bands() const {
        std::uint16_t spp = 1, planar = PLANARCONFIG_CONTIG, photometric = PHOTOMETRIC_MINISBLACK;
        TIFFGetFieldDefaulted(h_.tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
        if (spp <= 4) return {};
        TIFFGetFieldDefaulted(h_.tif, TIFFTAG_PLANARCONFIG, &planar);
        TIFFGetField(h_.tif, TIFFTAG_PHOTOMETRIC, &photometric);
        TiffBands b;
        b.bands = spp;
        b.separate = planar == PLANARCONFIG_SEPARATE;
        b.rgb = photometric == PHOTOMETRIC_RGB;
        std::uint16_t count = 0;
        std::uint16_t* kinds = nullptr;
        if (TIFFGetField(h_.tif, TIFFTAG_EXTRASAMPLES, &count, &kinds) && kinds && count == spp - (b.rgb ? 3 : 1))
            b.extra_samples.assign(kinds, kinds + count);
        return b;
    }
    const Held& held() const { return held_; }

    ImageMetadata metadata() const {
        ImageMetadata m;
        std::uint32_t bytes = 0;
        void* profile = nullptr;
        if (TIFFGetField(h_.tif, TIFFTAG_ICCPROFILE, &bytes, &profile) && profile)
            m.icc_profile.assign(static_cast<const std::uint8_t*>(profile), static_cast<const std::uint8_t*>(profile) + bytes);
        std::uint16_t orientation = 0;
        if (TIFFGetField(h_.tif, TIFFTAG_ORIENTATION, &orientation) && orientation >= 1 && orientation <= 8)
            m.orientation = orientation;
        float xres = 0, yres = 0;
        std::uint16_t unit = RESUNIT_INCH;
        if (TIFFGetField(h_.tif, TIFFTAG_XRESOLUTION, &xres) && TIFFGetField(h_.tif, TIFFTAG_YRESOLUTION, &yres) &&
            xres > 0 && yres > 0 && std::isfinite(xres) && std::isfinite(yres)) {
            TIFFGetFieldDefaulted(h_.tif, TIFFTAG_RESOLUTIONUNIT, &unit);
            m.x_resolution = xres;
            m.y_resolution = yres;
            m.resolution_unit = unit == RESUNIT_CENTIMETER ? ResolutionUnit::centimetre
                                : unit == RESUNIT_NONE     ? ResolutionUnit::none
                                                           : ResolutionUnit::inch;
        }
        if (char* text = nullptr; TIFFGetField(h_.tif, TIFFTAG_IMAGEDESCRIPTION, &text) && text) m.description = text;
        const auto add_text = [&](std::uint16_t tag) {
            char* text = nullptr;
            if (!TIFFGetField(h_.tif, tag, &text) || !text) return;
            const std::size_t n = std::strlen(text);
            m.tiff_tags.push_back({tag, TIFF_ASCII, std::uint32_t(n), std::vector<std::uint8_t>(text, text + n)});
        };
        for (std::uint16_t tag : carried_text_tags) add_text(tag);
        for (const TIFFFieldInfo& field : carried_fields) {
            const std::uint16_t tag = std::uint16_t(field.field_tag);
            if (field.field_type == TIFF_ASCII) {
                add_text(tag);
                continue;
            }
            std::uint32_t count = 0;
            void* values = nullptr;
            if (!TIFFGetField(h_.tif, tag, &count, &values) || !values || count == 0) continue;
            const std::size_t bytes = std::size_t(count) * std::size_t(TIFFDataWidth(field.field_type));
            const auto* first = static_cast<const std::uint8_t*>(values);
            m.tiff_tags.push_back({tag, std::uint16_t(field.field_type), count, std::vector<std::uint8_t>(first, first + bytes)});
        }
        std::sort(m.tiff_tags.begin(), m.tiff_tags.end(), [](const TiffTag& a, const TiffTag& b) { return a.number < b.number; });
        // The page's other tags beyond its geometry, named for fit_metadata's line. libtiff lists the tags
        // it keeps as custom values: the text and private tags, never the layout's own (sizes, strips,
        // samples, compression), which the output writes anew.
        for (int i = 0, n = TIFFGetTagListCount(h_.tif); i < n; ++i) {
            const std::uint32_t tag = TIFFGetTagListEntry(h_.tif, i);
            const bool carried = std::any_of(m.tiff_tags.begin(), m.tiff_tags.end(), [&](const TiffTag& t) { return t.number == tag; });
            if (carried || tag == TIFFTAG_IMAGEDESCRIPTION || tag == TIFFTAG_ICCPROFILE || tag == TIFFTAG_ORIENTATION) continue;
            const TIFFField* field = TIFFFieldWithTag(h_.tif, tag);
            const char* name = field ? TIFFFieldName(field) : nullptr;
            m.tiff_tags_not_carried.push_back((name && *name && std::strncmp(name, "Tag ", 4) != 0 ? std::string(name) + " (" : "tag (") +
                                              std::to_string(tag) + ")");
        }
        return m;
    }

    void read_pixels(Image& img) {
        if (TIFFIsTiled(h_.tif))
            read_tiles(h_.tif, f_, img, layout_, tiles_, name_);
        else
            read_strips(h_.tif, f_, img, layout_, name_);
    }

    // Rows [y0, y0 + band.height()) of the image into `band`. Tiled files decode whole rows of tiles into
    // a cache of tile-height rows (the next band usually starts in the last one); striped files go through
    // libtiff's scanline reader, which restarts a strip when asked for a row behind it.
    void read_rows(int y0, ImageView band) {
        if (TIFFIsTiled(h_.tif)) {
            for (int y = y0; y < y0 + band.height();) {
                const int ty = y / int(tiles_.height);
                if (ty != cached_tile_row_) decode_tile_row(ty, image_);
                const int row0 = ty * int(tiles_.height);
                const int n = std::min(y0 + band.height(), row0 + cached_.height()) - y;
                if (n <= 0) fail(name_, "row " + std::to_string(y) + " is outside the image");
                for (int r = 0; r < n; ++r)
                    std::memcpy(band.row_bytes(y - y0 + r), cached_.view().row_bytes(y - row0 + r), band.shape.row_bytes());
                y += n;
            }
            return;
        }
        const std::size_t row_pitch = layout_.chunk_row_bytes(std::uint64_t(band.width()));
        if (std::uint64_t(TIFFScanlineSize64(h_.tif)) != row_pitch) fail(name_, "unsupported TIFF strip layout");
        const bool direct = layout_.rows_as_stored();
        if (!direct) row_.resize(row_pitch);
        for (int p = 0; p < layout_.planes(); ++p)
            for (int r = 0; r < band.height(); ++r) {
                if (r == 0) skip_to_row(std::uint32_t(y0), std::uint16_t(p), row_pitch);
                void* dst = direct ? static_cast<void*>(band.row_bytes(r)) : row_.data();
                if (TIFFReadScanline(h_.tif, dst, std::uint32_t(y0 + r), std::uint16_t(p)) < 0 || f_.message.damaged)
                    tiff_failed(name_, f_, ("row " + std::to_string(y0 + r)).c_str());
                if (!direct) copy_block(band, layout_, row_.data(), row_pitch, 0, r, band.width(), 1, p);
            }
    }
    // Host bytes held besides the caller's bands: the cached row of tiles and one decoded tile, or a strip
    // (and a row skipped to reach a band in a compressed strip's middle).
    std::uint64_t buffer_bytes() const {
        return TIFFIsTiled(h_.tif) ? std::uint64_t(tiles_.height) * cached_row_bytes_ + tiles_.buffer_bytes()
                                   : std::uint64_t(TIFFStripSize64(h_.tif)) + row_.size() +
                                         (compression_ != COMPRESSION_NONE ? std::uint64_t(TIFFScanlineSize64(h_.tif)) : 0);
    }
    void plan_row_cache(const ImageShape& shape) {
        image_ = shape;
        if (TIFFIsTiled(h_.tif)) cached_row_bytes_ = shape.row_bytes();
    }

private:
    // libtiff seeks within a strip only when it is uncompressed; other codecs refuse ("does not support
    // random access") a row that is not the next one the strip decodes. A band starting in a compressed
    // strip's middle decodes the rows before it into scratch: from the next row libtiff would decode when
    // that lies before `y` in the same strip (bands going forward), else from the strip's first row.
    void skip_to_row(std::uint32_t y, std::uint16_t plane, std::size_t row_pitch) {
        if (compression_ == COMPRESSION_NONE) return;
        const std::uint32_t strip_first = y / rows_per_strip_ * rows_per_strip_;
        std::uint32_t next = TIFFCurrentRow(h_.tif);
        if (TIFFCurrentStrip(h_.tif) != TIFFComputeStrip(h_.tif, y, plane) || next > y || next < strip_first) next = strip_first;
        if (next == y) return;
        skipped_.resize(row_pitch);
        for (; next < y; ++next)
            if (TIFFReadScanline(h_.tif, skipped_.data(), next, plane) < 0 || f_.message.damaged)
                tiff_failed(name_, f_, ("row " + std::to_string(next)).c_str());
    }

    void decode_tile_row(int ty, const ImageShape& shape) {
        const int row0 = ty * int(tiles_.height);
        const int rows = std::min<int>(int(tiles_.height), shape.height - row0);
        // The row of tiles and one tile are the largest buffers: a hostile header (tiles 65536 rows tall
        // over a million columns) asks for tens of gigabytes, refused naming the file. Beyond the machine's
        // memory it is refused before asking (a sanitizer's allocator aborts instead of throwing).
        const std::uint64_t needed = buffer_bytes();
        if (needed > physical_memory_bytes())
            fail(name_, "a row of tiles needs " + std::to_string(needed >> 20) + " MiB, more than this machine's memory");
        try {
            if (cached_.empty() || cached_.height() != rows) {
                cached_ = Image();
                cached_ = Image(shape.width, rows, shape.channels, shape.type);
            }
            tile_.resize(tiles_.buffer_bytes());
        } catch (const Error& e) {
            fail(name_, std::string("a row of tiles: ") + e.what());
        } catch (const std::bad_alloc&) {
            fail(name_, "out of host memory for a tile of " + std::to_string(tiles_.buffer_bytes()) + " bytes");
        }
        for (int p = 0; p < layout_.planes(); ++p)
            for (std::uint64_t x = 0; x < std::uint64_t(shape.width); x += tiles_.width) {
                const std::uint32_t tile = TIFFComputeTile(h_.tif, std::uint32_t(x), std::uint32_t(row0), 0, std::uint16_t(p));
                if (TIFFReadEncodedTile(h_.tif, tile, tile_.data(), tmsize_t(tile_.size())) != tmsize_t(tile_.size()) ||
                    f_.message.damaged)
                    tiff_failed(name_, f_, ("tile " + std::to_string(tile)).c_str());
                copy_block(cached_.view(), layout_, tile_.data(), tiles_.pitch, int(x), 0,
                           int(std::min<std::uint64_t>(tiles_.width, shape.width - x)), rows, p);
            }
        cached_tile_row_ = ty;
    }

    const std::string& name_;
    int pages_ = -1, page_ = -1;  // the file's pages (-1: not counted yet); the page read (-1: none chosen)
    MemoryFile f_;
    TiffHandle h_;  // after f_: closed before the file it reads goes away
    Layout layout_;
    Tiles tiles_;
    Held held_;
    ImageShape image_;  // the whole image (read_rows)
    Image cached_;      // the decoded row of tiles read_rows used last
    int cached_tile_row_ = -1;
    std::uint64_t cached_row_bytes_ = 0;
    std::vector<std::uint8_t> tile_, row_, skipped_;
    std::uint16_t compression_ = COMPRESSION_NONE;
    std::uint32_t rows_per_strip_ = 1;
};

}  // namespace

Image decode_tiff(Bytes bytes, const std::string& name, const ReadOptions& options) {
    return decode_tiff(MemorySource(bytes), name, options);
}

// From memory (libtiff maps it) or from a file read as libtiff asks (a strip or tile at a time; the file's
// size is counted either way, as the prober does: a whole-image compressed strip is read whole).
Image decode_tiff(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    TiffReader reader(source, name, options);
    const ImageShape shape = reader.read_header(options, source.size());
    Image img = allocate_image(name, std::uint64_t(shape.width), std::uint64_t(shape.height), shape.channels,
                               shape.type, options, reader.held());
    reader.read_pixels(img);
    return img;
}

std::vector<Image> decode_tiff_pages(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    TiffReader reader(source, name, options);
    std::vector<Image> pages;
    std::uint64_t held_pages = 0;  // the pages decoded so far stay held with the next one
    const int count = std::max(reader.pages(), 1);
    for (int p = 0; p < count; ++p) {
        reader.select_page(p, true);
        const ImageShape shape = reader.read_header(options, source.size());
        Held held = reader.held();
        held.pages_bytes = held_pages;
        Image img = allocate_image(name, std::uint64_t(shape.width), std::uint64_t(shape.height), shape.channels,
                                   shape.type, options, held);
        reader.read_pixels(img);
        held_pages += image_bytes(std::uint64_t(shape.width), std::uint64_t(shape.height), shape.channels, shape.type);
        pages.push_back(std::move(img));
    }
    return pages;
}

ImageShape probe_tiff(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    TiffReader reader(source, name, options);
    return reader.read_header(options, source.size());
}

std::vector<ImageShape> probe_tiff_pages(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    TiffReader reader(source, name, options);
    std::vector<ImageShape> shapes;
    for (int p = 0, count = std::max(reader.pages(), 1); p < count; ++p) {
        reader.select_page(p, true);
        shapes.push_back(reader.read_header(options, source.size()));
    }
    return shapes;
}

int count_tiff_pages(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    TiffReader reader(source, name, options);
    return std::max(reader.pages(), 1);
}

// The profile, orientation, resolution, description and carried tags of a page (the first for page -1).
// A TIFF's Exif lives in a directory of its own, of tags that describe the camera rather than the pixels;
// it is not carried.
ImageMetadata metadata_tiff(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    TiffReader reader(source, name, options);
    reader.select_page(std::max(options.page, 0), false);
    return reader.metadata();
}

std::vector<ImageMetadata> metadata_tiff_pages(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    TiffReader reader(source, name, options);
    std::vector<ImageMetadata> pages;
    for (int p = 0, count = std::max(reader.pages(), 1); p < count; ++p) {
        reader.select_page(p, false);
        pages.push_back(reader.metadata());
    }
    return pages;
}

// A page of more than 4 samples (options.page, -1 the file's only one) as a band stack. Page -1 of a file of
// several pages is none: read_pages reads them (and refuses a page of more than 4 samples by name).
TiffBands probe_tiff_bands(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    TiffReader reader(source, name, options);
    if (options.page < 0 && reader.pages() > 1) return {};
    reader.select_page(std::max(options.page, 0), false);
    TiffBands bands = reader.bands();
    if (bands.bands > 0) bands.shape = reader.read_header(options, source.size(), true);
    return bands;
}

Image decode_tiff_bands(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    TiffReader reader(source, name, options);
    const ImageShape shape = reader.read_header(options, source.size(), true);
    Image img;
    try {
        img = Image(shape, options.memory);
    } catch (const Error& e) {
        fail(name, e.what());  // the allocation's own message names "image", not the file
    }
    reader.read_pixels(img);
    return img;
}

namespace {

class TiffRows final : public RowSource {
public:
    TiffRows(std::unique_ptr<ByteSource> file, const std::string& name, const ReadOptions& options)
        : file_(std::move(file)), name_(name), reader_(*file_, name_, options) {
        shape_ = reader_.read_header(options, 0);
        reader_.plan_row_cache(shape_);
    }
    const ImageShape& shape() const override { return shape_; }
    const std::string& path() const override { return name_; }
    void read_rows(int y0, ImageView band) override { reader_.read_rows(y0, band); }
    std::uint64_t buffer_bytes() const override { return reader_.buffer_bytes(); }

private:
    std::unique_ptr<ByteSource> file_;
    std::string name_;
    TiffReader reader_;
    ImageShape shape_;
};

}  // namespace

std::unique_ptr<RowSource> open_tiff_rows(std::unique_ptr<ByteSource> file, const std::string& name,
                                          const ReadOptions& options) {
    return std::make_unique<TiffRows>(std::move(file), name, options);
}

// The carried tags of `m` on the directory being written (the output's own geometry tags are set apart),
// the profile and the orientation.
void set_tiff_metadata(TIFF* tif, const ImageMetadata& m) {
    if (!m.icc_profile.empty())
        TIFFSetField(tif, TIFFTAG_ICCPROFILE, std::uint32_t(m.icc_profile.size()), m.icc_profile.data());
    if (const int turn = orientation_of(m); turn >= 1 && turn <= 8) TIFFSetField(tif, TIFFTAG_ORIENTATION, std::uint16_t(turn));
    if (m.x_resolution > 0 && m.y_resolution > 0) {
        TIFFSetField(tif, TIFFTAG_XRESOLUTION, m.x_resolution);
        TIFFSetField(tif, TIFFTAG_YRESOLUTION, m.y_resolution);
        TIFFSetField(tif, TIFFTAG_RESOLUTIONUNIT, std::uint16_t(m.resolution_unit));
    }
    if (!m.description.empty()) TIFFSetField(tif, TIFFTAG_IMAGEDESCRIPTION, m.description.c_str());
    for (const TiffTag& t : m.tiff_tags) {
        const TIFFField* field = TIFFFindField(tif, t.number, TIFF_ANY);
        if (!field) continue;
        if (t.type == TIFF_ASCII) {
            const std::string text(t.bytes.begin(), t.bytes.end());
            TIFFSetField(tif, t.number, text.c_str());
        } else if (TIFFFieldPassCount(field) && t.count > 0 &&
                   t.bytes.size() == std::size_t(t.count) * std::size_t(TIFFDataWidth(TIFFDataType(t.type))) &&
                   TIFFFieldDataType(field) == TIFFDataType(t.type)) {
            TIFFSetField(tif, t.number, t.count, t.bytes.data());
        }
    }
}

namespace {

// WriteOptions::tiff_compression as libtiff's codec, refused by name when unknown or not built into libtiff.
std::uint16_t tiff_codec(const std::string& name, const std::string& compression) {
    const std::uint16_t codec = compression == "deflate" ? COMPRESSION_ADOBE_DEFLATE
                                : compression == "zstd"  ? COMPRESSION_ZSTD
                                : compression == "lzw"   ? COMPRESSION_LZW
                                : compression == "none"  ? COMPRESSION_NONE
                                                         : 0;
    if (codec == 0) fail(name, "TIFF compression '" + compression + "' is not none, deflate, zstd or lzw");
    if (!TIFFIsCODECConfigured(codec))
        fail(name, "this libtiff has no " + compression + " codec (try --compression deflate, lzw or none)");
    return codec;
}

// A page's samples as the file lays them out: `planes` planes (1 when interleaved; one a band when a band
// stack's are separate) of rows of `spp` samples (1 when separate); row(y, p) gives row y of plane p.
struct PageSamples {
    int width = 0, height = 0, spp = 1, planes = 1;
    PixelType type = PixelType::u8;
    std::uint16_t photometric = PHOTOMETRIC_MINISBLACK;
    std::vector<std::uint16_t> extra;  // ExtraSamples
    std::function<const std::byte*(int y, int plane)> row;

    std::size_t pixel_bytes() const { return std::size_t(planes == 1 ? spp : 1) * bytes_per_sample(type); }
    std::size_t row_bytes() const { return std::size_t(width) * pixel_bytes(); }
};

// An image's pixels, interleaved: gray or RGB, a second or fourth channel as (unassociated) alpha.
PageSamples image_samples(ConstImageView image) {
    const int c = image.channels();
    PageSamples s{image.width(), image.height(), c, 1, image.type(), std::uint16_t(c >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK)};
    if (c == 2 || c == 4) s.extra = {EXTRASAMPLE_UNASSALPHA};
    s.row = [image](int y, int) { return image.row_bytes(y); };
    return s;
}

// A band stack's planes as the bands of one page, laid out as `layout` says. Interleaved bands are gathered
// into one row at a time (the last kept: a row of tiles asks for it once a tile).
PageSamples band_samples(ConstImageView stack, const TiffBands& layout) {
    const int bands = stack.shape.depth;
    PageSamples s{stack.width(), stack.height(), bands, layout.separate ? bands : 1, stack.type(),
                  std::uint16_t(layout.rgb && bands >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK)};
    const std::size_t extras = std::size_t(bands - (s.photometric == PHOTOMETRIC_RGB ? 3 : 1));
    s.extra = layout.extra_samples.size() == extras ? layout.extra_samples : std::vector<std::uint16_t>(extras, EXTRASAMPLE_UNSPECIFIED);
    if (layout.separate) {
        s.row = [stack](int y, int p) { return stack.plane(p).row_bytes(y); };
        return s;
    }
    auto gathered = std::make_shared<std::vector<std::byte>>(s.row_bytes());
    auto last = std::make_shared<int>(-1);
    s.row = [stack, gathered, last](int y, int) -> const std::byte* {
        if (*last == y) return gathered->data();
        const std::size_t bytes = bytes_per_sample(stack.type()), stride = std::size_t(stack.shape.depth) * bytes;
        for (int b = 0; b < stack.shape.depth; ++b) {
            const std::byte* in = stack.plane(b).row_bytes(y);
            std::byte* out = gathered->data() + std::size_t(b) * bytes;
            for (int x = 0; x < stack.width(); ++x) std::memcpy(out + std::size_t(x) * stride, in + std::size_t(x) * bytes, bytes);
        }
        *last = y;
        return gathered->data();
    };
    return s;
}

// One page as a directory of strips or tiles, plane after plane.
void write_tiff_page(TIFF* tif, MemoryFile& f, const PageSamples& page, const ImageMetadata& m, std::uint16_t codec,
                     int tile, const std::string& name) {
    const std::size_t row_bytes = page.row_bytes(), px = page.pixel_bytes();
    // About 256 KiB strips: large enough for deflate to work well, small enough to stream.
    const std::uint32_t rows_per_strip = std::uint32_t(std::clamp<std::size_t>((256 << 10) / row_bytes, 1, std::size_t(page.height)));
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, std::uint32_t(page.width));
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, std::uint32_t(page.height));
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, std::uint16_t(page.spp));
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, std::uint16_t(8 * bytes_per_sample(page.type)));
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, page.type == PixelType::f32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, page.planes > 1 ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, page.photometric);
    if (!page.extra.empty()) TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, std::uint16_t(page.extra.size()), page.extra.data());
    if (tile) {
        TIFFSetField(tif, TIFFTAG_TILEWIDTH, std::uint32_t(tile));
        TIFFSetField(tif, TIFFTAG_TILELENGTH, std::uint32_t(tile));
    } else {
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, rows_per_strip);
    }
    set_tiff_metadata(tif, m);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, codec);
    if (codec != COMPRESSION_NONE)
        TIFFSetField(tif, TIFFTAG_PREDICTOR, page.type == PixelType::f32 ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL);

    // The predictor rewrites the buffer it is given, so each strip or tile is first copied out of the image.
    const std::size_t pitch = std::size_t(tile) * px;
    std::vector<std::uint8_t> block(tile ? pitch * std::size_t(tile) : row_bytes * rows_per_strip);
    for (int p = 0; p < page.planes; ++p) {
        if (tile) {
            for (int ty = 0; ty < page.height; ty += tile)
                for (int tx = 0; tx < page.width; tx += tile) {
                    const int w = std::min(tile, page.width - tx), rows = std::min(tile, page.height - ty);
                    if (w < tile || rows < tile) std::fill(block.begin(), block.end(), std::uint8_t(0));  // edge tiles padded
                    for (int r = 0; r < rows; ++r)
                        std::memcpy(block.data() + std::size_t(r) * pitch, page.row(ty + r, p) + std::size_t(tx) * px, std::size_t(w) * px);
                    if (TIFFWriteEncodedTile(tif, TIFFComputeTile(tif, std::uint32_t(tx), std::uint32_t(ty), 0, std::uint16_t(p)),
                                             block.data(), tmsize_t(block.size())) < 0)
                        tiff_failed(name, f, "cannot encode TIFF");
                }
            continue;
        }
        for (std::uint32_t y = 0; y < std::uint32_t(page.height); y += rows_per_strip) {
            const std::uint32_t rows = std::min<std::uint32_t>(rows_per_strip, std::uint32_t(page.height) - y);
            for (std::uint32_t r = 0; r < rows; ++r) std::memcpy(block.data() + r * row_bytes, page.row(int(y + r), p), row_bytes);
            if (TIFFWriteEncodedStrip(tif, TIFFComputeStrip(tif, y, std::uint16_t(p)), block.data(), tmsize_t(rows * row_bytes)) < 0)
                tiff_failed(name, f, "cannot encode TIFF");
        }
    }
    if (!TIFFWriteDirectory(tif)) tiff_failed(name, f, "cannot encode TIFF");
}

// A TIFF being written into `out`: WriteOptions' codec and tile side checked, BigTIFF beyond classic TIFF's
// 32-bit offsets (room left for the directories) for `bytes` of samples.
struct TiffWriter {
    MemoryFile f;
    TiffHandle h;
    std::uint16_t codec = COMPRESSION_NONE;
    int tile = 0;

    TiffWriter(Buffer& out, std::uint64_t bytes, const std::string& name, const WriteOptions& options)
        : codec(tiff_codec(name, options.tiff_compression)), tile(options.tiff_tile) {
        if (tile != 0 && (tile < 16 || tile % 16 || tile > 8192))
            fail(name, "tiles of " + std::to_string(tile) + " pixels: the tile side must be a multiple of 16 from 16 to 8192");
        f.out = &out;
        const bool big = bytes > (std::uint64_t(1) << 32) - (std::uint64_t(1) << 24);
        h.tif = open_memory_file(f, name, big ? "w8" : "w", 0);
        if (!h.tif) tiff_failed(name, f, "cannot encode TIFF");
    }
    void close() {
        TIFFClose(h.tif);
        h.tif = nullptr;
    }
};

}  // namespace

Buffer encode_tiff_pages(std::span<const ConstImageView> pages, std::span<const ImageMetadata> metadata,
                         const std::string& name, const WriteOptions& options) {
    std::uint64_t bytes = 0;
    for (const ConstImageView& page : pages) bytes += std::uint64_t(page.shape.row_bytes()) * page.height();
    Buffer out;
    TiffWriter w(out, bytes, name, options);
    for (std::size_t p = 0; p < pages.size(); ++p)
        write_tiff_page(w.h.tif, w.f, image_samples(pages[p]), metadata[p], w.codec, w.tile, name);
    w.close();
    return out;
}

Buffer encode_tiff_bands(ConstImageView stack, const TiffBands& layout, const std::string& name, const WriteOptions& options) {
    Buffer out;
    TiffWriter w(out, std::uint64_t(stack.shape.row_bytes()) * std::uint64_t(stack.shape.rows()), name, options);
    write_tiff_page(w.h.tif, w.f, band_samples(stack, layout), options.metadata, w.codec, w.tile, name);
    w.close();
    return out;
}

Buffer encode_tiff(ConstImageView image, const std::string& name, const WriteOptions& options) {
    return encode_tiff_pages(std::span(&image, 1), std::span(&options.metadata, 1), name, options);
}

}  // namespace apron::io

#else  // !APRON_HAVE_TIFF: dispatch never calls these (can_store refuses TIFF), but the linker needs them.

namespace apron::io {

Image decode_tiff(const ByteSource&, const std::string& name, const ReadOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
Image decode_tiff(Bytes, const std::string& name, const ReadOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
Buffer encode_tiff(ConstImageView, const std::string& name, const WriteOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
ImageShape probe_tiff(const ByteSource&, const std::string& name, const ReadOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
std::unique_ptr<RowSource> open_tiff_rows(std::unique_ptr<ByteSource>, const std::string& name, const ReadOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
ImageMetadata metadata_tiff(const ByteSource&, const std::string& name, const ReadOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
std::vector<Image> decode_tiff_pages(const ByteSource&, const std::string& name, const ReadOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
int count_tiff_pages(const ByteSource&, const std::string& name, const ReadOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
std::vector<ImageShape> probe_tiff_pages(const ByteSource&, const std::string& name, const ReadOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
std::vector<ImageMetadata> metadata_tiff_pages(const ByteSource&, const std::string& name, const ReadOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
Buffer encode_tiff_pages(std::span<const ConstImageView>, std::span<const ImageMetadata>, const std::string& name,
                         const WriteOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
// No band stack: the file's reader names what is missing.
TiffBands probe_tiff_bands(const ByteSource&, const std::string&, const ReadOptions&) { return {}; }
Image decode_tiff_bands(const ByteSource&, const std::string& name, const ReadOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}
Buffer encode_tiff_bands(ConstImageView, const TiffBands&, const std::string& name, const WriteOptions&) {
    fail(name, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}

}  // namespace apron::io

#endif
