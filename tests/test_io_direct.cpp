// read_image and write_image without a whole-file copy (issue 30, item 5): binary PNM and PFM rows read
// straight into the image and written straight from it, in parallel parts; PNG, JPEG and TIFF decoded from
// reads of the file. Each is checked against the in-memory codec (decode_image, encode_image), bit for bit:
// odd sizes (padded rows), 1-pixel images, images of several parts, u8/u16/f32, 1-4 channels, either byte
// order, and truncated or bad files refused in the same words, with no output left behind.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <csignal>
#include <cstdio>

#include "test_io_support.hpp"

namespace apron::iotest {
namespace {

void write_bytes(const std::string& path, const ByteVec& b) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    ASSERT_TRUE(out.good()) << path;
}

ByteVec file_bytes(const std::string& path) {
    const std::string s = read_text(path);
    return ByteVec(s.begin(), s.end());
}

// The message decode_image gives for `file` (or "ok").
std::string decode_message(const ByteVec& file, const std::string& name, const ReadOptions& o = {}) {
    try {
        decode_image(file, name, o);
        return "ok";
    } catch (const Error& e) {
        return e.what();
    }
}

std::string read_message(const std::string& path, const ReadOptions& o = {}) {
    try {
        read_image(path, o);
        return "ok";
    } catch (const Error& e) {
        return e.what();
    }
}

struct Case {
    int w, h, c;
    PixelType t;
};

// Shapes: 1 pixel, 1 row, 1 column, odd widths (rows padded in memory), and images of several 4 MiB parts.
const Case cases[] = {
    {1, 1, 1, PixelType::u8},     {1, 1, 3, PixelType::u16},    {1, 1, 1, PixelType::f32},   {1, 1, 3, PixelType::f32},
    {7, 1, 1, PixelType::u8},     {1, 9, 3, PixelType::u8},     {33, 17, 1, PixelType::u16}, {33, 17, 3, PixelType::f32},
    {64, 5, 1, PixelType::u8},    {4099, 1030, 1, PixelType::u8}, {1031, 1100, 3, PixelType::u16},
    {1025, 1030, 1, PixelType::f32}, {2048, 1100, 3, PixelType::u8},
};

TEST(DirectFiles, BinaryPnmAndPfmReadAsDecodedFromMemory) {
    ScratchDir dir;
    unsigned seed = 1;
    for (const Case& k : cases) {
        const ImageFormat f = k.t == PixelType::f32 ? ImageFormat::pfm : ImageFormat::pnm;
        SCOPED_TRACE(std::to_string(k.w) + "x" + std::to_string(k.h) + "x" + std::to_string(k.c) + " " + to_string(k.t));
        const Image img = random_image(k.w, k.h, k.c, k.t, seed++);
        const std::vector<std::uint8_t> encoded = encode_image(f, img, "x");
        const std::string path = dir.file(f == ImageFormat::pfm ? "a.pfm" : "a.pnm");
        write_bytes(path, encoded);
        const Image read = read_image(path);
        EXPECT_TRUE(same_pixels(read, img));
        EXPECT_TRUE(same_pixels(read, decode_image(encoded, "x")));
        // And written back straight from the image: encode_image's bytes.
        const std::string out = dir.file(f == ImageFormat::pfm ? "b.pfm" : "b.pnm");
        write_image(out, read);
        EXPECT_EQ(file_bytes(out), encoded);
        EXPECT_TRUE(dir.temp_files().empty());
    }
}

TEST(DirectFiles, WritesFromAViewWithItsOwnPitch) {
    ScratchDir dir;
    // A window of a larger image: rows far apart, columns not at the start.
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
        const Image big = random_image(300, 90, 3, t, 40);
        const ConstImageView window = big.view().roi(17, 5, 101, 70);
        const ImageFormat f = t == PixelType::f32 ? ImageFormat::pfm : ImageFormat::pnm;
        const std::string out = dir.file(f == ImageFormat::pfm ? "w.pfm" : "w.ppm");
        write_image(out, window);
        EXPECT_EQ(file_bytes(out), encode_image(f, window, "x"));
    }
}

