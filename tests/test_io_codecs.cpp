// PNG, JPEG and TIFF details. The PNG files below were made by a few lines of Python (zlib + CRC, no
// libpng), so they check our reader against the PNG specification rather than against our own writer;
// the TIFF files are written with libtiff directly in every layout our writer does not produce
// (tiles, separate planes, big-endian, other compressions).
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "io/row_stream.hpp"
#include "test_io_hostile_support.hpp"

#if APRON_HAVE_TIFF
#include <tiffio.h>
#endif

namespace apron::iotest {
namespace {

// 3x2, 2-bit palette (red, green, blue, white) with tRNS giving blue alpha 0x80; rows: 0 1 2 / 3 2 1.
// 10x1, 1-bit gray 1011001110.
// 2x1, 16-bit gray 0x1234 0xABCD.
// 5x5, 8-bit gray, Adam7-interlaced, value 10 * y + x.
const std::uint8_t palette_png[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
    0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x02, 0x03, 0x00, 0x00, 0x00, 0xe0, 0x1a, 0x8e, 0x89, 0x00, 0x00, 0x00,
    0x0c, 0x50, 0x4c, 0x54, 0x45, 0xff, 0x00, 0x00, 0x00, 0xff, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xfb,
    0x00, 0x60, 0xf6, 0x00, 0x00, 0x00, 0x03, 0x74, 0x52, 0x4e, 0x53, 0xff, 0xff, 0x80, 0x3a, 0x72, 0x8e, 0x61,
    0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x90, 0x60, 0x78, 0x02, 0x00, 0x01, 0x30,
    0x00, 0xfd, 0x56, 0xcd, 0x1c, 0x73, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
};
const std::uint8_t gray1_png[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00,
    0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0xcf, 0x8e, 0x02, 0xd3, 0x00,
    0x00, 0x00, 0x0b, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xd8, 0xdc, 0x00, 0x00, 0x01, 0xe9, 0x01,
    0x34, 0x09, 0x0a, 0x15, 0xd4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
};
const std::uint8_t gray16_png[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
    0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x10, 0x00, 0x00, 0x00, 0x00, 0x81, 0xd9, 0xfc, 0x15, 0x00, 0x00, 0x00,
    0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x10, 0x32, 0x59, 0x7d, 0x16, 0x00, 0x03, 0x0c, 0x01, 0xbf,
    0x6e, 0xb9, 0xc6, 0x5d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
};
const std::uint8_t adam7_png[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00,
    0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x05, 0x08, 0x00, 0x00, 0x00, 0x01, 0xdf, 0x03, 0x49, 0xaf, 0x00,
    0x00, 0x00, 0x2c, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x60, 0x60, 0x60, 0x61, 0xd0, 0xd0, 0x61,
    0x60, 0x62, 0xd0, 0x62, 0x10, 0x11, 0x93, 0x60, 0x60, 0x64, 0x66, 0x10, 0x15, 0x67, 0xd0, 0xd4, 0x66,
    0xe0, 0xe2, 0xe6, 0xe1, 0xe5, 0x63, 0x90, 0x93, 0x57, 0x50, 0x54, 0x02, 0x00, 0x20, 0x85, 0x02, 0x27,
    0x48, 0x68, 0x63, 0x47, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
};

TEST(Png, PaletteWithTransparencyBecomesRgba) {
    const Image img = decode_image(ByteVec(std::begin(palette_png), std::end(palette_png)), "p.png");
    EXPECT_EQ(img.shape(), (ImageShape{3, 2, 4, PixelType::u8}));
    EXPECT_EQ(pixels_of<std::uint8_t>(img),
              (std::vector<std::uint8_t>{255, 0,   0,   255, 0, 255, 0,   255,  0, 0,   255, 0x80,
                                         255, 255, 255, 255, 0, 0,   255, 0x80, 0, 255, 0,   255}));
}

TEST(Png, LowBitDepthGrayExpandsToEightBits) {
    const Image img = decode_image(ByteVec(std::begin(gray1_png), std::end(gray1_png)), "g.png");
    EXPECT_EQ(img.shape(), (ImageShape{10, 1, 1, PixelType::u8}));
    EXPECT_EQ(pixels_of<std::uint8_t>(img), (std::vector<std::uint8_t>{255, 0, 255, 255, 0, 0, 255, 255, 255, 0}));
}

TEST(Png, SixteenBitSamplesComeOutNative) {
    const Image img = decode_image(ByteVec(std::begin(gray16_png), std::end(gray16_png)), "w.png");
    EXPECT_EQ(img.shape(), (ImageShape{2, 1, 1, PixelType::u16}));
    EXPECT_EQ(pixels_of<std::uint16_t>(img), (std::vector<std::uint16_t>{0x1234, 0xABCD}));

    // Written big-endian: with compression 0 the deflate stream stores the filtered row as is.
    Image src(2, 1, 1, PixelType::u16);
    src.row<std::uint16_t>(0)[0] = 0x1234;
    src.row<std::uint16_t>(0)[1] = 0xABCD;
    WriteOptions stored;
    stored.png_compression = 0;
    const auto file = encode_image(ImageFormat::png, src, "w.png", stored);
    const std::uint8_t row[] = {0, 0x12, 0x34, 0xAB, 0xCD};  // filter type none, then the samples
    EXPECT_NE(std::search(file.begin(), file.end(), std::begin(row), std::end(row)), file.end());
}

TEST(Png, InterlacedImagesAreAssembled) {
    const Image img = decode_image(ByteVec(std::begin(adam7_png), std::end(adam7_png)), "i.png");
    ASSERT_EQ(img.shape(), (ImageShape{5, 5, 1, PixelType::u8}));
    for (int y = 0; y < 5; ++y)
        for (int x = 0; x < 5; ++x) EXPECT_EQ(img.row<std::uint8_t>(y)[x], 10 * y + x);
}

TEST(Jpeg, FlatImageDecodesExactlyAndGrayStaysGray) {
    Image flat(16, 16, 1, PixelType::u8);
    for (int y = 0; y < 16; ++y) std::fill_n(flat.row<std::uint8_t>(y), 16, std::uint8_t(77));
    WriteOptions best;
    best.jpeg_quality = 100;
    const auto file = encode_image(ImageFormat::jpeg, flat, "f.jpg", best);
    ASSERT_GE(file.size(), 4u);
    EXPECT_EQ(file[0], 0xFF);
    EXPECT_EQ(file[1], 0xD8);
    EXPECT_EQ(file[file.size() - 2], 0xFF);
    EXPECT_EQ(file[file.size() - 1], 0xD9);
    EXPECT_TRUE(same_pixels(flat, decode_image(file, "f.jpg")));
}

TEST(Jpeg, QualityChangesTheSize) {
    const Image img = random_image(64, 64, 3, PixelType::u8, 5);
    WriteOptions low, high;
    low.jpeg_quality = 10;
    high.jpeg_quality = 95;
    EXPECT_LT(encode_image(ImageFormat::jpeg, img, "q.jpg", low).size(),
              encode_image(ImageFormat::jpeg, img, "q.jpg", high).size());
}

#if APRON_HAVE_TIFF

struct TiffLayout {
    bool tiled = false;
    std::uint32_t block_w = 16, block_h = 16;  // tile size, or block_h rows per strip
    bool separate = false;                     // one plane per sample
    const char* mode = "w";                    // "wb": big-endian, "wl": little-endian
    std::uint16_t compression = COMPRESSION_NONE;
};

// Writes `img` with libtiff in the given layout: the independent reference for our reader.
void write_reference_tiff(const std::string& path, const Image& img, const TiffLayout& l) {
    TIFF* tif = TIFFOpen(path.c_str(), l.mode);
    ASSERT_NE(tif, nullptr);
    const int c = img.channels();
    const std::size_t bps = bytes_per_sample(img.type());
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, std::uint32_t(img.width()));
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, std::uint32_t(img.height()));
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, c);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, int(8 * bps));
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, img.type() == PixelType::f32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, c >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, l.separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, l.compression);
    if (c == 2 || c == 4) {
        const std::uint16_t extra[] = {EXTRASAMPLE_ASSOCALPHA};
        TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, extra);
    }
    if (l.tiled) {
        TIFFSetField(tif, TIFFTAG_TILEWIDTH, l.block_w);
        TIFFSetField(tif, TIFFTAG_TILELENGTH, l.block_h);
    } else {
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, l.block_h);
    }
    const std::uint32_t bw = l.tiled ? l.block_w : std::uint32_t(img.width());
    const int planes = l.separate ? c : 1, cs = l.separate ? 1 : c;
    for (int p = 0; p < planes; ++p)
        for (std::uint32_t y0 = 0; y0 < std::uint32_t(img.height()); y0 += l.block_h)
            for (std::uint32_t x0 = 0; x0 < std::uint32_t(img.width()); x0 += bw) {
                // A strip ends at the image's last row; a tile is always full size, padded with zeros.
                const std::uint32_t rows = l.tiled ? l.block_h : std::min<std::uint32_t>(l.block_h, img.height() - y0);
                std::vector<std::uint8_t> block(std::size_t(bw) * rows * cs * bps, 0);
                for (std::uint32_t r = 0; r < rows && y0 + r < std::uint32_t(img.height()); ++r)
                    for (std::uint32_t x = 0; x < bw && x0 + x < std::uint32_t(img.width()); ++x)
                        for (int k = 0; k < cs; ++k) {
                            const auto* src = reinterpret_cast<const std::uint8_t*>(img.view().row_bytes(int(y0 + r))) +
                                              ((x0 + x) * c + (l.separate ? p : k)) * bps;
                            std::memcpy(&block[((r * bw + x) * cs + k) * bps], src, bps);
                        }
                const tmsize_t n = tmsize_t(block.size());
                if (l.tiled)
                    ASSERT_EQ(
                        TIFFWriteEncodedTile(tif, TIFFComputeTile(tif, x0, y0, 0, std::uint16_t(p)), block.data(), n),
                        n);
                else
                    ASSERT_EQ(TIFFWriteEncodedStrip(tif, TIFFComputeStrip(tif, y0, std::uint16_t(p)), block.data(), n),
                              n);
            }
    ASSERT_TRUE(TIFFWriteDirectory(tif));
    TIFFClose(tif);
}

