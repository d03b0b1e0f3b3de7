// Files and requests that must be refused: each test is one kind of bad input, and each checks that the
// refusal is an apron::Error with one line naming the file (never a crash, another exception, a huge
// allocation or a partial output file).
#include <fstream>
#include <limits>

#include "test_io_support.hpp"

#if APRON_HAVE_TIFF
#include <tiffio.h>
#endif

namespace apron::iotest {
namespace {

ByteVec cut(ByteVec v, std::size_t keep) {
    v.resize(std::min(keep, v.size()));
    return v;
}

ByteVec encoded(ImageFormat f, int w, int h, int c, PixelType t) {
    return encode_image(f, random_image(w, h, c, t, 42), "source");
}

TEST(ImageIoNegative, EmptyFile) {
    EXPECT_TRUE(decode_fails({}, "empty file"));
    ScratchDir dir;
    std::ofstream(dir.file("empty.png")).close();
    EXPECT_TRUE(fails_naming([&] { read_image(dir.file("empty.png")); }, dir.file("empty.png"), "empty file"));
}

TEST(ImageIoNegative, UnknownMagic) {
    EXPECT_TRUE(decode_fails(bytes("GIF89a\x01\x00\x01\x00"), "unknown image format"));
    EXPECT_TRUE(decode_fails(bytes("P"), "unknown image format"));
    EXPECT_TRUE(decode_fails(bytes("P8\n1 1\n255\n"), "unknown image format"));
}

TEST(ImageIoNegative, MissingOrUnreadableFile) {
    ScratchDir dir;
    EXPECT_TRUE(fails_naming([&] { read_image(dir.file("nope.pgm")); }, dir.file("nope.pgm"), "cannot open"));
    EXPECT_TRUE(fails_naming([&] { read_image(dir.path().string()); }, dir.path().string(), "directory"));
}

TEST(ImageIoNegative, TruncatedPnm) {
    EXPECT_TRUE(decode_fails(concat(bytes("P5\n4 4\n255\n"), {1, 2, 3}), "truncated"));
    EXPECT_TRUE(decode_fails(concat(bytes("P5\n2 1\n65535\n"), {1, 2, 3}), "truncated"));
    EXPECT_TRUE(decode_fails(bytes("P2 3 1 255 1 2"), "truncated"));
    EXPECT_TRUE(decode_fails(bytes("P3 1 1 255 1 2 "), "truncated"));
    EXPECT_TRUE(decode_fails(bytes("P1 3 1 1 0"), "truncated"));
    EXPECT_TRUE(decode_fails(concat(bytes("P4 9 2\n"), {0, 0, 0}), "truncated"));
    EXPECT_TRUE(decode_fails(bytes("P5\n4"), "truncated"));
    EXPECT_TRUE(decode_fails(bytes("P6\n4 4\n255"), "truncated"));
    EXPECT_TRUE(decode_fails(bytes("P7\nWIDTH 1\nHEIGHT 1\n"), "truncated"));
}

TEST(ImageIoNegative, TruncatedPfm) {
    EXPECT_TRUE(decode_fails(concat(bytes("Pf\n2 2\n-1\n"), ByteVec(12, 0)), "truncated"));
    EXPECT_TRUE(decode_fails(bytes("PF\n2 2\n"), "truncated"));
}

TEST(ImageIoNegative, TruncatedPng) {
    const ByteVec png = encoded(ImageFormat::png, 32, 32, 3, PixelType::u8);
    EXPECT_TRUE(decode_fails(cut(png, png.size() / 2), "truncated"));
    EXPECT_TRUE(decode_fails(cut(png, 20), "truncated"));               // inside IHDR
    EXPECT_TRUE(decode_fails(cut(png, png.size() - 12), "truncated"));  // IEND missing
}

TEST(ImageIoNegative, TruncatedJpeg) {
    const ByteVec jpeg = encoded(ImageFormat::jpeg, 64, 64, 3, PixelType::u8);
    EXPECT_TRUE(decode_fails(cut(jpeg, jpeg.size() / 2), "Premature end"));
    EXPECT_TRUE(decode_fails(cut(jpeg, jpeg.size() - 2), "Premature end"));  // only the EOI marker is missing
    EXPECT_TRUE(decode_fails(cut(jpeg, 3), "bad JPEG file"));
}

TEST(ImageIoNegative, TruncatedTiff) {
#if APRON_HAVE_TIFF
    const ByteVec tiff = encoded(ImageFormat::tiff, 64, 64, 3, PixelType::u16);
    EXPECT_TRUE(decode_fails(cut(tiff, tiff.size() / 2), "bad TIFF file"));
    EXPECT_TRUE(decode_fails(cut(tiff, 6), "bad TIFF file"));
#else
    GTEST_SKIP() << "built without libtiff";
#endif
}

TEST(ImageIoNegative, ZeroOrNegativeSize) {
    EXPECT_TRUE(decode_fails(bytes("P5\n0 4\n255\n"), "is empty"));
    EXPECT_TRUE(decode_fails(bytes("P2\n4 0\n255\n"), "is empty"));
    EXPECT_TRUE(decode_fails(bytes("P5\n-3 4\n255\n"), "non-negative integer"));
    EXPECT_TRUE(decode_fails(bytes("Pf\n3 0\n-1\n"), "is empty"));
    EXPECT_TRUE(decode_fails(bytes("PF\n3 -2\n-1\n"), "non-negative integer"));
}

TEST(ImageIoNegative, SizeOverMaxPixels) {
    ReadOptions small;
    small.max_pixels = 1000;
    EXPECT_TRUE(decode_fails(concat(bytes("P5\n100 100\n255\n"), ByteVec(10000, 0)), "--max-pixels", small));
    EXPECT_TRUE(decode_fails(encoded(ImageFormat::pfm, 40, 30, 1, PixelType::f32), "--max-pixels", small));
    EXPECT_TRUE(decode_fails(encoded(ImageFormat::png, 40, 30, 1, PixelType::u8), "--max-pixels", small));
    EXPECT_TRUE(decode_fails(encoded(ImageFormat::jpeg, 40, 30, 1, PixelType::u8), "--max-pixels", small));
#if APRON_HAVE_TIFF
    EXPECT_TRUE(decode_fails(encoded(ImageFormat::tiff, 40, 30, 1, PixelType::u8), "--max-pixels", small));
#endif
    small.max_pixels = 1200;  // exactly at the limit is fine
    EXPECT_NO_THROW(decode_image(encoded(ImageFormat::png, 40, 30, 1, PixelType::u8), "ok.png", small));
}

TEST(ImageIoNegative, SizeArithmeticOverflow) {
    EXPECT_TRUE(decode_fails(bytes("P5\n4000000000 4000000000\n255\n"), "too large"));
    EXPECT_TRUE(decode_fails(bytes("PF\n4000000000 4000000000\n-1\n"), "too large"));
    EXPECT_TRUE(decode_fails(bytes("P5\n99999999999999999999 1\n255\n"), "too large"));
    // Even with no pixel limit at all, a tiny file promising 2^31 x 2^31 pixels is refused before allocating.
    ReadOptions unlimited;
    unlimited.max_pixels = std::numeric_limits<std::uint64_t>::max();
    EXPECT_TRUE(decode_fails(bytes("P6\n2147483647 2147483647\n65535\n"), "truncated", unlimited));
    EXPECT_TRUE(decode_fails(bytes("P3\n2147483647 2147483647\n65535\n1"), "truncated", unlimited));
    EXPECT_TRUE(decode_fails(bytes("PF\n2147483647 2147483647\n-1\n"), "truncated", unlimited));
}

TEST(ImageIoNegative, MaxvalOutOfRange) {
    EXPECT_TRUE(decode_fails(bytes("P5 1 1 0\n\x01"), "maxval 0"));
    EXPECT_TRUE(decode_fails(bytes("P2 1 1 65536\n1"), "maxval 65536"));
    EXPECT_TRUE(decode_fails(bytes("P7\nWIDTH 1\nHEIGHT 1\nDEPTH 1\nMAXVAL 70000\nENDHDR\n\x01\x01"), "maxval 70000"));
}

TEST(ImageIoNegative, SampleAboveMaxval) {
    EXPECT_TRUE(decode_fails(bytes("P2 2 1 10 5 11"), "larger than the maxval"));
    EXPECT_TRUE(decode_fails(concat(bytes("P5 2 1 100\n"), {5, 200}), "larger than the maxval"));
    EXPECT_TRUE(decode_fails(concat(bytes("P5 1 1 1000\n"), {0x03, 0xE9}), "larger than the maxval"));
}

TEST(ImageIoNegative, MalformedNetpbmHeader) {
    EXPECT_TRUE(decode_fails(bytes("P5 x 1 255\n\x01"), "non-negative integer"));
    EXPECT_TRUE(decode_fails(bytes("P5 1 1 255x\x01"), "whitespace"));
    EXPECT_TRUE(decode_fails(bytes("P7\nWIDTH 1\nHEIGHT 1\nDEPTH 5\nMAXVAL 255\nENDHDR\n12345"), "depth 5"));
    EXPECT_TRUE(decode_fails(bytes("P7\nWIDTH 1\nHEIGHT 1\nCOLOUR 1\nENDHDR\n1"), "unknown PAM header line"));
    EXPECT_TRUE(decode_fails(bytes("P7\nWIDTH 1\nHEIGHT 1\nENDHDR\n1"), "needs WIDTH"));
    EXPECT_TRUE(decode_fails(bytes("P1 2 1 1 2"), "'0' or '1'"));
}

TEST(ImageIoNegative, BadPfmScale) {
    const ByteVec pixel(4, 0);
    for (const char* scale : {"0", "-0.0", "nan", "inf", "-inf", "1e999", "abc", "1.0x"})
        EXPECT_TRUE(decode_fails(concat(bytes(std::string("Pf\n1 1\n") + scale + "\n"), pixel), "scale")) << scale;
}

TEST(ImageIoNegative, CorruptPngCrc) {
    ByteVec png = encoded(ImageFormat::png, 16, 16, 1, PixelType::u8);
    const std::uint8_t idat[] = {'I', 'D', 'A', 'T'};
    const auto at = std::search(png.begin(), png.end(), std::begin(idat), std::end(idat));
    ASSERT_NE(at, png.end());
    // Damage the stored CRC itself, so that the data still inflates and only the check can notice.
    const std::size_t length = std::size_t(at[-4]) << 24 | std::size_t(at[-3]) << 16 | at[-2] << 8 | at[-1];
    at[4 + std::ptrdiff_t(length)] ^= 0x55;
    EXPECT_TRUE(decode_fails(png, "CRC"));
    ByteVec header = encoded(ImageFormat::png, 16, 16, 1, PixelType::u8);
    header[8 + 8 + 13] ^= 1;  // the IHDR chunk's CRC
    EXPECT_TRUE(decode_fails(header, "CRC"));
}

TEST(ImageIoNegative, CmykJpeg) {
    // SOI, SOF0 with four components (no Adobe marker: libjpeg takes it as CMYK), SOS header.
    const ByteVec jpeg = {0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x14, 0x08, 0x00, 0x08, 0x00, 0x08, 0x04, 0x01, 0x11, 0x00,
                          0x02, 0x11, 0x00, 0x03, 0x11, 0x00, 0x04, 0x11, 0x00, 0xFF, 0xDA, 0x00, 0x0E, 0x04, 0x01,
                          0x00, 0x02, 0x00, 0x03, 0x00, 0x04, 0x00, 0x00, 0x3F, 0x00, 0x00, 0x00, 0xFF, 0xD9};
    EXPECT_TRUE(decode_fails(jpeg, "CMYK"));
}

TEST(ImageIoNegative, UnsupportedTiffSamples) {
#if APRON_HAVE_TIFF
    ScratchDir dir;
    const std::string path = dir.file("s16.tif");
    TIFF* tif = TIFFOpen(path.c_str(), "w");
    ASSERT_NE(tif, nullptr);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 2);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 1);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 32);
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_INT);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    std::int32_t row[2] = {-1, 1};  // 32-bit integers would not all be exact in f32
    ASSERT_EQ(TIFFWriteEncodedStrip(tif, 0, row, sizeof row), tmsize_t(sizeof row));
    TIFFClose(tif);
    EXPECT_TRUE(fails_naming([&] { read_image(path); }, path, "32-bit signed"));
