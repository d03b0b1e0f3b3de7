// PNM (P1-P7) and PFM details, checked against hand-written files: comments, plain (ASCII) samples,
// maxval handling, 16-bit big-endian samples, PFM byte orders and its bottom-to-top rows.
#include <bit>
#include <cstring>

#include "test_io_support.hpp"

namespace apron::iotest {
namespace {

TEST(Pnm, CommentsWhereverWhitespaceIsAllowed) {
    const Image img = decode_image(bytes("P2\n# made by hand\n3 # width\n# height next\n2\n9#maxval\n"
                                         "1 2 3\n# a comment between rows\n4 5\t\t6\n"),
                                   "c.pgm");
    EXPECT_EQ(img.shape(), (ImageShape{3, 2, 1, PixelType::u8}));
    EXPECT_EQ(pixels_of<std::uint8_t>(img), (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6}));

    const Image bin = decode_image(concat(bytes("P5 #c\n2 1 #c\n255\n"), {7, 200}), "c.pgm");
    EXPECT_EQ(pixels_of<std::uint8_t>(bin), (std::vector<std::uint8_t>{7, 200}));
    // Right after the maxval, a comment and its newline together are the one separating whitespace.
    const Image tight = decode_image(concat(bytes("P5 2 1 255# last\n"), {35, 10}), "c.pgm");
    EXPECT_EQ(pixels_of<std::uint8_t>(tight), (std::vector<std::uint8_t>{35, 10}));
}

TEST(Pnm, PlainAndBinaryColour) {
    const Image p3 = decode_image(bytes("P3 2 1 255  10 20 30  40 50 60"), "c.ppm");
    EXPECT_EQ(p3.shape(), (ImageShape{2, 1, 3, PixelType::u8}));
    EXPECT_EQ(pixels_of<std::uint8_t>(p3), (std::vector<std::uint8_t>{10, 20, 30, 40, 50, 60}));
    const Image p6 = decode_image(concat(bytes("P6\n1 2\n255\n"), {1, 2, 3, 4, 5, 6}), "c.ppm");
    EXPECT_EQ(p6.shape(), (ImageShape{1, 2, 3, PixelType::u8}));
    EXPECT_EQ(pixels_of<std::uint8_t>(p6), (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6}));
}

TEST(Pnm, SixteenBitSamplesAreBigEndianInTheFile) {
    const Image img = decode_image(concat(bytes("P5\n2 1\n65535\n"), {0x12, 0x34, 0xAB, 0xCD}), "w.pgm");
    EXPECT_EQ(img.type(), PixelType::u16);
    EXPECT_EQ(pixels_of<std::uint16_t>(img), (std::vector<std::uint16_t>{0x1234, 0xABCD}));

    Image src(2, 1, 1, PixelType::u16);
    src.row<std::uint16_t>(0)[0] = 0x0102;
    src.row<std::uint16_t>(0)[1] = 0xFFFE;
    EXPECT_EQ(encode_image(ImageFormat::pnm, src, "w.pgm"), concat(bytes("P5\n2 1\n65535\n"), {1, 2, 0xFF, 0xFE}));
}

TEST(Pnm, SamplesKeepTheirValuesWhateverTheMaxval) {
    // maxval <= 255 gives u8, larger gives u16; values are not rescaled to the type's range.
    const Image u8 = decode_image(concat(bytes("P5 2 1 100\n"), {0, 100}), "m.pgm");
    EXPECT_EQ(u8.type(), PixelType::u8);
    EXPECT_EQ(pixels_of<std::uint8_t>(u8), (std::vector<std::uint8_t>{0, 100}));
    const Image u16 = decode_image(bytes("P2 2 1 4095 4095 256"), "m.pgm");
    EXPECT_EQ(u16.type(), PixelType::u16);
    EXPECT_EQ(pixels_of<std::uint16_t>(u16), (std::vector<std::uint16_t>{4095, 256}));
    const Image u16bin = decode_image(concat(bytes("P5 1 1 256\n"), {1, 0}), "m.pgm");
    EXPECT_EQ(pixels_of<std::uint16_t>(u16bin), (std::vector<std::uint16_t>{256}));
}