void expect_reads_back(const Image& img, const TiffLayout& l) {
    ScratchDir dir;
    const std::string path = dir.file("ref.tif");
    write_reference_tiff(path, img, l);
    EXPECT_TRUE(same_pixels(img, read_image(path)));
}

TEST(Tiff, TiledContiguousWithPartialEdgeTiles) {
    expect_reads_back(random_image(37, 21, 3, PixelType::u16, 1), {.tiled = true, .compression = COMPRESSION_LZW});
}

TEST(Tiff, TiledSeparatePlanes) {
    expect_reads_back(random_image(20, 33, 4, PixelType::u8, 2),
                      {.tiled = true, .block_w = 16, .block_h = 32, .separate = true});
}

TEST(Tiff, StripsWithSeparatePlanesBigEndianFloat) {
    expect_reads_back(random_image(11, 7, 2, PixelType::f32, 3),
                      {.block_h = 3, .separate = true, .mode = "wb", .compression = COMPRESSION_ADOBE_DEFLATE});
}

TEST(Tiff, StripsBigEndianAndLittleEndian16Bit) {
    expect_reads_back(random_image(9, 5, 1, PixelType::u16, 4), {.block_h = 2, .mode = "wb"});
    expect_reads_back(random_image(9, 5, 3, PixelType::u16, 5), {.block_h = 1, .mode = "wl"});
}