#else
    GTEST_SKIP() << "built without libtiff";
#endif
}

TEST(ImageIoNegative, TypeTheFormatCannotStore) {
    ScratchDir dir;
    struct Case {
        const char* name;
        int c;
        PixelType t;
        const char* hint;
    };
    for (const Case& k : {Case{"f.png", 1, PixelType::f32, ".pfm"}, Case{"u.jpg", 1, PixelType::u16, ".png"},
                          Case{"a.jpg", 2, PixelType::u8, ".png"}, Case{"r.ppm", 4, PixelType::u8, ".png"},
                          Case{"f.pgm", 1, PixelType::f32, ".pfm"}, Case{"b.pfm", 1, PixelType::u8, "f32"},
                          Case{"c.pfm", 4, PixelType::f32, ".tif"}}) {
        const std::string path = dir.file(k.name);
        EXPECT_TRUE(fails_naming([&] { write_image(path, random_image(3, 3, k.c, k.t, 1)); }, path, k.hint));
        EXPECT_FALSE(std::filesystem::exists(path)) << path;
    }
    EXPECT_TRUE(dir.temp_files().empty());
}

TEST(ImageIoNegative, UnknownExtensionOnWrite) {
    const Image img = random_image(2, 2, 1, PixelType::u8, 1);
    EXPECT_TRUE(fails_naming([&] { write_image("out.bmp", img); }, "out.bmp", "unknown image file extension '.bmp'"));
    EXPECT_TRUE(fails_naming([&] { write_image("dir.png/out", img); }, "dir.png/out", "no file extension"));
}

