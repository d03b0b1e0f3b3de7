// run_batch on the GPU: images of mixed sizes, channels and types through several streams per GPU give
// the CPU backend's bits (exact integer pipelines), padding is cropped, failures stay per image, and the
// result does not depend on the number of streams. Skips where no GPU is found.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>

#include "apron/batch.hpp"
#include "plan/plan.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

struct Case {
    std::vector<Image> inputs;
    std::vector<BatchItem> items;
};

// Sizes from 1x1 up, several channel counts and both integer types; some images padded.
Case mixed_images() {
    Case c;
    const int sizes[][2] = {{1, 1}, {17, 3}, {640, 480}, {1, 300}, {1023, 257}, {64, 64}, {2048, 1031}, {5, 5}};
    unsigned seed = 1;
    for (const auto& s : sizes)
        for (int channels : {1, 3}) {
            const PixelType t = seed % 3 ? PixelType::u8 : PixelType::u16;
            Image img(ImageShape{s[0], s[1], channels, t}, HostMemory::pinned);
            const Image r = test::random_image(s[0], s[1], channels, t, seed);
            for (int y = 0; y < s[1]; ++y) std::memcpy(img.view().row_bytes(y), r.view().row_bytes(y), r.shape().row_bytes());
            const int pad = s[0] > 8 && s[1] > 8 ? 2 : 0;
            c.items.push_back({"image" + std::to_string(seed), "", pad, pad});
            c.inputs.push_back(std::move(img));
            ++seed;
        }
    return c;
}

std::vector<Image> run_on(const Case& c, const Pipeline& p, Backend backend, int streams, BatchReport* report = nullptr) {
    std::vector<Image> out(c.items.size());
    std::mutex m;
    BatchOptions o;
    o.pipeline = p;
    o.run.backend = backend;
    o.streams_per_device = streams;
    o.source = [&](std::size_t i) { return ConstImageView(c.inputs[i].view()); };
    o.sink = [&](std::size_t i, ConstImageView v) {
        std::lock_guard<std::mutex> lock(m);
        out[i] = copy_of(v);
    };
    const BatchReport r = run_batch(c.items, o);
    if (report) *report = r;
    return out;
}

} // namespace

TEST(CudaBatch, MixedImagesMatchTheCpuBackendWhateverTheStreams) {
    REQUIRE_GPU();
    const Case c = mixed_images();
    const Pipeline p({"correlate:mask=samples/masks/even4x4.kernel,border=wrap", "dilate:se=ellipse:5x5"});
    const std::vector<Image> want = run_on(c, p, Backend::cpu, 1);
    for (int streams : {1, 3, 4}) {
        BatchReport r;
        const std::vector<Image> got = run_on(c, p, Backend::cuda, streams, &r);
        EXPECT_EQ(r.done, c.items.size());
        EXPECT_EQ(r.failed, 0u) << (r.failures.empty() ? "" : r.failures[0].input + ": " + r.failures[0].message);
        EXPECT_NE(r.workers.find("GPU"), std::string::npos) << r.workers;
        for (std::size_t i = 0; i < c.items.size(); ++i) {
            ASSERT_FALSE(got[i].empty()) << i;
            // The padding is cropped: the output is the interior.
            EXPECT_EQ(got[i].width(), c.inputs[i].width() - 2 * c.items[i].pad_x);
            EXPECT_TRUE(test::identical(want[i], got[i])) << c.items[i].input << " with " << streams << " streams";
        }
    }
}

TEST(CudaBatch, AFailingImageDoesNotStopTheOthers) {
    REQUIRE_GPU();
    Case c = mixed_images();
    c.items[3].pad_x = 100000;  // padding larger than the image: that image fails, alone
    const Pipeline p({"box:width=5"});
    BatchReport r;
    const std::vector<Image> got = run_on(c, p, Backend::cuda, 2, &r);
    EXPECT_EQ(r.failed, 1u);
    EXPECT_EQ(r.done, c.items.size() - 1);
    ASSERT_EQ(r.failures.size(), 1u);
    EXPECT_EQ(r.failures[0].input, c.items[3].input);
    EXPECT_TRUE(got[3].empty());
    EXPECT_FALSE(got[4].empty());
}
