// run_batch on the CPU backend, through its source/sink hooks: every image comes out as the pipeline gives
// it on its own (1x1 up, masks larger than the image, every border mode, padding cropped), a bad image fails
// alone with its name, the work feed decides what a process does, and many images through one I/O thread
// do not stall the queues.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "apron/batch.hpp"
#include "apron/errors.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

struct BatchRun {
    std::vector<Image> inputs;
    std::vector<BatchItem> items;
    std::vector<Image> outputs;
    BatchReport report;
};

BatchOptions cpu_options(const Pipeline& p, BatchRun& r, std::mutex& m) {
    BatchOptions o;
    o.pipeline = p;
    o.run.backend = Backend::cpu;
    o.source = [&r](std::size_t i) { return ConstImageView(r.inputs[i].view()); };
    o.sink = [&r, &m](std::size_t i, ConstImageView v) {
        std::lock_guard<std::mutex> lock(m);
        r.outputs[i] = copy_of(v);
    };
    return o;
}

void add(BatchRun& r, int w, int h, int channels, PixelType t, int pad, unsigned seed) {
    r.inputs.push_back(test::random_image(w, h, channels, t, seed));
    r.items.push_back({"image" + std::to_string(r.items.size()), "", pad, pad});
}

} // namespace

TEST(BatchEngine, EveryImageAsThePipelineGivesItAlone) {
    const char* borders[] = {"constant,value=7", "nearest", "reflect", "mirror", "wrap"};
    for (const char* border : borders) {
        // A 7x5 float mask: larger than the 1x1, 1x3 and 3x2 images.
        const Pipeline p({std::string("correlate:mask=samples/masks/random7x5.kernel,border=") + border,
                          "dilate:se=ellipse:5x5"});
        BatchRun r;
        add(r, 1, 1, 1, PixelType::u8, 0, 1);
        add(r, 1, 3, 3, PixelType::u16, 0, 2);
        add(r, 3, 2, 1, PixelType::f32, 0, 3);
        add(r, 17, 9, 4, PixelType::u8, 2, 4);
        add(r, 129, 67, 1, PixelType::f32, 3, 5);
        r.outputs.resize(r.items.size());
        std::mutex m;
        const BatchReport report = run_batch(r.items, cpu_options(p, r, m));
        EXPECT_EQ(report.done, r.items.size()) << border;
        EXPECT_EQ(report.failed, 0u) << border;
        for (std::size_t i = 0; i < r.items.size(); ++i) {
            const Image whole = p.run(r.inputs[i], {.backend = Backend::reference});
            const int pad = r.items[i].pad_x;
            const ConstImageView want = whole.view().roi(pad, pad, whole.width() - 2 * pad, whole.height() - 2 * pad);
            ASSERT_FALSE(r.outputs[i].empty()) << border << " " << i;
            const double tol = r.inputs[i].type() == PixelType::f32 ? 1e-3 : 1.0;  // SPEC: float within 1e-5 relative
            EXPECT_LE(test::max_abs_diff(want, r.outputs[i]), tol) << border << " image " << i;
            EXPECT_EQ(r.outputs[i].width(), want.width());
            EXPECT_EQ(r.outputs[i].height(), want.height());
        }
    }
}

TEST(BatchEngine, ABadImageFailsAloneWithItsName) {
    const Pipeline p({"box:width=3"});
    BatchRun r;
    for (int i = 0; i < 6; ++i) add(r, 20 + i, 10, 1, PixelType::u8, i == 2 ? 10 : 1, unsigned(i));
    r.outputs.resize(r.items.size());
    std::mutex m;
    BatchOptions o = cpu_options(p, r, m);
    o.bits = 16;  // a job file's promise: 16-bit samples
    for (std::size_t i = 0; i < r.inputs.size(); ++i)
        r.inputs[i] = test::random_image(r.inputs[i].width(), 10, 1, i == 3 ? PixelType::u8 : PixelType::u16, unsigned(i));
    const BatchReport report = run_batch(r.items, o);
    EXPECT_EQ(report.done, 4u);
    EXPECT_EQ(report.failed, 2u);
    ASSERT_EQ(report.failures.size(), 2u);
    std::vector<std::string> names = {report.failures[0].input, report.failures[1].input};
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"image2", "image3"}));  // padding 10 of a 10-row image; u8
    for (const auto& f : report.failures) EXPECT_NE(f.message.find(f.input), std::string::npos) << f.message;
    EXPECT_TRUE(r.outputs[2].empty());
    EXPECT_TRUE(r.outputs[3].empty());
    EXPECT_FALSE(r.outputs[5].empty());
}

TEST(BatchEngine, TheFeedDecidesWhatThisProcessDoes) {
    const Pipeline p({"erode:se=rect:3x3"});
    BatchRun r;
    for (int i = 0; i < 10; ++i) add(r, 8, 8, 1, PixelType::u8, 0, unsigned(i));
    r.outputs.resize(r.items.size());
    std::mutex m;
    BatchOptions o = cpu_options(p, r, m);
    std::mutex feed_mutex;
    std::size_t next = 1;
    o.next = [&]() -> std::optional<std::size_t> {  // every other item, as one of two ranks would get
        std::lock_guard<std::mutex> lock(feed_mutex);
        if (next >= r.items.size()) return std::nullopt;
        const std::size_t i = next;
        next += 2;
        return i;
    };
    const BatchReport report = run_batch(r.items, o);
    EXPECT_EQ(report.done, 5u);
    for (std::size_t i = 0; i < r.items.size(); ++i) EXPECT_EQ(r.outputs[i].empty(), i % 2 == 0) << i;
}

TEST(BatchEngine, ManyImagesThroughOneIoThread) {
    const Pipeline p({"gaussian:sigma=1"});
    BatchRun r;
    for (int i = 0; i < 60; ++i) add(r, 5 + i % 7, 4 + i % 5, 1 + i % 3, PixelType::u8, 0, unsigned(i));
    r.outputs.resize(r.items.size());
    std::mutex m;
    BatchOptions o = cpu_options(p, r, m);
    o.io_threads = 1;
    const BatchReport report = run_batch(r.items, o);
    EXPECT_EQ(report.done, r.items.size());
    for (std::size_t i = 0; i < r.items.size(); ++i)
        EXPECT_TRUE(test::identical(r.outputs[i], p.run(r.inputs[i], {.backend = Backend::cpu}))) << i;
}

TEST(BatchEngine, OptionsAreChecked) {
    const Pipeline p({"box:width=3"});
    BatchRun r;
    add(r, 4, 4, 1, PixelType::u8, 0, 1);
    r.outputs.resize(1);
    std::mutex m;
    BatchOptions o = cpu_options(p, r, m);
    o.devices = {0};  // GPUs named, but the batch runs on the CPU backend
    EXPECT_THROW(run_batch(r.items, o), Error);
    o.devices.clear();
    o.streams_per_device = 0;
    try {
        run_batch(r.items, o);
        FAIL() << "streams 0 accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--streams"), std::string::npos) << e.what();
    }
}
