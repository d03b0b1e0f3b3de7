// The library side of issue 26's hardening: the step hook of a run (progress, interruption), repeated
// erosions and dilations that stop at their fixed point with the same bits as every pass run one by one,
// the whole-image TIFF writer's codec and tiles, the streamed PNM reader's maxval check, and calibrate's
// memory budget.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "apron/calibrate.hpp"
#include "apron/io.hpp"
#include "apron/pipeline.hpp"
#include "row_stream_support.hpp"

namespace apron {
namespace {

using iotest::fails_naming;
using iotest::random_image;
using iotest::ScratchDir;
using iotest::write_bytes;

TEST(RunHooks, BetweenStepsSeesEveryStepInOrder) {
    const Image in = random_image(23, 17, 1, PixelType::u8, 3);
    const Pipeline p({"box:width=3", "gaussian:sigma=1", "dilate:se=rect:3x3"});
    std::vector<std::pair<std::size_t, std::size_t>> calls;
    RunOptions o{.backend = Backend::cpu};
    o.between_steps = [&](std::size_t done, std::size_t steps) { calls.emplace_back(done, steps); };
    p.run(in, o);
    ASSERT_FALSE(calls.empty());
    for (std::size_t k = 0; k < calls.size(); ++k) {
        EXPECT_EQ(calls[k].first, k);
        EXPECT_EQ(calls[k].second, calls.size());
    }
}

TEST(RunHooks, AnExceptionFromTheHookStopsTheRun) {
    const Image in = random_image(23, 17, 1, PixelType::u8, 4);
    const Pipeline p({"dilate:se=disk:1,iterations=20"});
    int seen = 0;
    RunOptions o{.backend = Backend::cpu};
    o.between_steps = [&](std::size_t done, std::size_t) {
        ++seen;
        if (done == 2) throw std::runtime_error("stop");
    };
    EXPECT_THROW(p.run(in, o), std::runtime_error);
    EXPECT_EQ(seen, 3);
}

// n passes at once against n single-pass runs chained by hand (no repeat to skip there).
Image passes_one_by_one(const Image& in, const std::string& op, int n, Backend b) {
    Image img = copy_of(in);
    for (int k = 0; k < n; ++k) img = Pipeline({op}).run(img, {.backend = b});
    return img;
}

TEST(FixedPoint, RepeatedMorphologyStopsWithTheSameBits) {
    for (Backend b : {Backend::cpu, Backend::reference})
        for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
            const Image in = random_image(31, 19, t == PixelType::f32 ? 1 : 3, t, 5 + unsigned(t));
            for (const char* kind : {"dilate", "erode"}) {
                const std::string one = std::string(kind) + ":se=disk:2,border=nearest";
                std::vector<StageTiming> timings;
                RunOptions o{.backend = b, .timings = &timings};
                const Image got = Pipeline({one + ",iterations=60"}).run(in, o);
                EXPECT_TRUE(iotest::same_pixels(got, passes_one_by_one(in, one, 60, b))) << kind << " " << to_string(t);
                EXPECT_LT(timings.size(), 40u) << kind << " " << to_string(t);  // saturated within ~16 passes
            }
        }
}

TEST(FixedPoint, PassesThatChangeSomethingAreAllRun) {
    const Image in = random_image(64, 48, 1, PixelType::u8, 9);
    std::vector<StageTiming> timings;
    const Image got = Pipeline({"erode:se=cross:3x3,iterations=5"}).run(in, {.backend = Backend::cpu, .timings = &timings});
    EXPECT_TRUE(iotest::same_pixels(got, passes_one_by_one(in, "erode:se=cross:3x3", 5, Backend::cpu)));
    EXPECT_EQ(timings.size(), 5u);
}

TEST(TiffWriter, TakesCodecAndTilesAndRefusesOthers) {
#if !APRON_HAVE_TIFF
    GTEST_SKIP() << "built without libtiff";
#endif
    const Image img = random_image(45, 37, 3, PixelType::u16, 7);
    for (const char* codec : {"none", "deflate", "lzw", "zstd"})
        for (int tile : {0, 16, 48}) {
            WriteOptions o;
            o.tiff_compression = codec;
            o.tiff_tile = tile;
            std::vector<std::uint8_t> file;
            try {
                file = encode_image(ImageFormat::tiff, img, "t.tif", o);
            } catch (const Error& e) {
                ASSERT_NE(std::string(e.what()).find("has no"), std::string::npos) << e.what();  // a codec not built in
                continue;
            }
            EXPECT_TRUE(iotest::same_pixels(decode_image(file, "t.tif"), img)) << codec << " " << tile;
        }
    WriteOptions bad;
    bad.tiff_compression = "brotli";
    EXPECT_TRUE(fails_naming([&] { encode_image(ImageFormat::tiff, img, "t.tif", bad); }, "t.tif", "'brotli'"));
    bad.tiff_compression = "deflate";
    bad.tiff_tile = 20;
    EXPECT_TRUE(fails_naming([&] { encode_image(ImageFormat::tiff, img, "t.tif", bad); }, "t.tif", "multiple of 16"));
}

TEST(RowReaders, StreamedPnmSamplesOverTheMaxvalAreRefused) {
    ScratchDir dir;
    const std::string path = dir.file("m.pgm");
    std::string file = "P5\n5 4\n100\n";
    for (int k = 0; k < 20; ++k) file += char(k == 17 ? 101 : k * 5);
    write_bytes(path, iotest::bytes(file));
    EXPECT_TRUE(fails_naming([&] { read_image(path); }, path, "larger than the maxval 100"));
    const auto rows = io::open_row_source(path);
    Image band(5, 4, 1, PixelType::u8);
    EXPECT_NO_THROW(rows->read_rows(0, band.view().roi(0, 0, 5, 3)));  // rows 0-2 hold no such sample
    EXPECT_TRUE(fails_naming([&] { rows->read_rows(0, band.view()); }, path, "sample value 101 at pixel (2, 3)"));
}

TEST(CalibrateBudget, ASizeOverTheBudgetIsRefusedBeforeAllocating) {
    CalibrateOptions o;
    o.backend = Backend::cpu;
    o.width = o.height = 65536;
    o.sides = {3};
    o.memory_budget = std::uint64_t(1) << 30;
    EXPECT_TRUE(fails_naming([&] { calibrate(o); }, "calibrate --size 65536x65536", "over the memory budget"));
    EXPECT_TRUE(fails_naming([&] { check_planner(o); }, "calibrate --size 65536x65536", "over the memory budget"));
}

}  // namespace
}  // namespace apron