TEST(Tiff, OurWriterUsesStripsAndAReadableLayout) {
    const Image src = random_image(300, 700, 3, PixelType::u8, 6);  // several 256 KiB strips
    ScratchDir dir;
    write_image(dir.file("w.tif"), src);
    TIFF* tif = TIFFOpen(dir.file("w.tif").c_str(), "r");
    ASSERT_NE(tif, nullptr);
    EXPECT_FALSE(TIFFIsTiled(tif));
    EXPECT_GT(TIFFNumberOfStrips(tif), 1u);
    TIFFClose(tif);
    EXPECT_TRUE(same_pixels(src, read_image(dir.file("w.tif"))));
}

// A TIFF of samples apron does not hold as they are (palette, 1/2/4-bit, min-is-white, signed, YCbCr),
// written by libtiff from `sample(x, y, s)`, the raw value of sample s of pixel (x, y) in the file's own bits.
struct ConvertedTiff {
    int width = 0, height = 0, spp = 1, bits = 8;
    std::uint16_t format = SAMPLEFORMAT_UINT, photometric = PHOTOMETRIC_MINISBLACK;
    TiffLayout layout;
    std::vector<std::uint16_t> colour_map;  // palette: the red, then green, then blue entries
    std::function<std::uint32_t(int, int, int)> sample;
};

