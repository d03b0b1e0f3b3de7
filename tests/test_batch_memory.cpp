// The batch's memory budget: image shapes read from file headers before the files are read (exact for
// every format apron writes, an upper bound where the header leaves it open, nothing for garbage), the
// gate's all-or-nothing accounting, and run_batch over files: a budget that holds one image at a time gives
// the same outputs as a large one, and an image that alone does not fit fails alone, naming file and bytes.
#include <gtest/gtest.h>

#include <algorithm>

#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "apron/batch.hpp"
#include "apron/io.hpp"
#include "batch/image_header.hpp"
#include "io/file_io.hpp"
#include "batch/memory_gate.hpp"
#include "batch/text.hpp"
#include "test_io_support.hpp"

namespace apron::batch {
namespace {

using iotest::fails_naming;
using iotest::random_image;
using iotest::ScratchDir;

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

std::optional<ImageShape> header_of(const std::string& path) { return shape_from_header(io::InputFile(path)); }

TEST(BatchImageHeader, ExactForEveryFormatApronWrites) {
    ScratchDir dir;
    struct Case {
        const char* ext;
        int channels;
        PixelType type;
    };
    const Case cases[] = {{"pgm", 1, PixelType::u8}, {"pgm", 1, PixelType::u16}, {"ppm", 3, PixelType::u8},
                          {"ppm", 3, PixelType::u16}, {"pfm", 1, PixelType::f32}, {"pfm", 3, PixelType::f32},
                          {"png", 1, PixelType::u8},  {"png", 2, PixelType::u16}, {"png", 3, PixelType::u8},
                          {"png", 4, PixelType::u16}, {"jpg", 1, PixelType::u8},  {"jpg", 3, PixelType::u8},
#if APRON_HAVE_TIFF
                          {"tif", 1, PixelType::u8},  {"tif", 1, PixelType::u16}, {"tif", 1, PixelType::f32},
#endif
    };
    for (const Case& c : cases) {
        for (const auto [w, h] : {std::pair{1, 1}, std::pair{37, 5}, std::pair{3, 129}}) {
            const std::string path = dir.file("img." + std::string(c.ext));
            write_image(path, random_image(w, h, c.channels, c.type, unsigned(w * h)).view());
            const ImageShape decoded = read_image(path).shape();
            const auto header = header_of(path);
            ASSERT_TRUE(header.has_value()) << path << " " << w << "x" << h;
            EXPECT_TRUE(*header == decoded) << c.ext << " " << w << "x" << h << "x" << c.channels << " "
                                            << to_string(c.type) << ": header says " << header->width << "x"
                                            << header->height << "x" << header->channels << " "
                                            << to_string(header->type);
        }
    }
}

#if APRON_HAVE_TIFF
// Several samples per pixel: the bits per sample are not inline, so the header gives an upper bound.
TEST(BatchImageHeader, TiffOfSeveralSamplesIsBoundedFromAbove) {
    ScratchDir dir;
    const std::string path = dir.file("rgb.tif");
    write_image(path, random_image(9, 7, 3, PixelType::u8, 3).view());
    const auto header = header_of(path);
    ASSERT_TRUE(header.has_value());
    const ImageShape decoded = read_image(path).shape();
    EXPECT_EQ(header->width, decoded.width);
    EXPECT_EQ(header->height, decoded.height);
    EXPECT_EQ(header->channels, decoded.channels);
    EXPECT_GE(header->row_bytes(), decoded.row_bytes());
}
#endif

TEST(BatchImageHeader, CommentsPamAndBitmapsInNetpbmHeaders) {
    ScratchDir dir;
    write_bytes(dir.file("c.pgm"), "P5\n# a comment\n 4 # more\n3\n65535\n" + std::string(24, '\0'));
    EXPECT_TRUE(*header_of(dir.file("c.pgm")) == (ImageShape{4, 3, 1, PixelType::u16}));
    write_bytes(dir.file("b.pbm"), "P4\n9 2\n" + std::string(4, '\0'));
    EXPECT_TRUE(*header_of(dir.file("b.pbm")) == (ImageShape{9, 2, 1, PixelType::u8}));
    write_bytes(dir.file("a.pam"), "P7\nWIDTH 5\nHEIGHT 6\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n" +
                                       std::string(120, '\0'));
    EXPECT_TRUE(*header_of(dir.file("a.pam")) == (ImageShape{5, 6, 4, PixelType::u8}));
}

// A JPEG whose frame header comes after large APP segments (EXIF, ICC) is still read from its header.
TEST(BatchImageHeader, JpegFrameAfterLargeSegments) {
    ScratchDir dir;
    const std::string path = dir.file("a.jpg");
    write_image(path, random_image(21, 13, 3, PixelType::u8, 5).view());
    std::ifstream in(path, std::ios::binary);
    std::string jpeg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string app;
    for (int i = 0; i < 3; ++i) app += std::string("\xFF\xE2\xFF\xFF", 4) + std::string(65533, char(i));
    write_bytes(dir.file("b.jpg"), jpeg.substr(0, 2) + app + jpeg.substr(2));
    ASSERT_TRUE(read_image(dir.file("b.jpg")).shape() == (ImageShape{21, 13, 3, PixelType::u8}));
    EXPECT_TRUE(*header_of(dir.file("b.jpg")) == (ImageShape{21, 13, 3, PixelType::u8}));
}

TEST(BatchImageHeader, GarbageAndTruncatedHeadersGiveNothing) {
    ScratchDir dir;
    const std::string cases[] = {"",
                                 "P",
                                 "P5\n",
                                 "P5\n12",
                                 "P5\n0 5\n255\n",
                                 "P5\nx 5\n255\n",
                                 "P7\nWIDTH 5\n",
                                 std::string("\x89PNG\r\n\x1a\n", 8),
                                 std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\0\0\0\0\1\x08\0", 26),
                                 std::string("\xFF\xD8\xFF", 3),
                                 std::string("\xFF\xD8\xFF\xE0\x00\x02\xFF\xDA", 8),
                                 std::string("\xFF\xD8\xFF\xE0\xFF\xFF", 6),
                                 "II*\0\xff\xff\xff\x7f",
                                 std::string("MM\0*\0\0\0\x08\0\x01", 10),
                                 std::string("II+\0\x08\0\0\0", 8),
                                 "BM not an image at all"};
    for (const std::string& bytes : cases) {
        write_bytes(dir.file("x.img"), bytes);
        EXPECT_NO_THROW(EXPECT_FALSE(header_of(dir.file("x.img")).has_value()) << text::quoted(bytes));
    }
}

TEST(BatchInputFile, SizeTimeAndBytesFromOneOpen) {
    ScratchDir dir;
    write_bytes(dir.file("a"), "0123456789");
    const io::InputFile f(dir.file("a"));
    EXPECT_EQ(f.size(), 10u);
    EXPECT_GT(f.mtime_ns(), 0);
    EXPECT_EQ(f.read_at(3, 4), "3456");
    EXPECT_EQ(f.read_at(8, 100), "89");
    EXPECT_EQ(f.read_all(), "0123456789");
    write_bytes(dir.file("a"), "0123456789 and more");  // the same inode, grown after the open
    EXPECT_TRUE(fails_naming([&] { f.read_all(); }, dir.file("a"), "changed while it was read"));
}

TEST(BatchInputFile, MissingDirectoryAndFifoAreRefusedNamingThem) {
    ScratchDir dir;
    EXPECT_TRUE(fails_naming([&] { io::InputFile f(dir.file("none.pgm")); }, dir.file("none.pgm"), "cannot open"));
    EXPECT_TRUE(fails_naming([&] { io::InputFile f(dir.path().string()); }, dir.path().string(), "is a directory"));
    ASSERT_EQ(::mkfifo(dir.file("fifo.pgm").c_str(), 0644), 0);
    EXPECT_TRUE(fails_naming([&] { io::InputFile f(dir.file("fifo.pgm")); }, dir.file("fifo.pgm"), "not a regular file"));
}

TEST(BatchMemoryGate, AllOrNothing) {
    MemoryGate gate(100);
    EXPECT_FALSE(gate.try_take(101));
    EXPECT_TRUE(gate.try_take(60));
    EXPECT_FALSE(gate.try_take(41));
    EXPECT_EQ(gate.taken(), 60u);
    EXPECT_TRUE(gate.try_take(40));
    EXPECT_FALSE(gate.try_take(1));
    gate.give(60);
    EXPECT_TRUE(gate.try_take(60));
    gate.force(50);  // counted past the budget
    EXPECT_EQ(gate.taken(), 150u);
    EXPECT_FALSE(gate.try_take(0) && gate.taken() != 150u);
    gate.give(1000);  // never below zero
    EXPECT_EQ(gate.taken(), 0u);
    EXPECT_TRUE(gate.try_take(100));
    MemoryGate huge(UINT64_MAX);
    EXPECT_TRUE(huge.try_take(UINT64_MAX - 1));
    EXPECT_FALSE(huge.try_take(2));  // no overflow
}

TEST(BatchMemoryGate, ManyThreadsNeverExceedTheBudget) {
    MemoryGate gate(1000);
    std::atomic<std::uint64_t> in_use = 0, peak = 0;
    std::vector<std::thread> pool;
    for (int t = 0; t < 8; ++t)
        pool.emplace_back([&, t] {
            for (int i = 0; i < 2000; ++i) {
                const std::uint64_t n = 1 + std::uint64_t((t * 131 + i * 17) % 400);
                if (!gate.try_take(n)) continue;
                const std::uint64_t now = in_use += n;
                for (std::uint64_t p = peak; now > p && !peak.compare_exchange_weak(p, now);) {
                }
                in_use -= n;
                gate.give(n);
            }
        });
    for (auto& t : pool) t.join();
    EXPECT_LE(peak.load(), 1000u);
    EXPECT_EQ(gate.taken(), 0u);
}

// run_batch over files with a budget that holds about one image: every output as with a large budget.
// With a budget below one image, each image fails alone, naming its file and the bytes it needs.
TEST(BatchMemoryBudget, TightBudgetSameOutputsTooSmallFailsAlone) {
    ScratchDir dir;
    std::vector<BatchItem> items;
    for (int i = 0; i < 12; ++i) {
        const std::string in = dir.file("in" + std::to_string(i) + (i % 3 == 0 ? ".png" : ".pgm"));
        write_image(in, random_image(33 + i, 21 + 2 * i, 1, PixelType::u8, unsigned(100 + i)).view());
        items.push_back({in, dir.file("out/o" + std::to_string(i) + ".pgm"), 0, 0});
    }
    auto run = [&](std::uint64_t budget) {
        BatchOptions o;
        o.pipeline = Pipeline({"dilate:se=rect:3x3"});
        o.run.backend = Backend::cpu;
        o.io_threads = 4;
        o.output_dir = dir.file("out");
        o.memory_budget = budget;
        return run_batch(items, o);
    };
    const BatchReport large = run(std::uint64_t(1) << 30);
    ASSERT_EQ(large.done, items.size());
    std::vector<Image> expected;
    for (const auto& item : items) expected.push_back(read_image(item.output));

    // The largest image: about 70x45 u8; its file, pixels and result with its encoding: under 24 KiB.
    const BatchReport tight = run(24 << 10);
    EXPECT_EQ(tight.done, items.size());
    EXPECT_EQ(tight.failed, 0u);
    for (std::size_t i = 0; i < items.size(); ++i)
        EXPECT_TRUE(iotest::same_pixels(read_image(items[i].output).view(), expected[i].view())) << i;

    // Images that alone do not fit are streamed in bands, to the same pixels, where a band fits; the others
    // fail alone, naming the input and --memory.
    for (const BatchReport& tiny : {run(4 << 10), run(1 << 10)}) {
        EXPECT_EQ(tiny.done + tiny.failed, items.size());
        for (const BatchFailure& f : tiny.failures) {
            EXPECT_EQ(f.message.rfind(f.input + ": ", 0), 0u) << f.message;
            EXPECT_NE(f.message.find("--memory"), std::string::npos) << f.message;
        }
        for (std::size_t i = 0; i < items.size(); ++i) {
            const bool failed = std::any_of(tiny.failures.begin(), tiny.failures.end(),
                                            [&](const BatchFailure& f) { return f.input == items[i].input; });
            if (!failed) EXPECT_TRUE(iotest::same_pixels(read_image(items[i].output).view(), expected[i].view())) << i;
        }
    }
    const BatchReport none = run(1 << 10);
    EXPECT_GT(none.failed, 0u);  // not even a band of the PNG inputs (decoded whole) fits 1 KiB
}

} // namespace
} // namespace apron::batch
