// run_batch on the GPU: images of mixed sizes, channels and types through several streams per GPU give
// the CPU backend's bits (exact integer pipelines), padding is cropped, failures stay per image, and the
// result does not depend on the number of streams. Skips where no GPU is found.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <mutex>

#include "apron/batch.hpp"
#include "apron/io.hpp"
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

namespace {

// A folder of the test's own under the system's temporary directory, removed at the end.
struct Folder {
    std::filesystem::path path;
    Folder() : path(std::filesystem::temp_directory_path() / ("apron-gpu-batch-" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~Folder() { std::filesystem::remove_all(path); }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

BatchReport run_files(const std::vector<BatchItem>& items, const Pipeline& p, Backend backend, const std::string& dir,
                      std::uint64_t budget, BatchOptions::JpegDecoder jpeg = BatchOptions::JpegDecoder::automatic) {
    BatchOptions o;
    o.pipeline = p;
    o.run.backend = backend;
    o.io_threads = 4;
    o.output_dir = dir;
    o.memory_budget = budget;
    o.jpeg_decoder = jpeg;
    return run_batch(items, o);
}

} // namespace

// Files through the GPU batch: binary PNM filtered where it lies (8 and 16 bits, gray and colour), PNG decoded,
// an image larger than the budget streamed in bands on the GPU, JPEG decoded by nvJPEG where the build has it:
// the CPU backend's bytes, JPEG within the decoders' rounding.
TEST(CudaBatch, FilesInPlaceStreamedAndJpegMatchTheCpuBackend) {
    REQUIRE_GPU();
    Folder dir;
    struct In {
        const char* name;
        int w, h, c;
        PixelType t;
    };
    const In inputs[] = {{"a.pgm", 640, 480, 1, PixelType::u8}, {"b.pgm", 333, 211, 1, PixelType::u16},
                         {"c.ppm", 257, 129, 3, PixelType::u8},  {"d.png", 100, 80, 3, PixelType::u16},
                         {"e.jpg", 400, 300, 3, PixelType::u8},  {"big.pgm", 900, 1400, 1, PixelType::u8}};
    std::vector<BatchItem> cpu, gpu;
    unsigned seed = 40;
    for (const In& in : inputs) {
        write_image(dir.file(in.name), test::random_image(in.w, in.h, in.c, in.t, seed++).view());
        // The JPEG's result goes to PPM: a second lossy encoding would hide what the decoders did.
        const std::string out = std::string(in.name) == "e.jpg" ? "e.ppm" : in.name;
        cpu.push_back({dir.file(in.name), dir.file("cpu/" + out), 0, 0});
        gpu.push_back({dir.file(in.name), dir.file("gpu/" + out), 0, 0});
    }
    const Pipeline p({"correlate:mask=samples/masks/even4x4.kernel,border=wrap", "dilate:se=rect:5x5"});
    // 2 MiB: every image fits but big.pgm (1.26 Mpix: its file, pixels and result take about 6 MiB).
    const std::uint64_t budget = std::uint64_t(2) << 20;
    const BatchReport want = run_files(cpu, p, Backend::cpu, dir.file("cpu"), budget, BatchOptions::JpegDecoder::cpu);
    ASSERT_EQ(want.failed, 0u) << (want.failures.empty() ? "" : want.failures[0].message);
    const BatchReport got = run_files(gpu, p, Backend::cuda, dir.file("gpu"), budget);
    ASSERT_EQ(got.failed, 0u) << (got.failures.empty() ? "" : got.failures[0].message);
    EXPECT_EQ(got.done, gpu.size());
    for (std::size_t i = 0; i < gpu.size(); ++i) {
        const Image a = read_image(cpu[i].output), b = read_image(gpu[i].output);
        if (std::string(inputs[i].name) == "e.jpg")
            EXPECT_LE(test::max_abs_diff(a.view(), b.view()), 4.0) << "JPEG decoded on the GPU";
        else
            EXPECT_TRUE(test::identical(a.view(), b.view())) << inputs[i].name;
    }
    // The same bytes again with the JPEG decoded on the CPU, whatever the build.
    const BatchReport again = run_files(gpu, p, Backend::cuda, dir.file("gpu"), budget, BatchOptions::JpegDecoder::cpu);
    EXPECT_EQ(again.failed, 0u);
    EXPECT_TRUE(test::identical(read_image(cpu[4].output).view(), read_image(gpu[4].output).view()));
}