TEST(Pnm, WritesP5P6WithFullMaxval) {
    Image g(1, 1, 1, PixelType::u8);
    g.row<std::uint8_t>(0)[0] = 9;
    EXPECT_EQ(encode_image(ImageFormat::pnm, g, "g.pgm"), concat(bytes("P5\n1 1\n255\n"), {9}));
    WriteOptions ascii;
    ascii.pnm_ascii = true;
    Image rgb(2, 1, 3, PixelType::u8);
    for (int i = 0; i < 6; ++i) rgb.row<std::uint8_t>(0)[i] = std::uint8_t(i * 50);
    EXPECT_EQ(encode_image(ImageFormat::pnm, rgb, "c.ppm", ascii), bytes("P3\n2 1\n255\n0 50 100 150 200 250\n"));
}

TEST(Pnm, BitmapsReadAsBlackZeroWhite255) {
    const Image p1 = decode_image(bytes("P1\n# bits\n5 2\n10110\n0 1 0 0 1\n"), "b.pbm");
    EXPECT_EQ(p1.shape(), (ImageShape{5, 2, 1, PixelType::u8}));
    EXPECT_EQ(pixels_of<std::uint8_t>(p1), (std::vector<std::uint8_t>{0, 255, 0, 0, 255, 255, 0, 255, 255, 0}));
    // P4: rows padded to whole bytes, most significant bit first.
    const Image p4 = decode_image(concat(bytes("P4\n10 1\n"), {0b10110000, 0b01000000}), "b.pbm");
    EXPECT_EQ(pixels_of<std::uint8_t>(p4), (std::vector<std::uint8_t>{0, 255, 0, 0, 255, 255, 255, 255, 255, 0}));
}

TEST(Pnm, PamHoldsOneToFourChannels) {
    const Image rgba = decode_image(concat(bytes("P7\nWIDTH 2\nHEIGHT 1\nDEPTH 4\nMAXVAL 255\n"
                                                 "TUPLTYPE RGB_ALPHA\nENDHDR\n"),
                                           {1, 2, 3, 4, 5, 6, 7, 8}),
                                    "a.pam");
    EXPECT_EQ(rgba.shape(), (ImageShape{2, 1, 4, PixelType::u8}));
    EXPECT_EQ(pixels_of<std::uint8_t>(rgba), (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
    const Image ga = decode_image(
        concat(bytes("P7\nWIDTH 1\nHEIGHT 1\nDEPTH 2\nMAXVAL 65535\nENDHDR\n"), {0x01, 0x02, 0xFF, 0x00}), "a.pam");
    EXPECT_EQ(pixels_of<std::uint16_t>(ga), (std::vector<std::uint16_t>{0x0102, 0xFF00}));
}

// PFM bytes of a float in either byte order.
ByteVec float_bytes(std::initializer_list<float> values, bool little) {
    ByteVec out;
    for (float v : values) {
        std::uint32_t u = std::bit_cast<std::uint32_t>(v);
        for (int i = 0; i < 4; ++i) {
            const int shift = little ? 8 * i : 8 * (3 - i);
            out.push_back(std::uint8_t(u >> shift));
        }
    }
    return out;
}

TEST(Pfm, LittleEndianRowsBottomToTop) {
    // File rows: bottom row (3, 4) first, then the top row (1, 2).
    const Image img = decode_image(concat(bytes("Pf\n2 2\n-1.0\n"), float_bytes({3, 4, 1, 2}, true)), "l.pfm");
    EXPECT_EQ(img.shape(), (ImageShape{2, 2, 1, PixelType::f32}));
    EXPECT_EQ(pixels_of<float>(img), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Pfm, BigEndianColourAndAnyScaleMagnitude) {
    const Image img =
        decode_image(concat(bytes("PF\n1 2\n2.5\n"), float_bytes({-1.5f, 0, 7, 0.25f, 1e6f, -3}, false)), "b.pfm");
    EXPECT_EQ(img.shape(), (ImageShape{1, 2, 3, PixelType::f32}));
    EXPECT_EQ(pixels_of<float>(img), (std::vector<float>{0.25f, 1e6f, -3, -1.5f, 0, 7}));
}

TEST(Pfm, WritesLittleEndianBottomRowFirst) {
    Image src(1, 2, 1, PixelType::f32);
    src.row<float>(0)[0] = 1.0f;
    src.row<float>(1)[0] = -2.0f;
    EXPECT_EQ(encode_image(ImageFormat::pfm, src, "o.pfm"), concat(bytes("Pf\n1 2\n-1\n"), float_bytes({-2, 1}, true)));
}

}  // namespace
}  // namespace apron::iotest