void write_converted_tiff(const std::string& path, const ConvertedTiff& t) {
    TIFF* tif = TIFFOpen(path.c_str(), t.layout.mode);
    ASSERT_NE(tif, nullptr);
    const TiffLayout& l = t.layout;
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, std::uint32_t(t.width));
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, std::uint32_t(t.height));
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, t.spp);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, t.bits);
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, t.format);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, t.photometric);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, l.separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, l.compression);
    if (t.spp == 2) {
        const std::uint16_t extra[] = {EXTRASAMPLE_UNASSALPHA};
        TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, extra);
    }
    if (!t.colour_map.empty()) {
        const std::size_t n = t.colour_map.size() / 3;
        TIFFSetField(tif, TIFFTAG_COLORMAP, t.colour_map.data(), t.colour_map.data() + n, t.colour_map.data() + 2 * n);
    }
    if (l.tiled) {
        TIFFSetField(tif, TIFFTAG_TILEWIDTH, l.block_w);
        TIFFSetField(tif, TIFFTAG_TILELENGTH, l.block_h);
    } else {
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, l.block_h);
    }
    const std::uint32_t bw = l.tiled ? l.block_w : std::uint32_t(t.width);
    const int planes = l.separate ? t.spp : 1, cs = l.separate ? 1 : t.spp;
    const std::size_t row_bytes = (std::size_t(bw) * std::size_t(cs) * std::size_t(t.bits) + 7) / 8;
    for (int p = 0; p < planes; ++p)
        for (std::uint32_t y0 = 0; y0 < std::uint32_t(t.height); y0 += l.block_h)
            for (std::uint32_t x0 = 0; x0 < std::uint32_t(t.width); x0 += bw) {
                const std::uint32_t rows = l.tiled ? l.block_h : std::min<std::uint32_t>(l.block_h, t.height - y0);
                std::vector<std::uint8_t> block(row_bytes * rows, 0);
                for (std::uint32_t r = 0; r < rows && y0 + r < std::uint32_t(t.height); ++r)
                    for (std::uint32_t x = 0; x < bw && x0 + x < std::uint32_t(t.width); ++x)
                        for (int k = 0; k < cs; ++k) {
                            const std::uint32_t v = t.sample(int(x0 + x), int(y0 + r), l.separate ? p : k);
                            const std::size_t i = std::size_t(x) * std::size_t(cs) + std::size_t(k);
                            std::uint8_t* row = &block[r * row_bytes];
                            if (t.bits < 8) {  // packed from the most significant bit, as TIFF's default fill order
                                const std::size_t bit = i * std::size_t(t.bits);
                                row[bit >> 3] |= std::uint8_t(v << (8 - t.bits - int(bit & 7)));
                            } else if (t.bits == 8) {
                                row[i] = std::uint8_t(v);
                            } else {
                                const std::uint16_t v16 = std::uint16_t(v);
                                std::memcpy(row + 2 * i, &v16, 2);
                            }
                        }
                const tmsize_t n = tmsize_t(block.size());
                if (l.tiled)
                    ASSERT_EQ(TIFFWriteEncodedTile(tif, TIFFComputeTile(tif, x0, y0, 0, std::uint16_t(p)), block.data(), n), n);
                else
                    ASSERT_EQ(TIFFWriteEncodedStrip(tif, TIFFComputeStrip(tif, y0, std::uint16_t(p)), block.data(), n), n);
            }
    ASSERT_TRUE(TIFFWriteDirectory(tif));
    TIFFClose(tif);
}

// The file reads as `expected`, whole and in bands of 5 rows with 2 rows read again (the streaming reader).
void expect_converted(const ConvertedTiff& t, const Image& expected) {
    ScratchDir dir;
    const std::string path = dir.file("c.tif");
    write_converted_tiff(path, t);
    EXPECT_TRUE(same_pixels(expected, read_image(path)));
    auto source = io::open_row_source(path);
    ASSERT_TRUE(source->shape() == expected.shape());
    for (int y = 0; y < expected.height(); y += 3) {
        Image band(expected.width(), std::min(5, expected.height() - y), expected.channels(), expected.type());
        source->read_rows(y, band.view());
        EXPECT_TRUE(same_pixels(expected.view().roi(0, y, expected.width(), band.height()), band)) << "rows from " << y;
    }
}

template <class T, class Img>
auto& sample_at(Img& img, int x, int y, int k) {
    return img.template row<T>(y)[std::size_t(x) * std::size_t(img.channels()) + std::size_t(k)];
}

// A pseudo-random b-bit value of pixel (x, y), sample s.
std::uint32_t field(int x, int y, int s, int bits) {
    return std::uint32_t((x * 7919 + y * 104729 + s * 31 + (x * y) % 13) % (1 << bits));
}

