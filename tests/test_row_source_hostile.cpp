// RowSource given hostile files: truncated files, raw files of the wrong size, headers declaring huge
// images, damaged compressed data. Each must end in a one-line apron::Error naming the file, never a crash,
// a hang or a runaway allocation: every read runs in a child process (in_child) with a time limit and a
// limited address space, so that a crash is reported as a failure of this test rather than of the run.
#include <unistd.h>

#include <filesystem>

#include "row_stream_support.hpp"

namespace apron {
namespace {

using iotest::ByteVec;
using iotest::in_child;
using iotest::random_image;
using iotest::ScratchDir;
using iotest::write_bytes;

// Opens `path` and reads its first, middle and last row (bands of up to 64 rows), in a child process.
std::string read_some(const std::string& path, io::SourceOptions options = {}) {
    return in_child(
        [&] {
            const auto source = io::open_row_source(path, options);
            const ImageShape s = source->shape();
            for (const int y0 : {0, s.height / 2, s.height - 1}) {
                const int h = std::min(64, s.height - y0);
                Image band(s.width, h, s.channels, s.type);
                source->read_rows(y0, band.view());
            }
        },
        20, std::uint64_t(2) << 30);
}

// The outcome of read_some must be an apron::Error: one line naming `path` (and `fragment`).
::testing::AssertionResult refused(const std::string& outcome, const std::string& path, const std::string& fragment = "") {
    if (outcome.rfind("error: ", 0) != 0) return ::testing::AssertionFailure() << path << ": not refused with apron::Error: " << outcome;
    if (outcome.find(path) == std::string::npos) return ::testing::AssertionFailure() << "the message does not name " << path << ": " << outcome;
    if (outcome.find(fragment) == std::string::npos) return ::testing::AssertionFailure() << "the message lacks '" << fragment << "': " << outcome;
    if (outcome.find('\n') != std::string::npos) return ::testing::AssertionFailure() << "not one line: " << outcome;
    return ::testing::AssertionSuccess() << outcome;
}

ByteVec cut(ByteVec v, std::size_t drop) {
    v.erase(v.end() - std::ptrdiff_t(std::min(drop, v.size())), v.end());
    return v;
}

TEST(RowSourceHostile, TruncatedFilesAreRefusedNamingTheFile) {
    ScratchDir dir;
    const Image gray = random_image(37, 29, 1, PixelType::u16, 1), rgb = random_image(37, 29, 3, PixelType::f32, 2);
    const std::pair<std::string, ByteVec> files[] = {
        {"pixels.pgm", cut(rowtest::pnm_bytes(gray.view(), false), 1)},
        {"pixels.pam", cut(rowtest::pnm_bytes(gray.view(), true), 100)},
        {"pixels.pfm", cut(rowtest::pfm_bytes(rgb.view(), ByteOrder::big), 1)},
        {"header.pgm", iotest::bytes("P5\n37 ")},
        {"header.pfm", iotest::bytes("PF\n37 29\n")},
        {"header.pam", iotest::bytes("P7\nWIDTH 3\nHEIGHT 2\nDEPTH 1\n")},
        {"magic.tif", iotest::bytes("II*\0")},
        {"empty.pgm", {}},
    };
    for (const auto& [name, content] : files) {
        const std::string path = dir.file(name);
        write_bytes(path, content);
        EXPECT_TRUE(refused(read_some(path), path));
    }
}

TEST(RowSourceHostile, RawOfTheWrongSizeIsRefused) {
    ScratchDir dir;
    const std::string path = dir.file("samples.raw");
    write_bytes(path, ByteVec(37 * 29 * 3 * 2 + 1, 7));
    for (const char* layout : {"37x29x3:u16", "37x29x3:u16:big", "37x30x3:u16", "2147483647x2147483647x4:f32"}) {
        io::SourceOptions options;
        options.raw = io::parse_raw_layout(layout);
        EXPECT_TRUE(refused(read_some(path, options), path)) << layout;
    }
    EXPECT_TRUE(iotest::fails_naming([] { io::parse_raw_layout("0x5x1:u8"); }, "--raw", "width and height"));
    EXPECT_TRUE(iotest::fails_naming([] { io::parse_raw_layout("5x5x5:u8"); }, "--raw", "channels"));
    EXPECT_TRUE(iotest::fails_naming([] { io::parse_raw_layout("5x5x1:i8"); }, "--raw", "i8"));
    EXPECT_TRUE(iotest::fails_naming([] { io::parse_raw_layout("5x5x1:u8:middle"); }, "--raw", "middle"));
}

// A file that shrinks after it was opened: the read that meets the end fails (on any of four threads).
TEST(RowSourceHostile, FileShrinkingAfterOpenFailsTheRead) {
    ScratchDir dir;
    const Image img = random_image(701, 1601, 4, PixelType::u16, 3);  // bands of several 4 MiB parts
    const std::string path = dir.file("shrinks.pam");
    write_bytes(path, rowtest::pnm_bytes(img.view(), true));
    io::SourceOptions options;
    options.threads = 4;
    const auto source = io::open_row_source(path, options);
    ASSERT_EQ(::truncate(path.c_str(), off_t(std::filesystem::file_size(path) / 2)), 0);
    Image band(img.width(), img.height(), img.channels(), img.type());
    EXPECT_TRUE(iotest::fails_naming([&] { source->read_rows(0, band.view()); }, path, "truncated"));
}

// Headers that declare enormous images over a few bytes of data.
TEST(RowSourceHostile, HugeDeclaredSizesAreRefused) {
    ScratchDir dir;
    const std::pair<std::string, std::string> files[] = {
        {"wide.pgm", "P5\n99999999999 1\n255\n"},
        {"square.pgm", "P5\n2147483647 2147483647\n255\n"},
        {"tpix.ppm", "P6\n1000000 1000000\n65535\n"},  // 10^12 pixels: under the 2^40 limit, but no data
        {"huge.pam", "P7\nWIDTH 2147483647\nHEIGHT 100000\nDEPTH 4\nMAXVAL 65535\nENDHDR\n"},
        {"huge.pfm", "PF\n1000000 1000000\n-1\n\x01\x02\x03"},
    };
    for (const auto& [name, content] : files) {
        const std::string path = dir.file(name);
        write_bytes(path, iotest::bytes(content));
        EXPECT_TRUE(refused(read_some(path), path));
    }
    // Under a small max_pixels, refused from the header by the limit.
    io::SourceOptions small;
    small.max_pixels = 1 << 20;
    EXPECT_TRUE(refused(read_some(dir.file("tpix.ppm"), small), dir.file("tpix.ppm"), "over the limit"));
}

#if APRON_HAVE_TIFF

// A classic little-endian TIFF whose directory declares width x height 8-bit gray pixels in one strip
// (or one tile of tile x tile) of 16 bytes of data: compression 1 (none) or 8 (deflate).
ByteVec tiff_declaring(std::uint32_t width, std::uint32_t height, std::uint16_t compression, std::uint32_t tile = 0) {
    ByteVec v = {'I', 'I', 42, 0, 8, 0, 0, 0};
    auto put = [&](std::uint32_t x, int bytes) {
        for (int k = 0; k < bytes; ++k) v.push_back(std::uint8_t(x >> (8 * k)));
    };
    struct Entry {
        std::uint16_t tag, type;
        std::uint32_t value;
    };
    const std::uint32_t count = tile ? 11 : 9, data = 8 + 2 + 12 * count + 4;
    std::vector<Entry> entries = {{256, 4, width}, {257, 4, height}, {258, 3, 8}, {259, 3, compression}, {262, 3, 1}};
    if (tile) {
        entries.insert(entries.end(), {{277, 3, 1}, {284, 3, 1}, {322, 4, tile}, {323, 4, tile}, {324, 4, data}, {325, 4, 16}});
    } else {
        entries.insert(entries.end(), {{273, 4, data}, {277, 3, 1}, {278, 4, height}, {279, 4, 16}});
    }
    put(std::uint32_t(entries.size()), 2);
    for (const Entry& e : entries) put(e.tag, 2), put(e.type, 2), put(1, 4), put(e.value, 4);
    put(0, 4);
    for (int k = 0; k < 16; ++k) v.push_back(std::uint8_t(0x78 + k));
    return v;
}

TEST(RowSourceHostile, TiffDeclaringHugeImagesIsRefused) {
    ScratchDir dir;
    int k = 0;
    for (const std::uint16_t compression : {std::uint16_t(1), std::uint16_t(8)})
        for (const std::uint32_t tile : {0u, 16u, 65536u})
            for (const auto& [w, h] : {std::pair{1000000u, 1000000u}, std::pair{4000000000u, 3u}, std::pair{70000u, 1u}}) {
                const std::string path = dir.file("declares" + std::to_string(++k) + ".tif");
                write_bytes(path, tiff_declaring(w, h, compression, tile));
                EXPECT_TRUE(refused(read_some(path), path)) << w << "x" << h << ", compression " << compression << ", tile " << tile;
            }
}

// Compressed strips and tiles whose data is damaged or cut: the read fails (or decodes something), but
// never crashes; a file cut short of its tiles fails naming the file.
TEST(RowSourceHostile, DamagedTiffData) {
    ScratchDir dir;
    const Image img = random_image(40, 40, 2, PixelType::u16, 4);
    unsigned k = 0;
    for (const std::uint16_t compression : {COMPRESSION_ADOBE_DEFLATE, COMPRESSION_LZW, COMPRESSION_PACKBITS})
        for (const std::uint32_t tile : {0u, 16u}) {
            if (!TIFFIsCODECConfigured(compression)) continue;
            const std::string path = dir.file("damaged" + std::to_string(++k) + ".tif");
            rowtest::write_tiff(path, img.view(), {compression, false, tile, 6, k % 2 == 0, false});
            ASSERT_FALSE(HasFatalFailure());
            ByteVec bytes = iotest::file_bytes(path);
            // libtiff writes the pixel data first and the directory last: scramble most of the data.
            std::mt19937 rng(k);
            for (std::size_t i = 16; i < bytes.size() * 2 / 3; ++i) bytes[i] = std::uint8_t(rng());
            write_bytes(path, bytes);
            const std::string outcome = read_some(path);
            EXPECT_TRUE(outcome == "ok" || refused(outcome, path)) << outcome;
        }
    // apron's own tiled BigTIFF has its directory first: cut short, the tiles past the end are missing.
    const std::string cut_path = dir.file("cut.tif");
    {
        io::SinkOptions options;
        options.tiff_tile_side = 16;
        const auto sink = io::create_row_sink(cut_path, img.shape(), options);
        sink->write_rows(0, img.view());
        sink->commit();
    }
    ASSERT_EQ(::truncate(cut_path.c_str(), off_t(std::filesystem::file_size(cut_path) - 100)), 0);
    EXPECT_TRUE(refused(read_some(cut_path), cut_path));
}

#endif  // APRON_HAVE_TIFF

}  // namespace
}  // namespace apron
