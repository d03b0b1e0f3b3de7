// The memory budget of reading (ReadOptions::memory_budget), checked from the header before any pixel is
// allocated, for every format; decompression bombs; decoders holding no second image-sized copy;
// probe_image against decode_image; 16-bit PNM samples in either byte order.
#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include <jpeglib.h>  // after cstdio: it uses size_t and FILE without including them

#include "apron/memory.hpp"
#include "test_io_hostile_support.hpp"

namespace apron::iotest {
namespace {

std::uint64_t padded_bytes(std::uint64_t w, std::uint64_t h, int c, PixelType t) {
    return (w * std::uint64_t(c) * bytes_per_sample(t) + 63) / 64 * 64 * h;
}

ReadOptions with_budget(std::uint64_t bytes) {
    ReadOptions o;
    o.memory_budget = bytes;
    return o;
}

TEST(MemoryBudget, PngBombIsRefusedFromItsHeader) {
    const ByteVec png = png_declaring(30000, 30000);  // about 60 bytes
    const std::string expected = "bomb.png: decoding 30000x30000 1-channel u8 needs 859 MiB (file " +
                                 format_bytes(png.size()) +
                                 " + pixels 859 MiB), over the memory budget of 512 MiB (raise it with --memory)";
    const ReadOptions o = with_budget(std::uint64_t(512) << 20);
    EXPECT_EQ(in_child([&] { decode_image(png, "bomb.png", o); }), "error: " + expected);
    EXPECT_EQ(in_child([&] { probe_image(png, "bomb.png", o); }), "error: " + expected);
    ScratchDir dir;
    write_bytes(dir.file("bomb.png"), png);
    EXPECT_EQ(in_child([&] { read_image(dir.file("bomb.png"), o); }), "error: " + dir.path().string() + "/" + expected);
    EXPECT_EQ(in_child([&] { probe_image(dir.file("bomb.png"), o); }), "error: " + dir.path().string() + "/" + expected);
}

TEST(MemoryBudget, SixteenBitRgbaPngCountsEightBytesAPixel) {
    const ByteVec png = png_declaring(16384, 16384, 16, 6);
    const ReadOptions o = with_budget(std::uint64_t(1) << 30);
    EXPECT_TRUE(decode_fails(png, "decoding 16384x16384 4-channel u16 needs 2.00 GiB", o));
    EXPECT_TRUE(fails_naming([&] { probe_image(png, "p.png", o); }, "p.png", "pixels 2.00 GiB), over the memory budget of 1.00 GiB"));
    // Just over a budget that rounds alike: the message gives both in bytes.
    const std::uint64_t needed = png.size() + (std::uint64_t(2) << 30);
    EXPECT_TRUE(decode_fails(png,
                             "needs " + std::to_string(needed) + " bytes (file " + format_bytes(png.size()) +
                                 " + pixels 2.00 GiB), over the memory budget of 2147483648 bytes (raise it with --memory)",
                             with_budget(std::uint64_t(2) << 30)));
}

TEST(MemoryBudget, FileLargerThanTheBudgetIsRefusedBeforeReading) {
    ScratchDir dir;
    write_bytes(dir.file("big.pgm"), concat(bytes("P5\n1024 1024\n255\n"), ByteVec(1 << 20, 7)));
    const std::string expected = dir.file("big.pgm") + ": the file is 1.00 MiB, over the memory budget of 1000 bytes (raise it with --memory)";
    EXPECT_EQ(in_child([&] { read_image(dir.file("big.pgm"), with_budget(1000)); }), "error: " + expected);
    EXPECT_EQ(in_child([&] { probe_image(dir.file("big.pgm"), with_budget(1000)); }), "error: " + expected);
}

// The budget is exact for every format: the file plus the padded pixels fit, one byte less does not.
TEST(MemoryBudget, EveryFormatCountsFileAndPixelsExactly) {
    std::vector<ImageFormat> formats = {ImageFormat::pnm, ImageFormat::pfm, ImageFormat::png, ImageFormat::jpeg};
#if APRON_HAVE_TIFF
    formats.push_back(ImageFormat::tiff);
#endif
    for (ImageFormat f : formats)
        for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
            for (int c = 1; c <= 4; ++c) {
                if (!can_store(f, {45, 7, c, t})) continue;
                SCOPED_TRACE(std::string(to_string(f)) + " " + to_string(t) + " x" + std::to_string(c));
                const ByteVec file = encode_image(f, random_image(45, 7, c, t, 3), "x");
                const std::uint64_t needed = file.size() + padded_bytes(45, 7, c, t);
                EXPECT_NO_THROW(decode_image(file, "x", with_budget(needed)));
                EXPECT_NO_THROW(probe_image(file, "x", with_budget(needed)));
                EXPECT_TRUE(decode_fails(file, "over the memory budget of", with_budget(needed - 1)));
                EXPECT_TRUE(fails_naming([&] { probe_image(file, "x", with_budget(needed - 1)); }, "x",
                                         "over the memory budget of"));
            }
}

#if APRON_HAVE_TIFF
// A deflate TIFF of 64 MiB of zeros in one strip: the file is tiny, the strip is the whole image.
TEST(MemoryBudget, DeflateTiffBombIsRefusedAndDecodesWithoutASecondCopy) {
    ScratchDir dir;
    write_zero_tiff(dir.file("bomb.tif"), 8192, 8192, 1, 8192);
    const ByteVec tif = file_bytes(dir.file("bomb.tif"));
    ASSERT_LT(tif.size(), std::size_t(1) << 20);
    EXPECT_TRUE(decode_fails(tif, "decoding 8192x8192 1-channel u8 needs 64.", with_budget(std::uint64_t(32) << 20)));
    EXPECT_TRUE(decode_fails(tif, " + pixels 64.0 MiB), over the memory budget of 32.0 MiB (raise it with --memory)",
                             with_budget(std::uint64_t(32) << 20)));
    // One image-sized allocation only: 64 MiB of pixels within 90 MiB of new address space (the strip
    // used to be decoded whole into a buffer of its own, and then copied).
    EXPECT_EQ(in_child([&] { decode_image(tif, "bomb.tif"); }, 60, std::uint64_t(90) << 20), "ok");
}

TEST(MemoryBudget, TiledTiffCountsItsTileBuffer) {
    ScratchDir dir;
    write_zero_tiff(dir.file("tiled.tif"), 1000, 1000, 1, 0, 1024);  // one tile, larger than the image
    const ByteVec tif = file_bytes(dir.file("tiled.tif"));
    const std::uint64_t pixels = padded_bytes(1000, 1000, 1, PixelType::u8), tile = 1024 * 1024;
    EXPECT_NO_THROW(decode_image(tif, "t.tif", with_budget(tif.size() + pixels + tile)));
    EXPECT_TRUE(decode_fails(tif, " + decoder buffers 1.00 MiB), over", with_budget(tif.size() + pixels + tile - 1)));
}
#endif

TEST(MemoryBudget, SixteenBitPngDecodesWithoutASecondCopy) {
    Image zeros(2048, 2048, 4, PixelType::u16);  // 32 MiB
    for (int y = 0; y < zeros.height(); ++y) std::memset(zeros.view().row_bytes(y), 0, zeros.shape().row_bytes());
    const ByteVec png = encode_image(ImageFormat::png, zeros, "x");
    EXPECT_EQ(in_child([&] { decode_image(png, "x.png"); }, 60, std::uint64_t(48) << 20), "ok");
}

ByteVec jpeg_of(int w, int h, bool progressive) {
    jpeg_compress_struct c{};
    jpeg_error_mgr err{};
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    unsigned char* out = nullptr;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &out, &size);
    c.image_width = JDIMENSION(w);
    c.image_height = JDIMENSION(h);
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);  // 2x2 luma, 1x1 chroma sampling
    if (progressive) jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    std::vector<JSAMPLE> row(std::size_t(w) * 3, 128);
    while (c.next_scanline < c.image_height) {
        JSAMPROW r = row.data();
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    ByteVec v(out, out + size);
    std::free(out);
    jpeg_destroy_compress(&c);
    return v;
}

// A progressive JPEG is decoded through whole-image coefficient arrays: for 256x256 with 2x2 luma
// sampling, 32x32 luma blocks and 16x16 blocks of each chroma, 64 coefficients of 2 bytes each.
TEST(MemoryBudget, ProgressiveJpegCountsItsCoefficients) {
    const std::uint64_t pixels = padded_bytes(256, 256, 3, PixelType::u8);
    const std::uint64_t coefficients = (32 * 32 + 2 * 16 * 16) * 64 * 2;
    const ByteVec progressive = jpeg_of(256, 256, true);
    EXPECT_NO_THROW(decode_image(progressive, "p.jpg", with_budget(progressive.size() + pixels + coefficients)));
    EXPECT_TRUE(decode_fails(progressive, " + decoder buffers 192 KiB), over",
                             with_budget(progressive.size() + pixels + coefficients - 1)));
    const ByteVec baseline = jpeg_of(256, 256, false);
    EXPECT_NO_THROW(decode_image(baseline, "b.jpg", with_budget(baseline.size() + pixels)));
}

// ---- probe_image ----------------------------------------------------------------------------------------

void expect_probe_matches_decode(const ByteVec& file, const std::string& what) {
    SCOPED_TRACE(what);
    const ImageShape decoded = decode_image(file, "x").shape();
    EXPECT_EQ(probe_image(file, "x"), decoded);
    ScratchDir dir;
    write_bytes(dir.file("probe.img"), file);
    EXPECT_EQ(probe_image(dir.file("probe.img")), decoded);
}

TEST(ProbeImage, MatchesDecodeForEveryFormatTypeAndChannelCount) {
    std::vector<ImageFormat> formats = {ImageFormat::pnm, ImageFormat::pfm, ImageFormat::png, ImageFormat::jpeg};
#if APRON_HAVE_TIFF
    formats.push_back(ImageFormat::tiff);
#endif
    WriteOptions ascii;
    ascii.pnm_ascii = true;
    for (ImageFormat f : formats)
        for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
            for (int c = 1; c <= 4; ++c)
                for (auto [w, h] : {std::pair{1, 1}, std::pair{37, 5}, std::pair{3, 129}}) {
                    if (!can_store(f, {w, h, c, t})) continue;
                    const std::string what = std::string(to_string(f)) + " " + to_string(t) + " x" +
                                             std::to_string(c) + " " + std::to_string(w) + "x" + std::to_string(h);
                    const Image img = random_image(w, h, c, t, unsigned(w * 7 + c));
                    expect_probe_matches_decode(encode_image(f, img, "x"), what);
                    if (f == ImageFormat::pnm) expect_probe_matches_decode(encode_image(f, img, "x", ascii), what + " plain");
                }
}

TEST(ProbeImage, MatchesDecodeForNetpbmKindsAndPfmByteOrders) {
    expect_probe_matches_decode(bytes("P1\n5 2\n10110\n0 1 0 0 1\n"), "P1");
    expect_probe_matches_decode(concat(bytes("P4\n10 1\n"), {0xb0, 0x40}), "P4");
    expect_probe_matches_decode(concat(bytes("P5 2 1 4095\n"), {0x0f, 0xff, 0, 1}), "P5 maxval 4095");
    for (int depth = 1; depth <= 4; ++depth)
        for (int maxval : {255, 65535}) {
            const ByteVec data(std::size_t(3 * 2 * depth * (maxval > 255 ? 2 : 1)), 0);
            expect_probe_matches_decode(
                concat(bytes("P7\nWIDTH 3\nHEIGHT 2\nDEPTH " + std::to_string(depth) + "\nMAXVAL " +
                             std::to_string(maxval) + "\nTUPLTYPE X\nENDHDR\n"),
                       data),
                "P7 depth " + std::to_string(depth));
        }
    expect_probe_matches_decode(concat(bytes("Pf\n1 2\n1.0\n"), {0x3F, 0x80, 0, 0, 0xC0, 0, 0, 0}), "PFM big-endian");
}

#if APRON_HAVE_TIFF
TEST(ProbeImage, MatchesDecodeForTiledAndPlanarTiff) {
    ScratchDir dir;
    write_zero_tiff(dir.file("tiled.tif"), 40, 33, 3, 0, 16);
    expect_probe_matches_decode(file_bytes(dir.file("tiled.tif")), "tiled RGB");
    write_zero_tiff(dir.file("planes.tif"), 40, 33, 4, 5, 0, true);
    expect_probe_matches_decode(file_bytes(dir.file("planes.tif")), "separate planes RGBA");
    write_zero_tiff(dir.file("tiled-planes.tif"), 20, 50, 2, 0, 16, true);
    expect_probe_matches_decode(file_bytes(dir.file("tiled-planes.tif")), "tiled separate planes");
}
#endif

// A JPEG probed from a file is read in chunks: markers larger than a chunk are skipped, not misread.
TEST(ProbeImage, JpegWithLargeApplicationSegments) {
    ByteVec jpeg = encode_image(ImageFormat::jpeg, random_image(33, 17, 3, PixelType::u8, 8), "x");
    ByteVec app = {0xFF, 0xE1, 0xEA, 0x60};  // APP1 of 60000 bytes, length included
    app.resize(60000 + 2, 0x41);
    ByteVec big(jpeg.begin(), jpeg.begin() + 2);  // SOI
    for (int i = 0; i < 3; ++i) big = concat(big, app);
    big.insert(big.end(), jpeg.begin() + 2, jpeg.end());
    expect_probe_matches_decode(big, "JPEG with 180 KB of APP1 segments");
}

// PNG transforms decide the channels: palette -> RGB(A), tRNS -> alpha, 1-bit gray -> 8 bits.
TEST(ProbeImage, PngChannelsAfterTheTransformsFromTheHeaderAlone) {
    auto with_chunks = [](std::uint8_t depth, std::uint8_t color, const std::vector<ByteVec>& chunks) {
        ByteVec png = png_declaring(9, 4, depth, color);
        const std::size_t after_ihdr = 8 + 25;
        ByteVec extra;
        for (const auto& c : chunks) extra = concat(extra, c);
        png.insert(png.begin() + std::ptrdiff_t(after_ihdr), extra.begin(), extra.end());
        return png;
    };
    const ByteVec plte = png_chunk("PLTE", {0, 0, 0, 255, 255, 255});
    EXPECT_EQ(probe_image(with_chunks(8, 3, {plte}), "x"), (ImageShape{9, 4, 3, PixelType::u8}));
    EXPECT_EQ(probe_image(with_chunks(4, 3, {plte, png_chunk("tRNS", {0})}), "x"), (ImageShape{9, 4, 4, PixelType::u8}));
    EXPECT_EQ(probe_image(with_chunks(1, 0, {}), "x"), (ImageShape{9, 4, 1, PixelType::u8}));
    EXPECT_EQ(probe_image(with_chunks(16, 0, {png_chunk("tRNS", {0, 7})}), "x"), (ImageShape{9, 4, 2, PixelType::u16}));
    EXPECT_EQ(probe_image(with_chunks(8, 4, {}), "x"), (ImageShape{9, 4, 2, PixelType::u8}));
}

TEST(ProbeImage, ReadsTheHeaderOnlySoCutPixelDataStillProbes) {
    EXPECT_EQ(probe_image(png_declaring(30000, 30000), "x"), (ImageShape{30000, 30000, 1, PixelType::u8}));
    const ByteVec pgm = concat(bytes("P5\n4000 3000\n65535\n"), {1, 2, 3});
    EXPECT_EQ(probe_image(pgm, "x"), (ImageShape{4000, 3000, 1, PixelType::u16}));
    EXPECT_TRUE(decode_fails(pgm, "truncated"));
    ByteVec jpeg = encode_image(ImageFormat::jpeg, random_image(64, 48, 3, PixelType::u8, 5), "x");
    jpeg.resize(jpeg.size() / 2);
    EXPECT_EQ(probe_image(jpeg, "x"), (ImageShape{64, 48, 3, PixelType::u8}));
    EXPECT_TRUE(decode_fails(jpeg, "bad JPEG file"));
}

// From a path, text headers are parsed from a growing prefix: a long comment, and numbers cut by the
// first prefix (4096 bytes), must read as from the whole file.
TEST(ProbeImage, TextHeadersLongerThanTheFirstPrefix) {
    ScratchDir dir;
    const std::string comment = "#" + std::string(20000, 'c') + "\n";
    write_bytes(dir.file("long.pgm"), concat(bytes("P5\n" + comment + "7 5\n255\n"), ByteVec(35, 1)));
    EXPECT_EQ(probe_image(dir.file("long.pgm")), (ImageShape{7, 5, 1, PixelType::u8}));
    for (std::size_t cut : {4093, 4094, 4095, 4096, 4097}) {
        // "1000" (u16) would read as "10" (u8) if the prefix's end were taken for the number's.
        std::string head = "P2\n3 1\n";
        head += "#" + std::string(cut - head.size() - 2, 'c') + "\n";
        write_bytes(dir.file("cut.pgm"), bytes(head + "1000\n1 2 3\n"));
        EXPECT_EQ(probe_image(dir.file("cut.pgm")), (ImageShape{3, 1, 1, PixelType::u16})) << cut;
        std::string wide = "P3\n";
        wide += "#" + std::string(cut - wide.size() - 2, 'c') + "\n";
        write_bytes(dir.file("cut.ppm"), bytes(wide + "1234 1\n255\n" + std::string(1234 * 3 * 2, '1')));
        EXPECT_EQ(probe_image(dir.file("cut.ppm")), (ImageShape{1234, 1, 3, PixelType::u8})) << cut;
    }
}

TEST(ProbeImage, RefusesWhatDecodingRefuses) {
    ReadOptions small;
    small.max_pixels = 1000;
    const ByteVec png = encode_image(ImageFormat::png, random_image(40, 30, 1, PixelType::u8, 1), "x");
    EXPECT_TRUE(fails_naming([&] { probe_image(png, "x", small); }, "x", "(raise it with --max-pixels)"));
    EXPECT_TRUE(fails_naming([&] { probe_image(bytes("GIF89a"), "x"); }, "x", "unknown image format"));
    EXPECT_TRUE(fails_naming([&] { probe_image(bytes("P5\n0 4\n255\n"), "x"); }, "x", "is empty"));
    EXPECT_TRUE(fails_naming([&] { probe_image(bytes("P5 1 1 70000\n"), "x"); }, "x", "maxval 70000"));
    EXPECT_TRUE(fails_naming([&] { probe_image(bytes("Pf\n2 2\n0\n"), "x"); }, "x", "finite, non-zero"));
    const ByteVec signature_only = bytes("\x89PNG\r\n\x1a\n");
    EXPECT_TRUE(fails_naming([&] { probe_image(signature_only, "x"); }, "x", "bad PNG file: truncated data"));
}

// ---- byte order of 16-bit PNM samples -------------------------------------------------------------------

TEST(PnmByteOrder, LittleEndianSixteenBitFilesAsGenConvWritesThem) {
    ReadOptions little;
    little.pnm_byte_order = ByteOrder::little;
    const ByteVec pgm = concat(bytes("P5\n3 1\n65535\n"), {0x34, 0x12, 0xff, 0x00, 0x00, 0x01});
    EXPECT_EQ(pixels_of<std::uint16_t>(decode_image(pgm, "genconv.pgm", little)),
              (std::vector<std::uint16_t>{0x1234, 0x00ff, 0x0100}));
    EXPECT_EQ(pixels_of<std::uint16_t>(decode_image(pgm, "netpbm.pgm")),
              (std::vector<std::uint16_t>{0x3412, 0xff00, 0x0001}));
    ScratchDir dir;
    write_bytes(dir.file("genconv.pgm"), pgm);
    EXPECT_EQ(pixels_of<std::uint16_t>(read_image(dir.file("genconv.pgm"), little)),
              (std::vector<std::uint16_t>{0x1234, 0x00ff, 0x0100}));

    const ByteVec ppm = concat(bytes("P6 1 1 65535\n"), {1, 0, 2, 0, 3, 0});
    EXPECT_EQ(pixels_of<std::uint16_t>(decode_image(ppm, "x", little)), (std::vector<std::uint16_t>{1, 2, 3}));
    const ByteVec pam = concat(bytes("P7\nWIDTH 1\nHEIGHT 1\nDEPTH 2\nMAXVAL 65535\nENDHDR\n"), {0xcd, 0xab, 0, 1});
    EXPECT_EQ(pixels_of<std::uint16_t>(decode_image(pam, "x", little)), (std::vector<std::uint16_t>{0xabcd, 0x0100}));

    // The maxval applies to the value in the file's byte order; 8-bit files are unaffected.
    EXPECT_NO_THROW(decode_image(concat(bytes("P5 1 1 4095\n"), {0xff, 0x0f}), "x", little));
    EXPECT_TRUE(decode_fails(concat(bytes("P5 1 1 4095\n"), {0x00, 0x10}), "sample value 4096", little));
    EXPECT_EQ(pixels_of<std::uint8_t>(decode_image(concat(bytes("P5 2 1 255\n"), {9, 200}), "x", little)),
              (std::vector<std::uint8_t>{9, 200}));
    // Plain (ASCII) files have no byte order.
    EXPECT_EQ(pixels_of<std::uint16_t>(decode_image(bytes("P2 1 1 65535 4660\n"), "x", little)),
              (std::vector<std::uint16_t>{4660}));
}

}  // namespace
}  // namespace apron::iotest