TEST(Tiff, PaletteImagesBecomeRgb) {
    for (int bits : {1, 2, 4, 8})
        for (const TiffLayout& l : {TiffLayout{.block_h = 4}, TiffLayout{.tiled = true, .compression = COMPRESSION_LZW}}) {
            ConvertedTiff t{.width = 37, .height = 19, .bits = bits, .photometric = PHOTOMETRIC_PALETTE, .layout = l};
            const int n = 1 << bits;
            t.colour_map.resize(3 * std::size_t(n));
            for (int i = 0; i < n; ++i)
                for (int k = 0; k < 3; ++k) t.colour_map[std::size_t(k * n + i)] = std::uint16_t(((i * 37 + k * 91) % 256) * 257);
            t.sample = [bits](int x, int y, int s) { return field(x, y, s, bits); };
            Image expected(t.width, t.height, 3, PixelType::u8);
            for (int y = 0; y < t.height; ++y)
                for (int x = 0; x < t.width; ++x)
                    for (int k = 0; k < 3; ++k)
                        sample_at<std::uint8_t>(expected, x, y, k) = std::uint8_t((int(field(x, y, 0, bits)) * 37 + k * 91) % 256);
            SCOPED_TRACE(::testing::Message() << bits << "-bit palette, tiled " << l.tiled);
            expect_converted(t, expected);
        }
    // Old writers stored 8-bit colours in the 16-bit map: taken as they are.
    ConvertedTiff old{.width = 5, .height = 3, .bits = 8, .photometric = PHOTOMETRIC_PALETTE, .layout = {}};
    old.colour_map.resize(3 * 256);
    for (int i = 0; i < 256; ++i)
        for (int k = 0; k < 3; ++k) old.colour_map[std::size_t(k * 256 + i)] = std::uint16_t(255 - i);
    old.sample = [](int x, int y, int) { return std::uint32_t(40 * y + x); };
    Image expected(5, 3, 3, PixelType::u8);
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 5; ++x)
            for (int k = 0; k < 3; ++k) sample_at<std::uint8_t>(expected, x, y, k) = std::uint8_t(255 - (40 * y + x));
    expect_converted(old, expected);
}

TEST(Tiff, LowBitDepthAndMinIsWhiteGray) {
    for (int bits : {1, 2, 4})
        for (bool white : {false, true})
            for (const TiffLayout& l : {TiffLayout{.block_h = 3, .compression = COMPRESSION_ADOBE_DEFLATE},
                                        TiffLayout{.tiled = true, .block_w = 16, .block_h = 16}}) {
                const ConvertedTiff t{.width = 29,
                                      .height = 21,
                                      .bits = bits,
                                      .photometric = std::uint16_t(white ? PHOTOMETRIC_MINISWHITE : PHOTOMETRIC_MINISBLACK),
                                      .layout = l,
                                      .sample = [bits](int x, int y, int s) { return field(x, y, s, bits); }};
                Image expected(t.width, t.height, 1, PixelType::u8);
                for (int y = 0; y < t.height; ++y)
                    for (int x = 0; x < t.width; ++x) {
                        const int v = int(field(x, y, 0, bits)) * 255 / ((1 << bits) - 1);
                        sample_at<std::uint8_t>(expected, x, y, 0) = std::uint8_t(white ? 255 - v : v);
                    }
                SCOPED_TRACE(::testing::Message() << bits << "-bit, min-is-white " << white << ", tiled " << l.tiled);
                expect_converted(t, expected);
            }
    // One pixel: a single bit in a byte of padding, strips and a tile far larger than the image.
    for (const TiffLayout& l : {TiffLayout{.block_h = 1}, TiffLayout{.tiled = true}}) {
        const ConvertedTiff one{.width = 1, .height = 1, .bits = 1, .photometric = PHOTOMETRIC_MINISWHITE,
                                .layout = l, .sample = [](int, int, int) { return 1u; }};
        Image black(1, 1, 1, PixelType::u8);
        sample_at<std::uint8_t>(black, 0, 0, 0) = 0;
        expect_converted(one, black);
    }
    // 8 and 16-bit min-is-white: the gray is inverted, its alpha is not (separate planes too).
    for (int bits : {8, 16})
        for (bool separate : {false, true}) {
            const ConvertedTiff t{.width = 13,
                                  .height = 9,
                                  .spp = 2,
                                  .bits = bits,
                                  .photometric = PHOTOMETRIC_MINISWHITE,
                                  .layout = {.block_h = 2, .separate = separate},
                                  .sample = [bits](int x, int y, int s) { return field(x, y, s, bits); }};
            const PixelType type = bits == 8 ? PixelType::u8 : PixelType::u16;
            Image expected(t.width, t.height, 2, type);
            const std::uint32_t top = (1u << bits) - 1;
            for (int y = 0; y < t.height; ++y)
                for (int x = 0; x < t.width; ++x)
                    for (int s = 0; s < 2; ++s) {
                        const std::uint32_t v = s == 0 ? top - field(x, y, s, bits) : field(x, y, s, bits);
                        if (bits == 8)
                            sample_at<std::uint8_t>(expected, x, y, s) = std::uint8_t(v);
                        else
                            sample_at<std::uint16_t>(expected, x, y, s) = std::uint16_t(v);
                    }
            SCOPED_TRACE(::testing::Message() << bits << "-bit min-is-white, separate " << separate);
            expect_converted(t, expected);
        }
}

