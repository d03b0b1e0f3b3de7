// The encoded row formats of the streaming engine: compressed tiled BigTIFF and PNG written by rows
// (create_row_sink), read back bit-exact by read_image and by open_row_source; PNG read by rows equals
// read_image for every kind of file libpng expands (palette, low bit depths, tRNS), and interlaced files are
// decoded whole. Reference PNGs of those kinds are written here with libpng directly, not with the code
// under test.
#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "io/row_stream.hpp"
#include "test_io_support.hpp"

#if APRON_HAVE_TIFF
#include <tiffio.h>
#endif

using namespace apron;
using namespace apron::iotest;

namespace {

// Writes `img` through a sink in bands of `band` rows, in order, then commits.
void write_in_bands(const std::string& path, const Image& img, const io::SinkOptions& options, int band) {
    auto sink = io::create_row_sink(path, img.shape(), options);
    EXPECT_FALSE(sink->random_access());
    for (int y = 0; y < img.height(); y += band)
        sink->write_rows(y, img.view().roi(0, y, img.width(), std::min(band, img.height() - y)));
    sink->sync();
    sink->commit();
}

// open_row_source's rows, read in bands of `band` rows with `overlap` rows read again (halos), equal img.
::testing::AssertionResult rows_read_back(const std::string& path, const Image& img, int band, int overlap) {
    auto source = io::open_row_source(path);
    if (!(source->shape() == img.shape())) return ::testing::AssertionFailure() << "shape differs";
    source->retain_rows(overlap);
    Image got(img.shape());
    for (int y = 0; y < img.height(); y += band) {
        const int y0 = std::max(0, y - overlap), y1 = std::min(img.height(), y + band);
        Image part(img.width(), y1 - y0, img.channels(), img.type());
        source->read_rows(y0, part.view());
        for (int r = y; r < y1; ++r)
            std::memcpy(got.view().row_bytes(r), part.view().row_bytes(r - y0), img.shape().row_bytes());
    }
    return same_pixels(got.view(), img.view());
}

bool no_partial_files(const ScratchDir& dir) {
    for (const auto& e : std::filesystem::directory_iterator(dir.path()))
        if (e.path().filename().string().find(".apron-partial") != std::string::npos) return false;
    return true;
}

}  // namespace

#if APRON_HAVE_TIFF

TEST(EncodedRowSinks, CompressedTiffRoundTripsBitExact) {
    ScratchDir dir;
    for (io::TiffCompression c : {io::TiffCompression::deflate, io::TiffCompression::zstd, io::TiffCompression::lzw}) {
        const int codec = c == io::TiffCompression::deflate ? COMPRESSION_ADOBE_DEFLATE
                          : c == io::TiffCompression::zstd  ? COMPRESSION_ZSTD
                                                            : COMPRESSION_LZW;
        if (!TIFFIsCODECConfigured(std::uint16_t(codec))) continue;
        for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
            for (int channels = 1; channels <= 4; ++channels) {
                SCOPED_TRACE(std::string(io::to_string(c)) + " " + to_string(t) + " x" + std::to_string(channels));
                const Image img = random_image(37, 41, channels, t, unsigned(channels * 7 + int(t)));
                const std::string path = dir.file("out.tif");
                io::SinkOptions options;
                options.tiff_tile_side = 16;
                options.tiff_compression = c;
                write_in_bands(path, img, options, 7);  // bands that cut the rows of tiles
                EXPECT_TRUE(same_pixels(read_image(path).view(), img.view()));
                EXPECT_TRUE(rows_read_back(path, img, 9, 4));
                EXPECT_TRUE(no_partial_files(dir));
            }
    }
}

TEST(EncodedRowSinks, CompressedTiffOfOnePixelAndOneTile) {
    ScratchDir dir;
    io::SinkOptions options;
    options.tiff_compression = io::TiffCompression::deflate;
    for (auto [w, h] : {std::pair{1, 1}, std::pair{300, 1}, std::pair{1, 300}}) {
        const Image img = random_image(w, h, 3, PixelType::u16, unsigned(w + h));
        write_in_bands(dir.file("one.tiff"), img, options, 256);
        EXPECT_TRUE(same_pixels(read_image(dir.file("one.tiff")).view(), img.view()));
    }
}

