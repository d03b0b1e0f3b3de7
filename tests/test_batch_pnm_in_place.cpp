// The batch's binary PNM fast path (batch/pnm_in_place.hpp) against the codecs it stands in for: the view
// of the file's bytes equals decode_image, and the file written from an image's rows equals encode_image,
// byte for byte; the CRC taken piece by piece equals the CRC of the whole file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/io.hpp"
#include "batch/manifest.hpp"
#include "batch/pnm_in_place.hpp"
#include "io/file_io.hpp"
#include "test_support.hpp"

namespace apron::batch {
namespace {

std::vector<std::uint8_t> file_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("apron-pnm-in-place-" + name)).string();
}

struct Case {
    int w, h, c;
    PixelType type;
};
const Case cases[] = {{1, 1, 1, PixelType::u8}, {17, 9, 1, PixelType::u8}, {33, 7, 3, PixelType::u8},
                      {1, 1, 3, PixelType::u16}, {19, 11, 1, PixelType::u16}, {64, 5, 3, PixelType::u16}};

TEST(BatchPnmInPlace, TheViewOfTheBytesIsTheDecodedImage) {
    unsigned seed = 1;
    for (const Case& c : cases) {
        const Image img = test::random_image(c.w, c.h, c.c, c.type, seed++);
        std::vector<std::uint8_t> bytes = encode_image(ImageFormat::pnm, img.view(), "x.pnm");
        const Image want = decode_image(bytes, "x.pnm");
        const std::optional<ImageView> got = pnm_in_place(bytes, "x.pnm", {});
        ASSERT_TRUE(got);
        EXPECT_EQ(got->shape, want.shape());
        EXPECT_TRUE(test::identical(as_const(*got), want.view())) << c.w << "x" << c.h << "x" << c.c;
        EXPECT_TRUE(test::identical(as_const(*got), img.view()));
    }
}

TEST(BatchPnmInPlace, OtherFilesAreLeftToTheDecoder) {
    const Image img = test::random_image(5, 4, 1, PixelType::u8, 3);
    WriteOptions ascii;
    ascii.pnm_ascii = true;
    std::vector<std::uint8_t> plain = encode_image(ImageFormat::pnm, img.view(), "x.pgm", ascii);
    EXPECT_FALSE(pnm_in_place(plain, "x.pgm", {}));
    const Image f = test::random_image(5, 4, 1, PixelType::f32, 4);
    std::vector<std::uint8_t> pfm = encode_image(ImageFormat::pfm, f.view(), "x.pfm");
    EXPECT_FALSE(pnm_in_place(pfm, "x.pfm", {}));
    std::vector<std::uint8_t> png = encode_image(ImageFormat::png, img.view(), "x.png");
    EXPECT_FALSE(pnm_in_place(png, "x.png", {}));
    std::vector<std::uint8_t> empty;
    EXPECT_FALSE(pnm_in_place(empty, "x.pgm", {}));
}

TEST(BatchPnmInPlace, BadFilesFailAsTheDecoderFailsThem) {
    const Image img = test::random_image(9, 6, 1, PixelType::u8, 5);
    std::vector<std::uint8_t> bytes = encode_image(ImageFormat::pnm, img.view(), "x.pgm");
    std::vector<std::uint8_t> cut(bytes.begin(), bytes.end() - 1);
    EXPECT_THROW(decode_image(cut, "cut.pgm"), Error);
    EXPECT_FALSE(pnm_in_place(cut, "cut.pgm", {}));  // left to the decoder, whose words the batch reports
    // A sample above the file's maxval is refused, as decode_image refuses it.
    std::string small = "P5\n2 1\n100\n";
    small += char(50);
    small += char(101);
    std::vector<std::uint8_t> over(small.begin(), small.end());
    EXPECT_THROW(decode_image(over, "over.pgm"), Error);
    EXPECT_THROW(pnm_in_place(over, "over.pgm", {}), Error);
    over.back() = 99;
    const std::optional<ImageView> ok = pnm_in_place(over, "ok.pgm", {});
    ASSERT_TRUE(ok);
    EXPECT_TRUE(test::identical(as_const(*ok), decode_image(over, "ok.pgm").view()));
}

TEST(BatchPnmInPlace, WrittenFromTheRowsAsTheEncoderWritesIt) {
    unsigned seed = 11;
    for (const Case& c : cases) {
        const Image img = test::random_image(c.w + 4, c.h + 2, c.c, c.type, seed++);
        // A view inside a larger image: rows with a pitch beyond their bytes.
        const ConstImageView part = img.view().roi(2, 1, c.w, c.h);
        const std::vector<std::uint8_t> want = encode_image(ImageFormat::pnm, part, "x.pnm");
        Image scratch(img.shape());  // the writer swaps 16-bit samples in place: a copy of its own
        for (int y = 0; y < img.height(); ++y)
            std::memcpy(scratch.view().row_bytes(y), img.view().row_bytes(y), img.shape().row_bytes());
        const std::string path = temp_path("out.pnm");
        std::uint32_t crc = crc32_start();
        std::size_t seen = 0;
        const std::uint64_t size = write_pnm_in_place(path, scratch.view().roi(2, 1, c.w, c.h), [&](std::span<const std::uint8_t> chunk) {
            crc = crc32_update(crc, chunk);
            seen += chunk.size();
        });
        const std::vector<std::uint8_t> got = file_bytes(path);
        std::filesystem::remove(path);
        EXPECT_EQ(got, want) << c.w << "x" << c.h << "x" << c.c;
        EXPECT_EQ(size, want.size());
        EXPECT_EQ(seen, want.size());
        EXPECT_EQ(crc, crc32_of(want));
        EXPECT_TRUE(writes_pnm_in_place(path, {}, part.shape));
    }
    WriteOptions ascii;
    ascii.pnm_ascii = true;
    EXPECT_FALSE(writes_pnm_in_place("x.pgm", ascii, ImageShape{4, 4, 1, PixelType::u8}));
    EXPECT_FALSE(writes_pnm_in_place("x.png", {}, ImageShape{4, 4, 1, PixelType::u8}));
    EXPECT_FALSE(writes_pnm_in_place("x.pgm", {}, ImageShape{4, 4, 4, PixelType::u8}));
    EXPECT_FALSE(writes_pnm_in_place("x.pgm", {}, ImageShape{4, 4, 1, PixelType::f32}));
}

TEST(BatchPnmInPlace, AFileIsReadWholeInPiecesInOrder) {
    const std::string path = temp_path("pieces.bin");
    std::vector<std::uint8_t> want(100003);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = std::uint8_t(i * 31 + i / 7);
    {
        std::ofstream f(path, std::ios::binary);
        f.write(reinterpret_cast<const char*>(want.data()), std::streamsize(want.size()));
    }
    const io::InputFile file(path);
    std::vector<std::uint8_t> got(file.size());
    std::uint32_t crc = crc32_start();
    std::size_t pieces = 0, at = 0;
    file.read_all_into(got, [&](std::span<const std::uint8_t> piece) {
        EXPECT_EQ(piece.data(), got.data() + at);  // in order, each right after it is read
        at += piece.size();
        crc = crc32_update(crc, piece);
        ++pieces;
    }, 4096);
    std::filesystem::remove(path);
    EXPECT_EQ(got, want);
    EXPECT_EQ(pieces, (want.size() + 4095) / 4096);
    EXPECT_EQ(crc, crc32_of(want));
    std::vector<std::uint8_t> wrong(7);
    EXPECT_THROW(file.read_all_into(wrong, {}), Error);
}

}  // namespace
}  // namespace apron::batch