TEST(DirectFiles, OtherByteOrdersAndKinds) {
    ScratchDir dir;
    // 16-bit PGM read little-endian (GenConv's files), a big-endian PFM (positive scale), a PAM of 2 and 4
    // channels, and a maxval below the type's largest.
    const std::string le = dir.file("le.pgm");
    write_bytes(le, concat(bytes("P5\n3 1\n65535\n"), {0x34, 0x12, 0xCD, 0xAB, 1, 0}));
    ReadOptions little;
    little.pnm_byte_order = ByteOrder::little;
    EXPECT_EQ(pixels_of<std::uint16_t>(read_image(le, little)), (std::vector<std::uint16_t>{0x1234, 0xABCD, 1}));
    EXPECT_EQ(pixels_of<std::uint16_t>(read_image(le)), (std::vector<std::uint16_t>{0x3412, 0xCDAB, 0x100}));

    ByteVec be = bytes("Pf\n2 2\n1.0\n");
    for (float v : {3.5f, -1.0f, 1e30f, 0.25f}) {  // rows bottom to top: (3.5, -1) is the last row
        const std::uint32_t u = std::bit_cast<std::uint32_t>(v);
        for (int s = 24; s >= 0; s -= 8) be.push_back(std::uint8_t(u >> s));
    }
    const std::string pfm = dir.file("be.pfm");
    write_bytes(pfm, be);
    EXPECT_EQ(pixels_of<float>(read_image(pfm)), (std::vector<float>{1e30f, 0.25f, 3.5f, -1.0f}));
    EXPECT_TRUE(same_pixels(read_image(pfm), decode_image(be, "x")));

    for (int depth : {2, 4}) {
        const ByteVec pam = concat(bytes("P7\nWIDTH 3\nHEIGHT 2\nDEPTH " + std::to_string(depth) +
                                         "\nMAXVAL 200\nTUPLTYPE X\nENDHDR\n"),
                                   ByteVec(std::size_t(6 * depth), 200));
        const std::string path = dir.file("a.pam");
        write_bytes(path, pam);
        EXPECT_TRUE(same_pixels(read_image(path), decode_image(pam, "x")));
    }
}

TEST(DirectFiles, BadFilesAreRefusedInTheWordsOfTheMemoryDecoder) {
    ScratchDir dir;
    const std::string path = dir.file("bad.pgm");
    const ByteVec whole = encode_image(ImageFormat::pnm, random_image(1500, 1200, 3, PixelType::u16, 5), "x");
    std::vector<ByteVec> files = {
        ByteVec(whole.begin(), whole.end() - 1),              // one byte short
        ByteVec(whole.begin(), whole.begin() + 20),           // the header and a few samples
        bytes("P5\n4 4\n255\n"),                              // no pixels at all
        bytes("P5\n4 4\n"),                                   // no maxval
        concat(bytes("P5\n2 2\n100\n"), {1, 2, 101, 255}),   // samples above the maxval: the first is named
        concat(bytes("P5\n2 1\n1000\n"), {0, 5, 3, 233}),    // 16-bit: 1001 at (1, 0)
        bytes("Pf\n2 2\n-1\n") ,                              // PFM without pixels
        concat(bytes("PF\n1 1\n-1\n"), ByteVec(11, 0)),     // PFM one byte short
        concat(bytes("Pf\n1 1\nnan\n"), ByteVec(4, 0)),      // a bad scale
    };
    // A bad sample deep in a file of several parts: the one a single thread meets first is named.
    ByteVec deep = concat(bytes("P5\n4000 3000\n254\n"), ByteVec(std::size_t(4000) * 3000, 7));
    deep[deep.size() - 5] = 255;
    deep[deep.size() - 4000 * 1500] = 255;
    files.push_back(deep);
    for (const ByteVec& f : files) {
        write_bytes(path, f);
        const std::string expected = decode_message(f, path);
        ASSERT_NE(expected, "ok");
        EXPECT_EQ(read_message(path), expected);
        EXPECT_EQ(expected.find('\n'), std::string::npos) << expected;
    }
    EXPECT_NE(decode_message(deep, "d").find("at pixel (0, 1500)"), std::string::npos) << decode_message(deep, "d");
}