TEST(EncodedRowSinks, CompressedTiffRefusesRowsOutOfOrderAndLeavesNothing) {
    ScratchDir dir;
    io::SinkOptions options;
    options.tiff_tile_side = 16;
    options.tiff_compression = io::TiffCompression::lzw;
    const Image img = random_image(20, 40, 1, PixelType::u8, 3);
    const std::string path = dir.file("o.tif");
    {
        auto sink = io::create_row_sink(path, img.shape(), options);
        sink->write_rows(0, img.view().roi(0, 0, 20, 10));
        EXPECT_TRUE(fails_naming([&] { sink->write_rows(20, img.view().roi(0, 20, 20, 10)); }, path, "out of order"));
        EXPECT_TRUE(fails_naming([&] { sink->commit(); }, path, "10 of 40 rows"));
    }
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(no_partial_files(dir));
}

#endif  // APRON_HAVE_TIFF

TEST(EncodedRowSinks, CompressionIsRefusedForOtherFormats) {
    ScratchDir dir;
    io::SinkOptions options;
    options.tiff_compression = io::TiffCompression::zstd;
    EXPECT_TRUE(fails_naming([&] { io::create_row_sink(dir.file("o.png"), ImageShape{4, 4, 1, PixelType::u8}, options); },
                             "--compression", "o.png"));
    EXPECT_TRUE(fails_naming([&] { io::parse_tiff_compression("brotli"); }, "--compression", "'brotli'"));
    EXPECT_EQ(io::parse_tiff_compression("lzw"), io::TiffCompression::lzw);
    EXPECT_FALSE(io::sink_random_access("a.tif", options));
    EXPECT_FALSE(io::sink_random_access("a.png", {}));
    EXPECT_TRUE(io::sink_random_access("a.tif", {}));
}

TEST(EncodedRowSinks, PngRoundTripsBitExact) {
    ScratchDir dir;
    for (PixelType t : {PixelType::u8, PixelType::u16})
        for (int channels = 1; channels <= 4; ++channels)
            for (auto [w, h] : {std::pair{37, 29}, std::pair{1, 1}, std::pair{1, 17}, std::pair{61, 2}}) {
                SCOPED_TRACE(to_string(t) + std::string(" x") + std::to_string(channels) + " " + std::to_string(w) + "x" + std::to_string(h));
                const Image img = random_image(w, h, channels, t, unsigned(w * 31 + h + channels));
                const std::string path = dir.file("out.png");
                io::SinkOptions options;
                options.png_compression = channels;  // any level gives the same pixels
                write_in_bands(path, img, options, 5);
                EXPECT_TRUE(same_pixels(read_image(path).view(), img.view()));
                EXPECT_TRUE(rows_read_back(path, img, 6, 3));
                EXPECT_TRUE(rows_read_back(path, img, 4, 0));  // every band behind the last restarts the decode
                EXPECT_TRUE(no_partial_files(dir));
            }
}

TEST(EncodedRowSinks, PngSinkRefusesRowsOutOfOrder) {
    ScratchDir dir;
    const Image img = random_image(9, 9, 3, PixelType::u8, 1);
    const std::string path = dir.file("o.png");
    {
        auto sink = io::create_row_sink(path, img.shape(), {});
        EXPECT_TRUE(fails_naming([&] { sink->write_rows(3, img.view().roi(0, 3, 9, 3)); }, path, "out of order"));
    }
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(no_partial_files(dir));
    io::SinkOptions bad;
    bad.png_compression = 10;
    EXPECT_TRUE(fails_naming([&] { io::create_row_sink(path, img.shape(), bad); }, path, "outside 0..9"));
}

