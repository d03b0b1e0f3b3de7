// PNG, JPEG and TIFF details. The PNG files below were made by a few lines of Python (zlib + CRC, no
// libpng), so they check our reader against the PNG specification rather than against our own writer;
// the TIFF files are written with libtiff directly in every layout our writer does not produce
// (tiles, separate planes, big-endian, other compressions).
#include <algorithm>
#include <cstdlib>
#include <fstream>

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
#endif
}

}  // namespace
}  // namespace apron::iotest