TEST(Tiff, SignedSamplesBecomeExactFloats) {
    for (int bits : {8, 16})
        for (const TiffLayout& l : {TiffLayout{.block_h = 4, .separate = true, .mode = "wb"},
                                    TiffLayout{.tiled = true, .compression = COMPRESSION_ADOBE_DEFLATE}}) {
            const ConvertedTiff t{.width = 23,
                                  .height = 17,
                                  .spp = 3,
                                  .bits = bits,
                                  .format = SAMPLEFORMAT_INT,
                                  .photometric = PHOTOMETRIC_RGB,
                                  .layout = l,
                                  .sample = [bits](int x, int y, int s) { return field(x, y, s, bits); }};
            Image expected(t.width, t.height, 3, PixelType::f32);
            for (int y = 0; y < t.height; ++y)
                for (int x = 0; x < t.width; ++x)
                    for (int s = 0; s < 3; ++s) {
                        const std::uint32_t v = field(x, y, s, bits);
                        // The raw field, read as a two's complement number of `bits` bits.
                        const int signed_v = v >= (1u << (bits - 1)) ? int(v) - (1 << bits) : int(v);
                        sample_at<float>(expected, x, y, s) = float(signed_v);
                    }
            SCOPED_TRACE(::testing::Message() << bits << "-bit signed, tiled " << l.tiled);
            expect_converted(t, expected);
        }
}

TEST(Tiff, UncompressedYCbCrIsRefusedByName) {
    ScratchDir dir;
    const std::string path = dir.file("ycbcr-raw.tif");
    write_converted_tiff(path, {.width = 4, .height = 2, .spp = 3, .photometric = PHOTOMETRIC_YCBCR, .layout = {},
                                .sample = [](int, int, int) { return 128u; }});
    EXPECT_TRUE(fails_naming([&] { read_image(path); }, path, "YCbCr TIFF files are read only JPEG-compressed"));
}

TEST(Tiff, JpegCompressedYCbCrBecomesRgb) {
    if (!TIFFIsCODECConfigured(COMPRESSION_JPEG)) GTEST_SKIP() << "libtiff without JPEG";
    // Smooth colours, so that 4:2:0 chroma and the DCT keep them within a few levels.
    const int w = 48, h = 40;
    auto colour = [](int x, int y, int k) { return std::uint8_t(60 + x + y / 2 + k * 40); };
    for (bool tiled : {false, true}) {
        ScratchDir dir;
        const std::string path = dir.file("ycbcr.tif");
        TIFF* tif = TIFFOpen(path.c_str(), "w");
        ASSERT_NE(tif, nullptr);
        TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
        TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
        TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 3);
        TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
        TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
        TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_JPEG);
        TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_YCBCR);
        TIFFSetField(tif, TIFFTAG_YCBCRSUBSAMPLING, 2, 2);
        TIFFSetField(tif, TIFFTAG_JPEGQUALITY, 95);
        TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);  // libtiff converts our RGB as it writes
        if (tiled) {
            TIFFSetField(tif, TIFFTAG_TILEWIDTH, 16);
            TIFFSetField(tif, TIFFTAG_TILELENGTH, 16);
        } else {
            TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 16);
        }
        const int bw = tiled ? 16 : w;
        for (int y0 = 0; y0 < h; y0 += 16)
            for (int x0 = 0; x0 < w; x0 += bw) {
                const int rows = tiled ? 16 : std::min(16, h - y0);
                std::vector<std::uint8_t> block(std::size_t(bw) * rows * 3, 0);
                // A tile's rows past the image repeat its last row: zeros there would bleed into the
                // chroma that the last real rows share with them.
                for (int r = 0; r < rows; ++r)
                    for (int x = 0; x < bw; ++x)
                        for (int k = 0; k < 3; ++k)
                            block[(std::size_t(r) * bw + x) * 3 + k] = colour(x0 + x, std::min(y0 + r, h - 1), k);
                const tmsize_t n = tmsize_t(block.size());
                if (tiled)
                    ASSERT_EQ(TIFFWriteEncodedTile(tif, TIFFComputeTile(tif, x0, y0, 0, 0), block.data(), n), n);
                else
                    ASSERT_EQ(TIFFWriteEncodedStrip(tif, TIFFComputeStrip(tif, y0, 0), block.data(), n), n);
            }
        ASSERT_TRUE(TIFFWriteDirectory(tif));
        TIFFClose(tif);

        const Image got = read_image(path);
        ASSERT_EQ(got.channels(), 3);
        ASSERT_EQ(got.type(), PixelType::u8);
        int worst = 0;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                for (int k = 0; k < 3; ++k)
                    worst = std::max(worst, std::abs(int(sample_at<std::uint8_t>(got, x, y, k)) - colour(x, y, k)));
        EXPECT_LE(worst, 4) << "tiled " << tiled;
        // The streaming reader decodes the same bits.
        auto source = io::open_row_source(path);
        Image band(w, 7, 3, PixelType::u8);
        source->read_rows(20, band.view());
        EXPECT_TRUE(same_pixels(got.view().roi(0, 20, w, 7), band)) << "tiled " << tiled;
    }
}

