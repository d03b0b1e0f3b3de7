// A pipeline planned once (Pipeline::prepare): the plan count of a run, of warm calls and of a streamed run;
// the prepared run's results against the reference backend; its checks of shapes and options.
#include <gtest/gtest.h>

#include <cstring>

#include "apron/errors.hpp"
#include "apron/io.hpp"
#include "apron/pipeline.hpp"
#include "apron/stream.hpp"
#include "plan/plan.hpp"
#include "test_io_support.hpp"

namespace apron {
namespace {

bool same_bytes(const Image& a, const Image& b) {
    if (!(a.shape() == b.shape())) return false;
    for (int y = 0; y < a.height(); ++y)
        if (std::memcmp(a.view().row_bytes(y), b.view().row_bytes(y), a.shape().row_bytes()) != 0) return false;
    return true;
}

// Plans made while `work` runs.
template <class F>
std::uint64_t plans_during(F&& work) {
    const std::uint64_t before = plans_made();
    work();
    return plans_made() - before;
}

TEST(PreparedPipeline, ARunPlansOnceAndAWarmCallNotAtAll) {
    const Pipeline p({"box:width=5,height=3", "dilate:se=disk:3"});
    const Image in = iotest::random_image(37, 23, 3, PixelType::u8, 7);
    RunOptions o;
    o.backend = Backend::cpu;
    EXPECT_EQ(plans_during([&] { p.run(in, o); }), 1u);
    // What `apron filter` asks before its run, and the run again: the same shape and options.
    EXPECT_EQ(plans_during([&] {
                  (void)p.memory_needed(in.shape(), o);
                  (void)p.describe(in.shape(), o);
                  p.run(in, o);
              }),
              0u);
    const Image other = iotest::random_image(36, 23, 3, PixelType::u8, 8);
    EXPECT_EQ(plans_during([&] { p.run(other, o); }), 1u);
    RunOptions f32 = o;
    f32.out_type = PixelType::f32;
    EXPECT_EQ(plans_during([&] { p.run(in, f32); }), 1u);
}

TEST(PreparedPipeline, AddingAStepPlansAgain) {
    Pipeline p({"box:width=3"});
    const Image in = iotest::random_image(20, 11, 1, PixelType::u8, 3);
    const RunOptions o{.backend = Backend::cpu};
    const Image before = p.run(in, o);
    p.add("erode:se=rect:3x3");
    const Image after = p.run(in, o);
    Pipeline two({"box:width=3", "erode:se=rect:3x3"});
    EXPECT_TRUE(same_bytes(after, two.run(in, {.backend = Backend::reference})));
    EXPECT_FALSE(same_bytes(before, after));
}

TEST(PreparedPipeline, RunsTheReferenceBackendsBits) {
    const Pipeline p({"box:width=5,height=3", "dilate:se=disk:3", "sobel:dx=1,dy=0"});
    const Image in = iotest::random_image(61, 17, 4, PixelType::u16, 11);
    const RunOptions o{.backend = Backend::cpu};
    PreparedPipeline prepared = p.prepare(in.shape(), o);
    const Image reference = p.run(in, {.backend = Backend::reference});
    EXPECT_TRUE(same_bytes(prepared.run(in), reference));
    Image out(prepared.output());
    prepared.run(in, out.view(), o);
    EXPECT_TRUE(same_bytes(out, reference));
    EXPECT_EQ(plans_during([&] { prepared.run(in); }), 0u);
}

TEST(PreparedPipeline, RefusesAnotherShapeOrOtherOptions) {
    const Pipeline p({"gaussian:sigma=1"});
    const Image in = iotest::random_image(16, 9, 1, PixelType::f32, 5);
    const PreparedPipeline prepared = p.prepare(in.shape(), {.backend = Backend::cpu});
    const Image taller = iotest::random_image(16, 10, 1, PixelType::f32, 5);
    EXPECT_TRUE(iotest::fails_naming([&] { prepared.run(taller); }, "input image", "prepared for 16x9x1 f32"));
    Image out(prepared.output());
    EXPECT_TRUE(iotest::fails_naming([&] { prepared.run(in, out.view(), {.backend = Backend::reference}); }, "--backend"));
    EXPECT_TRUE(iotest::fails_naming([&] { prepared.run(in, out.view(), {.backend = Backend::cpu, .threads = 3}); }, "--threads"));
}

TEST(PreparedPipeline, ReachAddsEveryStepsRowsAndSaysWhetherOneWraps) {
    const Pipeline p({"box:width=3,height=7", "erode:se=rect:1x5"});
    const ImageShape shape{40, 30, 1, PixelType::u8};
    const RowReach r = p.prepare(shape, {.backend = Backend::cpu}).reach();
    EXPECT_EQ(r.above, 3 + 2);
    EXPECT_EQ(r.below, 3 + 2);
    EXPECT_FALSE(r.wraps);
    EXPECT_TRUE(Pipeline({"box:width=3,border=wrap"}).prepare(shape, {.backend = Backend::cpu}).reach().wraps);
}

// Odd shapes through a prepared pipeline, against the reference: a 1-pixel image, masks and elements larger
// than the image, every border mode (the steps exact: the same bits).
TEST(PreparedPipeline, OnePixelAndMasksLargerThanTheImageOnEveryBorder) {
    for (const char* border : {"constant", "nearest", "reflect", "mirror", "wrap"})
        for (const ImageShape& shape : {ImageShape{1, 1, 1, PixelType::u8}, ImageShape{3, 2, 3, PixelType::u16},
                                        ImageShape{7, 1, 4, PixelType::u8}}) {
            const std::string b = std::string("border=") + border;
            const Pipeline p({"box:width=9,height=5," + b, "erode:se=disk:3," + b, "sobel:dy=1," + b});
            const Image in = iotest::random_image(shape.width, shape.height, shape.channels, shape.type, 31);
            const PreparedPipeline prepared = p.prepare(in.shape(), {.backend = Backend::cpu});
            EXPECT_TRUE(same_bytes(prepared.run(in), p.run(in, {.backend = Backend::reference})))
                << border << " " << shape.width << "x" << shape.height << "x" << shape.channels;
        }
}

TEST(PreparedPipeline, MemoryOfABandGrowsWithItsRows) {
    const Pipeline p({"gaussian:sigma=2", "dilate:se=disk:2"});
    const PreparedPipeline prepared = p.prepare({512, 4096, 3, PixelType::u8}, {.backend = Backend::cpu});
    EXPECT_LT(prepared.memory(64), prepared.memory(128));
    EXPECT_LT(prepared.memory(128), prepared.memory());
    EXPECT_EQ(prepared.memory(4096), prepared.memory());
    EXPECT_TRUE(iotest::fails_naming([&] { (void)prepared.memory(-1); }, "rows", "negative"));
}

TEST(PreparedPipeline, AStreamedRunPlansOnce) {
    iotest::ScratchDir dir;
    const Image in = iotest::random_image(64, 300, 1, PixelType::u8, 21);
    write_image(dir.file("in.pgm"), in);
    const Pipeline p({"box:width=5", "dilate:se=disk:2"});
    StreamOptions o;
    o.run.backend = Backend::cpu;
    o.run.memory_budget = std::uint64_t(64) << 20;  // the band search probes many heights
    EXPECT_EQ(plans_during([&] { stream_filter(dir.file("in.pgm"), dir.file("out.pgm"), p, o); }), 1u);
    o.band_rows = 16;
    EXPECT_EQ(plans_during([&] { stream_filter(dir.file("in.pgm"), dir.file("out16.pgm"), p, o); }), 1u);
    const Image whole = p.run(in, {.backend = Backend::reference});
    EXPECT_TRUE(same_bytes(read_image(dir.file("out.pgm")), whole));
    EXPECT_TRUE(same_bytes(read_image(dir.file("out16.pgm")), whole));
}

} // namespace
} // namespace apron
