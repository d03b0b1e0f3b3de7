// Image files: every format x every type and channel count it can store round-trips, views with padded
// rows are written correctly, and the file-level calls (extension dispatch, atomic replacement) behave.
// Format details are in test_io_netpbm.cpp and test_io_codecs.cpp, refusals in test_io_negative.cpp.
#include <sys/stat.h>

#include <cmath>
#include <fstream>

#include "test_io_support.hpp"

namespace apron::iotest {
namespace {

std::vector<ImageFormat> built_formats() {
    std::vector<ImageFormat> f = {ImageFormat::pnm, ImageFormat::pfm, ImageFormat::png, ImageFormat::jpeg};
#if APRON_HAVE_TIFF
    f.push_back(ImageFormat::tiff);
#endif
    return f;
}

// JPEG is lossy: a smooth image survives quality 95 within a few levels; noise would not.
Image smooth_image(int w, int h, int c) {
    Image img(w, h, c, PixelType::u8);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int k = 0; k < c; ++k)
                img.row<std::uint8_t>(y)[x * c + k] =
                    std::uint8_t(128 + 90 * std::sin(x / 6.0 + k) * std::cos(y / 9.0 - k));
    return img;
}

void expect_near_u8(const Image& a, const Image& b, int max_diff, double max_mean) {
    ASSERT_TRUE(a.shape() == b.shape());
    double sum = 0;
    int worst = 0;
    for (int y = 0; y < a.height(); ++y)
        for (int i = 0; i < a.width() * a.channels(); ++i) {
            const int d = std::abs(a.row<std::uint8_t>(y)[i] - b.row<std::uint8_t>(y)[i]);
            worst = std::max(worst, d);
            sum += d;
        }
    EXPECT_LE(worst, max_diff);
    EXPECT_LE(sum / (double(a.width()) * a.height() * a.channels()), max_mean);
}

TEST(ImageIo, RoundTripEveryFormatTypeAndChannelCount) {
    const int sizes[][2] = {{1, 1}, {7, 5}, {33, 17}, {1, 9}, {13, 1}};
    int cases = 0;
    for (ImageFormat f : built_formats())
        for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
            for (int c = 1; c <= 4; ++c) {
                if (!can_store(f, ImageShape{1, 1, c, t})) continue;
                for (const auto& s : sizes) {
                    SCOPED_TRACE(std::string(to_string(f)) + " " + to_string(t) + " c=" + std::to_string(c) + " " +
                                 std::to_string(s[0]) + "x" + std::to_string(s[1]));
                    const unsigned seed = unsigned(cases++);
                    const Image src =
                        f == ImageFormat::jpeg ? smooth_image(s[0], s[1], c) : random_image(s[0], s[1], c, t, seed);
                    const auto file = encode_image(f, src, "roundtrip", {});
                    const Image back = decode_image(file, "roundtrip");
                    if (f == ImageFormat::jpeg)
                        expect_near_u8(src, back, 12, 2.0);
                    else
                        EXPECT_TRUE(same_pixels(src, back));
                }
            }
            // pnm 4 + pfm 2 + png 8 + jpeg 2 (+ tiff 12) combinations, each at every size.
#if APRON_HAVE_TIFF
    EXPECT_EQ(cases, 28 * 5);
#else
    EXPECT_EQ(cases, 16 * 5);
#endif
}

TEST(ImageIo, PlainPnmRoundTrips) {
    WriteOptions ascii;
    ascii.pnm_ascii = true;
    for (PixelType t : {PixelType::u8, PixelType::u16})
        for (int c : {1, 3}) {
            const Image src = random_image(29, 6, c, t, 7);  // 29*3 samples: lines must wrap at 70 chars
            const auto file = encode_image(ImageFormat::pnm, src, "plain", ascii);
            EXPECT_EQ(file[1], c == 1 ? '2' : '3');
            std::size_t line = 0, longest = 0;
            for (auto b : file) line = b == '\n' ? 0 : line + 1, longest = std::max(longest, line);
            EXPECT_LE(longest, 70u);
            EXPECT_TRUE(same_pixels(src, decode_image(file, "plain")));
        }
}

TEST(ImageIo, ViewsWithPaddedRowsAreWrittenRowByRow) {
    for (ImageFormat f : built_formats()) {
        const PixelType t = f == ImageFormat::pfm ? PixelType::f32 : PixelType::u8;
        const Image big = f == ImageFormat::jpeg ? smooth_image(40, 30, 3) : random_image(40, 30, 3, t, 11);
        const ConstImageView part = big.view().roi(3, 2, 17, 9);
        const Image expected = copy_of(part);
        const Image back = decode_image(encode_image(f, part, "roi", {}), "roi");
        SCOPED_TRACE(to_string(f));
        if (f == ImageFormat::jpeg)
            expect_near_u8(expected, back, 12, 2.0);
        else
            EXPECT_TRUE(same_pixels(expected, back));
    }
}

TEST(ImageIo, CanStoreMatchesEachFormat) {
    auto ok = [](ImageFormat f, PixelType t, int c) { return can_store(f, ImageShape{4, 4, c, t}); };
    EXPECT_TRUE(ok(ImageFormat::pnm, PixelType::u16, 3));
    EXPECT_FALSE(ok(ImageFormat::pnm, PixelType::u8, 2));
    EXPECT_FALSE(ok(ImageFormat::pnm, PixelType::f32, 1));
    EXPECT_TRUE(ok(ImageFormat::pfm, PixelType::f32, 3));
    EXPECT_FALSE(ok(ImageFormat::pfm, PixelType::u8, 1));
    EXPECT_FALSE(ok(ImageFormat::pfm, PixelType::f32, 4));
    EXPECT_TRUE(ok(ImageFormat::png, PixelType::u16, 4));
    EXPECT_FALSE(ok(ImageFormat::png, PixelType::f32, 1));
    EXPECT_TRUE(ok(ImageFormat::jpeg, PixelType::u8, 3));
    EXPECT_FALSE(ok(ImageFormat::jpeg, PixelType::u16, 1));
    EXPECT_FALSE(ok(ImageFormat::jpeg, PixelType::u8, 4));
    EXPECT_FALSE(ok(ImageFormat::png, PixelType::u8, 5));
#if APRON_HAVE_TIFF
    EXPECT_TRUE(ok(ImageFormat::tiff, PixelType::f32, 4));
#else
    EXPECT_FALSE(ok(ImageFormat::tiff, PixelType::u8, 1));
#endif
    std::string why;
    EXPECT_FALSE(can_store(ImageFormat::png, ImageShape{4, 4, 1, PixelType::f32}, &why));
    EXPECT_NE(why.find(".pfm"), std::string::npos) << why;
}

TEST(ImageIo, FormatForPathIgnoresCase) {
    EXPECT_EQ(format_for_path("a/b.PGM"), ImageFormat::pnm);
    EXPECT_EQ(format_for_path("x.ppm"), ImageFormat::pnm);
    EXPECT_EQ(format_for_path("x.pnm"), ImageFormat::pnm);
    EXPECT_EQ(format_for_path("x.Pfm"), ImageFormat::pfm);
    EXPECT_EQ(format_for_path("dir.jpg/x.png"), ImageFormat::png);
    EXPECT_EQ(format_for_path("x.JPEG"), ImageFormat::jpeg);
    EXPECT_EQ(format_for_path("x.jpg"), ImageFormat::jpeg);
#if APRON_HAVE_TIFF
    EXPECT_EQ(format_for_path("x.TIF"), ImageFormat::tiff);
    EXPECT_EQ(format_for_path("x.tiff"), ImageFormat::tiff);
    EXPECT_NE(supported_formats().find("tiff"), std::string::npos);
#endif
    EXPECT_STREQ(to_string(ImageFormat::jpeg), "jpeg");
    EXPECT_EQ(supported_formats().rfind("pnm pfm png jpeg", 0), 0u);
}

TEST(ImageIo, WriteAndReadFilesOfEveryExtension) {
    ScratchDir dir;
    for (const char* name : {"a.pgm", "b.PPM", "c.pfm", "d.png", "e.jpg", "f.tif"}) {
#if !APRON_HAVE_TIFF
        if (std::string(name) == "f.tif") continue;
#endif
        const ImageFormat f = format_for_path(name);
        const PixelType t = f == ImageFormat::pfm ? PixelType::f32 : PixelType::u8;
        const int c = std::string(name) == "a.pgm" ? 1 : 3;
        const Image src = f == ImageFormat::jpeg ? smooth_image(10, 8, c) : random_image(10, 8, c, t, 3);
        write_image(dir.file(name), src);
        const Image back = read_image(dir.file(name));
        SCOPED_TRACE(name);
        if (f == ImageFormat::jpeg)
            expect_near_u8(src, back, 12, 2.0);
        else
            EXPECT_TRUE(same_pixels(src, back));
    }
    EXPECT_TRUE(dir.temp_files().empty());
}

TEST(ImageIo, AtomicWriteReplacesTheFileWithNormalPermissions) {
    ScratchDir dir;
    const std::string path = dir.file("out.txt");
    write_file_atomically(path, bytes("first version, longer than the second"));
    write_file_atomically(path, bytes("second"));
    std::ifstream in(path);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(content, "second");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    const mode_t mask = ::umask(0);
    ::umask(mask);
    EXPECT_EQ(st.st_mode & 0777, 0666u & ~mask);  // not mkstemp's 0600
    EXPECT_TRUE(dir.temp_files().empty());
}

TEST(ImageIo, AtomicWriteInTheCurrentDirectoryAndEmptyContent) {
    ScratchDir dir;
    const auto old = std::filesystem::current_path();
    std::filesystem::current_path(dir.path());
    EXPECT_NO_THROW(write_file_atomically("plain-name.bin", {}));
    std::filesystem::current_path(old);
    EXPECT_EQ(std::filesystem::file_size(dir.file("plain-name.bin")), 0u);
    EXPECT_TRUE(dir.temp_files().empty());
}

}  // namespace
}  // namespace apron::iotest