#endif  // APRON_HAVE_TIFF

// Regenerates the fuzzers' seed corpora (fuzz/corpus/<target>/): tiny valid files of each flavour. Run by
// hand from the repository root:
//   APRON_FUZZ_CORPUS=fuzz/corpus apron_tests --gtest_also_run_disabled_tests --gtest_filter='ImageIoCorpus.*'
TEST(ImageIoCorpus, DISABLED_WriteFuzzSeeds) {
    const char* root = std::getenv("APRON_FUZZ_CORPUS");
    if (!root) GTEST_SKIP() << "set APRON_FUZZ_CORPUS to the corpus directory";
    auto put = [&](const std::string& target, const std::string& name, const ByteVec& file) {
        std::filesystem::create_directories(std::filesystem::path(root) / target);
        write_file_atomically((std::filesystem::path(root) / target / name).string(), file);
    };
    WriteOptions ascii;
    ascii.pnm_ascii = true;
    put("fuzz_pnm", "p1.pbm", bytes("P1\n# bits\n5 2\n10110\n0 1 0 0 1\n"));
    put("fuzz_pnm", "p2.pgm", bytes("P2\n# comment\n3 2\n9\n1 2 3\n4 5 9\n"));
    put("fuzz_pnm", "p3.ppm", encode_image(ImageFormat::pnm, random_image(2, 2, 3, PixelType::u16, 1), "", ascii));
    put("fuzz_pnm", "p4.pbm", concat(bytes("P4\n10 1\n"), {0b10110000, 0b01000000}));
    put("fuzz_pnm", "p5.pgm", encode_image(ImageFormat::pnm, random_image(3, 2, 1, PixelType::u8, 2), ""));
    put("fuzz_pnm", "p5-16.pgm", encode_image(ImageFormat::pnm, random_image(2, 2, 1, PixelType::u16, 3), ""));
    put("fuzz_pnm", "p6.ppm", encode_image(ImageFormat::pnm, random_image(2, 2, 3, PixelType::u8, 4), ""));
    put("fuzz_pnm", "p7.pam",
        concat(bytes("P7\nWIDTH 2\nHEIGHT 1\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n"),
               {1, 2, 3, 4, 5, 6, 7, 8}));
    put("fuzz_pfm", "gray.pfm", encode_image(ImageFormat::pfm, random_image(3, 2, 1, PixelType::f32, 5), ""));
    put("fuzz_pfm", "rgb.pfm", encode_image(ImageFormat::pfm, random_image(2, 2, 3, PixelType::f32, 6), ""));
    put("fuzz_pfm", "big-endian.pfm", concat(bytes("Pf\n1 2\n1.0\n"), {0x3F, 0x80, 0, 0, 0xC0, 0, 0, 0}));
    for (int c = 1; c <= 4; ++c)
        for (PixelType t : {PixelType::u8, PixelType::u16})
            put("fuzz_png", "c" + std::to_string(c) + to_string(t) + ".png",
                encode_image(ImageFormat::png, random_image(3, 2, c, t, 7), ""));
    put("fuzz_png", "palette.png", ByteVec(std::begin(palette_png), std::end(palette_png)));
    put("fuzz_png", "gray1.png", ByteVec(std::begin(gray1_png), std::end(gray1_png)));
    put("fuzz_png", "adam7.png", ByteVec(std::begin(adam7_png), std::end(adam7_png)));
    // A bomb: 59 bytes declaring 30000x30000; the pixel limit and the memory budget must refuse it and
    // its mutations from the header.
    put("fuzz_png", "bomb-30000x30000.png", png_declaring(30000, 30000));
    put("fuzz_jpeg", "gray.jpg", encode_image(ImageFormat::jpeg, random_image(8, 8, 1, PixelType::u8, 8), ""));
    put("fuzz_jpeg", "rgb.jpg", encode_image(ImageFormat::jpeg, random_image(16, 8, 3, PixelType::u8, 9), ""));
#if APRON_HAVE_TIFF
    put("fuzz_tiff", "u8.tif", encode_image(ImageFormat::tiff, random_image(3, 2, 1, PixelType::u8, 10), ""));
    put("fuzz_tiff", "u16rgba.tif", encode_image(ImageFormat::tiff, random_image(2, 2, 4, PixelType::u16, 11), ""));
    put("fuzz_tiff", "f32.tif", encode_image(ImageFormat::tiff, random_image(2, 3, 2, PixelType::f32, 12), ""));
    ScratchDir dir;
    auto reference = [&](const std::string& name, const Image& img, const TiffLayout& l) {
        write_reference_tiff(dir.file(name), img, l);
        std::ifstream in(dir.file(name), std::ios::binary);
        put("fuzz_tiff", name, ByteVec(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
    };
    reference("tiled.tif", random_image(17, 3, 3, PixelType::u8, 13), {.tiled = true});
    reference("planes-be.tif", random_image(2, 3, 2, PixelType::u16, 14),
              {.block_h = 2, .separate = true, .mode = "wb"});
    reference("lzw.tif", random_image(4, 2, 1, PixelType::u8, 15), {.block_h = 1, .compression = COMPRESSION_LZW});
    // The kinds converted as they are read.
    auto converted = [&](const std::string& name, ConvertedTiff t) {
        t.sample = [bits = t.bits](int x, int y, int s) { return field(x, y, s, bits); };
        write_converted_tiff(dir.file(name), t);
        std::ifstream in(dir.file(name), std::ios::binary);
        put("fuzz_tiff", name, ByteVec(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
    };
    ConvertedTiff palette{.width = 5, .height = 3, .bits = 4, .photometric = PHOTOMETRIC_PALETTE, .layout = {}};
    for (int i = 0; i < 3 * 16; ++i) palette.colour_map.push_back(std::uint16_t(i * 1361));
    converted("palette4.tif", palette);
    converted("bilevel-white.tif", {.width = 11, .height = 2, .bits = 1, .photometric = PHOTOMETRIC_MINISWHITE, .layout = {}});
    converted("signed16-tiled.tif", {.width = 3, .height = 2, .spp = 2, .bits = 16, .format = SAMPLEFORMAT_INT,
                                     .layout = {.tiled = true}});
#endif
#if APRON_HAVE_FITS
    // (fuzz_fits/compressed-rice.fits, rice-u8.fits, rice-f32-quantized.fits, gzip2-i16.fits and
    // extension-i16.fits, images in the first extension, tile-compressed but the last, were written by astropy
    // (CompImageHDU, ImageHDU): apron writes no compressed FITS. regress-*.fits are files fuzz_fits found to
    // crash cfitsio 4.2, kept as seeds; tests/test_io_fits.cpp checks that each is refused.)
    WriteOptions cards;
    cards.metadata.fits_cards = {"OBJECT  = 'seed    '", "CRPIX1  =                  1.5", "BLANK   =                    0",
                                 "HISTORY  a seed", "LONGSTR = 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx&'",
                                 "CONTINUE  'yy'"};
    put("fuzz_fits", "u8.fits", encode_image(ImageFormat::fits, random_image(3, 2, 1, PixelType::u8, 16), "", cards));
    put("fuzz_fits", "u16.fits", encode_image(ImageFormat::fits, random_image(2, 3, 1, PixelType::u16, 17), ""));
    Image nan_f32 = random_image(4, 2, 1, PixelType::f32, 18);
    nan_f32.row<float>(1)[2] = std::numeric_limits<float>::quiet_NaN();
    put("fuzz_fits", "f32.fits", encode_image(ImageFormat::fits, nan_f32.view(), ""));
    {
        ScratchDir fits_dir;
        const Image a = random_image(2, 2, 1, PixelType::u16, 19), b = random_image(2, 2, 1, PixelType::u16, 20);
        const std::vector<ConstImageView> planes = {a.view(), b.view()};
        write_pages(fits_dir.file("cube.fits"), planes);
        const std::string cube = read_text(fits_dir.file("cube.fits"));
        put("fuzz_fits", "cube.fits", ByteVec(cube.begin(), cube.end()));
    }
#endif
}

}  // namespace
}  // namespace apron::iotest