TEST(ImageIoNegative, BadWriterOptions) {
    const Image img = random_image(2, 2, 1, PixelType::u8, 1);
    WriteOptions q;
    q.jpeg_quality = 0;
    EXPECT_TRUE(fails_naming([&] { encode_image(ImageFormat::jpeg, img, "q.jpg", q); }, "q.jpg", "quality 0"));
    WriteOptions z;
    z.png_compression = 10;
    EXPECT_TRUE(
        fails_naming([&] { encode_image(ImageFormat::png, img, "z.png", z); }, "z.png", "compression level 10"));
}

TEST(ImageIoNegative, ViewsThatCannotBeWritten) {
    const Image img = random_image(2, 2, 1, PixelType::u8, 1);
    ConstImageView device = img.view();
    device.memory = Memory::device;
    EXPECT_TRUE(fails_naming([&] { encode_image(ImageFormat::png, device, "d.png"); }, "d.png", "device memory"));
    EXPECT_TRUE(fails_naming([&] { encode_image(ImageFormat::png, ConstImageView{}, "e.png"); }, "e.png", "empty"));
}

TEST(ImageIoNegative, UnwritableDirectoryLeavesNothing) {
    ScratchDir dir;
    const Image img = random_image(4, 4, 3, PixelType::u8, 1);
    const std::string missing = dir.file("no-such-dir/out.png");
    EXPECT_TRUE(fails_naming([&] { write_image(missing, img); }, missing, "temporary file"));
    std::ofstream(dir.file("plain-file")).close();
    const std::string under_file = dir.file("plain-file/out.png");
    EXPECT_TRUE(fails_naming([&] { write_image(under_file, img); }, under_file, "temporary file"));
    // A directory at the target is refused before anything is written.
    std::filesystem::create_directory(dir.file("taken.png"));
    EXPECT_TRUE(fails_naming([&] { write_image(dir.file("taken.png"), img); }, dir.file("taken.png"),
                             "is a directory; give a file name such as " + dir.file("taken.png") + "/name.png"));
    EXPECT_TRUE(std::filesystem::is_empty(dir.file("taken.png")));
    EXPECT_TRUE(dir.temp_files().empty());
}

}  // namespace
}  // namespace apron::iotest