namespace {

// A PNG written with libpng directly: IHDR as given, rows packed as the file stores them.
void write_reference_png(const std::string& path, int w, int h, int depth, int color, bool interlaced,
                         const std::vector<std::vector<png_byte>>& rows, const std::vector<png_color>& palette = {},
                         const std::vector<png_byte>& trns = {}, const png_color_16* trns_color = nullptr) {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, f);
    png_set_IHDR(png, info, png_uint_32(w), png_uint_32(h), depth, color,
                 interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (!palette.empty()) png_set_PLTE(png, info, palette.data(), int(palette.size()));
    if (!trns.empty() || trns_color) png_set_tRNS(png, info, trns.empty() ? nullptr : trns.data(), int(trns.size()), trns_color);
    png_write_info(png, info);
    std::vector<png_bytep> pointers;
    for (auto& r : rows) pointers.push_back(const_cast<png_bytep>(r.data()));
    png_write_image(png, pointers.data());
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
}

std::vector<std::vector<png_byte>> random_rows(int h, std::size_t bytes, unsigned seed, int modulo = 256) {
    std::mt19937 rng(seed);
    std::vector<std::vector<png_byte>> rows(static_cast<std::size_t>(h), std::vector<png_byte>(bytes));
    for (auto& r : rows)
        for (auto& b : r) b = png_byte(int(rng() % unsigned(modulo)));
    return rows;
}

}  // namespace

TEST(EncodedRowSinks, PngRowsEqualReadImageForExpandedKinds) {
    ScratchDir dir;
    const int w = 23, h = 19;
    std::vector<png_color> palette;
    for (int k = 0; k < 16; ++k) palette.push_back({png_byte(k * 16), png_byte(255 - k * 9), png_byte(k * k)});
    const std::vector<png_byte> alphas = {0, 64, 128, 255, 7};
    const png_color_16 gray_key{0, 0, 0, 0, 3};
    const png_color_16 rgb_key{0, 10, 20, 30, 0};
    struct Case {
        const char* name;
        int depth, color;
        std::size_t row_bytes;
        int modulo;
        std::vector<png_byte> trns;
        const png_color_16* key;
    };
    const std::vector<Case> cases = {
        {"palette8", 8, PNG_COLOR_TYPE_PALETTE, std::size_t(w), 16, {}, nullptr},
        {"palette4+trns", 4, PNG_COLOR_TYPE_PALETTE, std::size_t((w + 1) / 2), 256, alphas, nullptr},
        {"gray1", 1, PNG_COLOR_TYPE_GRAY, std::size_t((w + 7) / 8), 256, {}, nullptr},
        {"gray2+key", 2, PNG_COLOR_TYPE_GRAY, std::size_t((w + 3) / 4), 256, {}, &gray_key},
        {"gray4", 4, PNG_COLOR_TYPE_GRAY, std::size_t((w + 1) / 2), 256, {}, nullptr},
        {"rgb8+key", 8, PNG_COLOR_TYPE_RGB, std::size_t(w) * 3, 32, {}, &rgb_key},
        {"gray16", 16, PNG_COLOR_TYPE_GRAY, std::size_t(w) * 2, 256, {}, nullptr},
        {"rgba16", 16, PNG_COLOR_TYPE_RGB_ALPHA, std::size_t(w) * 8, 256, {}, nullptr},
    };
    for (bool interlaced : {false, true})
        for (const Case& c : cases) {
            SCOPED_TRACE(std::string(c.name) + (interlaced ? " interlaced" : ""));
            const std::string path = dir.file(std::string(c.name) + ".png");
            write_reference_png(path, w, h, c.depth, c.color, interlaced, random_rows(h, c.row_bytes, unsigned(c.depth * 3 + c.color), c.modulo),
                                c.color == PNG_COLOR_TYPE_PALETTE ? palette : std::vector<png_color>{}, c.trns, c.key);
            const Image whole = read_image(path);
            EXPECT_TRUE(rows_read_back(path, whole, 5, 2));
            EXPECT_TRUE(rows_read_back(path, whole, 3, 0));
        }
}

TEST(EncodedRowSinks, PngRowsNameACutFile) {
    ScratchDir dir;
    const Image img = random_image(40, 30, 3, PixelType::u8, 9);
    write_in_bands(dir.file("a.png"), img, {}, 30);
    std::vector<std::uint8_t> bytes;
    {
        FILE* f = std::fopen(dir.file("a.png").c_str(), "rb");
        for (int ch; (ch = std::fgetc(f)) != EOF;) bytes.push_back(std::uint8_t(ch));
        std::fclose(f);
    }
    FILE* f = std::fopen(dir.file("cut.png").c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size() / 2, f);
    std::fclose(f);
    EXPECT_TRUE(fails_naming(
        [&] {
            auto source = io::open_row_source(dir.file("cut.png"));
            Image all(source->shape());
            source->read_rows(0, all.view());
        },
        dir.file("cut.png"), "bad PNG file"));
}