TEST(DirectFiles, ABinaryFileIsNotCountedTwiceAgainstTheBudget) {
    ScratchDir dir;
    const Image img = random_image(100, 50, 1, PixelType::u8, 9);
    const std::string path = dir.file("a.pgm");
    write_bytes(path, encode_image(ImageFormat::pnm, img, "x"));
    // Its pixels (rows padded to 128 bytes) fit; the file is never held beside them.
    ReadOptions o;
    o.memory_budget = 128 * 50;
    EXPECT_TRUE(same_pixels(read_image(path, o), img));
    EXPECT_EQ(probe_image(path, o), img.shape());
    o.memory_budget = 128 * 50 - 1;
    EXPECT_TRUE(fails_naming([&] { read_image(path, o); }, path, "over the memory budget"));
    EXPECT_TRUE(fails_naming([&] { probe_image(path, o); }, path, "over the memory budget"));
}

TEST(DirectFiles, EncodedFormatsDecodeFromTheFileAsFromMemory) {
    ScratchDir dir;
    std::vector<std::pair<ImageFormat, std::string>> formats = {{ImageFormat::png, "png"}, {ImageFormat::jpeg, "jpg"}};
#if APRON_HAVE_TIFF
    formats.push_back({ImageFormat::tiff, "tif"});
#endif
    for (const auto& [f, ext] : formats)
        for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
            for (int c : {1, 3, 4}) {
                if (!can_store(f, {45, 7, c, t})) continue;
                SCOPED_TRACE(ext + " " + to_string(t) + " x" + std::to_string(c));
                const std::vector<std::uint8_t> encoded = encode_image(f, random_image(301, 77, c, t, 11), "x");
                const std::string path = dir.file("a." + ext);
                write_bytes(path, encoded);
                EXPECT_TRUE(same_pixels(read_image(path), decode_image(encoded, "x")));
                // Truncated: refused naming the file, as from memory.
                const ByteVec cut(encoded.begin(), encoded.begin() + std::ptrdiff_t(encoded.size() * 2 / 3));
                write_bytes(path, cut);
                EXPECT_TRUE(fails_naming([&] { read_image(path); }, path));
                EXPECT_NE(decode_message(cut, "x"), "ok");
            }
}

TEST(DirectFiles, AFailedWriteLeavesNothing) {
    ScratchDir dir;
    // The output's directory is gone: nothing is created, the error names the path.
    const std::string out = dir.file("missing/o.pgm");
    EXPECT_TRUE(fails_naming([&] { write_image(out, random_image(50, 40, 1, PixelType::u8, 2)); }, out));
    // A file-size limit stops the rows part way: the temporary file is removed, the old output stays.
    const std::string keep = dir.file("o.pgm");
    write_bytes(keep, bytes("old"));
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::signal(SIGXFSZ, SIG_IGN);
        struct rlimit limit {1 << 20, 1 << 20};
        ::setrlimit(RLIMIT_FSIZE, &limit);
        try {
            write_image(keep, random_image(2000, 2000, 1, PixelType::u8, 3));
        } catch (const Error& e) {
            _exit(std::string(e.what()).find(keep) != std::string::npos ? 7 : 8);
        }
        _exit(9);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << status;
    EXPECT_EQ(read_text(keep), "old");
    EXPECT_TRUE(dir.temp_files().empty());
}

}  // namespace
}  // namespace apron::iotest
