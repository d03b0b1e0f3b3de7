// stream_filter on the CUDA backend: bands with halos (each uploaded, filtered and downloaded by a worker per
// GPU) give the bits of the whole-image CUDA run, for float and exact plans, FFT steps, morphology, wrap and
// several channels and types; exact plans also equal the CPU backend. Skips where no GPU is found.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/overrides.hpp"
#include "apron/io.hpp"
#include "apron/stream.hpp"
#include "plan/plan.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        path = std::filesystem::temp_directory_path() / ("apron_gpu_stream_" + std::to_string(::getpid()));
        std::filesystem::create_directories(path);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

std::string read_bytes(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string rows_of(const Image& img) {
    std::string s;
    for (int y = 0; y < img.height(); ++y)
        s.append(reinterpret_cast<const char*>(img.view().row_bytes(y)), img.shape().row_bytes());
    return s;
}

void expect_streamed_equals_whole(const Image& img, const std::vector<std::string>& specs, int band_rows, bool exact,
                                  Algorithm algorithm = Algorithm::automatic) {
    TempDir dir;
    const std::string ext = img.type() == PixelType::f32 ? ".pfm" : img.channels() == 1 ? ".pgm" : ".ppm";
    const std::string in = (dir.path / ("in" + ext)).string(), out = (dir.path / "out.raw").string();
    write_image(in, img);
    const Pipeline p(specs);
    RunOptions cuda;
    cuda.backend = Backend::cuda;
    cuda.algorithm = algorithm;
    const Image whole = p.run(read_image(in), cuda);
    StreamOptions so;
    so.run = cuda;
    so.band_rows = band_rows;
    const StreamReport r = stream_filter(in, out, p, so);
    EXPECT_GT(r.bands, 1);
    const std::string streamed = read_bytes(out), want = rows_of(whole);
    ASSERT_EQ(streamed.size(), want.size());
    if (streamed != want) {
        std::size_t i = 0;
        while (streamed[i] == want[i]) ++i;
        FAIL() << specs[0] << ": streamed bands differ from the whole CUDA run from byte " << i << " (row "
               << i / whole.shape().row_bytes() << ")";
    }
    if (exact) {
        RunOptions cpu;
        cpu.backend = Backend::cpu;
        EXPECT_EQ(rows_of(p.run(read_image(in), cpu)), want) << specs[0] << ": CUDA and CPU differ on an exact plan";
    }
}

}  // namespace

TEST(CudaStream, FloatGaussianThenDiskGivesTheWholeRunsBits) {
    REQUIRE_GPU();
    expect_streamed_equals_whole(test::random_image(1001, 777, 1, PixelType::u8, 3), {"gaussian:sigma=2", "dilate:se=disk:3"},
                                 64, false);
}

TEST(CudaStream, WrapOnColourAndSixteenBits) {
    REQUIRE_GPU();
    expect_streamed_equals_whole(test::random_image(513, 300, 3, PixelType::u16, 4),
                                 {"gaussian:sigma=1.5,border=wrap", "erode:se=ellipse:5x7,border=wrap", "box:width=3,border=reflect"},
                                 17, false);
}

TEST(CudaStream, ExactPlansEqualTheCpuBackend) {
    REQUIRE_GPU();
    expect_streamed_equals_whole(test::random_image(640, 401, 3, PixelType::u8, 5),
                                 {"box:width=5,border=mirror", "sobel:dx=1,border=wrap", "dilate:se=rect:7x3"}, 33, true);
}

TEST(CudaStream, FloatImagesAndOneRowBands) {
    REQUIRE_GPU();
    expect_streamed_equals_whole(test::random_image(301, 97, 1, PixelType::f32, 6), {"unsharp:sigma=2", "close:se=disk:2"}, 1,
                                 false);
}

TEST(CudaStream, FloatFftStepsGiveTheWholeRunsBits) {
    REQUIRE_GPU();
    // The FFT's tiles, their sides and its batches stay the whole image's (forced 64 x 64 tiles: many rows of
    // them, and halos of 64 rows per FFT step that bands of 61 rows cross): u8 samples (each tile centred on
    // its own range), wrap across the seam, three channels, two FFT steps around a morphology step; and an
    // f32 image whose NaN's tiles are summed directly.
    Overrides small_tiles = overrides();
    small_tiles.fft_side = 64;
    const OverrideScope scope(small_tiles);
    expect_streamed_equals_whole(test::random_image(150, 900, 3, PixelType::u8, 7),
                                 {"gaussian:sigma=5,border=wrap", "dilate:se=disk:2", "gaussian:sigma=4,border=mirror"}, 61, false,
                                 Algorithm::fft);
    Image f = test::random_image(133, 800, 3, PixelType::f32, 8);
    f.view().row<float>(400)[100] = std::numeric_limits<float>::quiet_NaN();
    expect_streamed_equals_whole(f, {"gaussian:sigma=6,border=reflect", "gaussian:sigma=3,border=constant,value=0.5"}, 97, false,
                                 Algorithm::fft);
}

TEST(CudaStream, LeavesNoPinnedBandInTheProcessCache) {
    REQUIRE_GPU();
    // A freed pinned image stays in the process's cache (for a batch's next image of its size)...
    { Image kept(ImageShape{640, 480, 3, PixelType::u8}, HostMemory::pinned); }
    ASSERT_GT(kept_pinned_bytes(), 0u);
    // ...which a streamed run empties before it starts and when it ends: its band images, of two shapes
    // (1001 rows in bands of 64), are given back to the system, not kept outside its memory budget.
    expect_streamed_equals_whole(test::random_image(517, 1001, 1, PixelType::u16, 9), {"gaussian:sigma=2"}, 64, false);
    EXPECT_EQ(kept_pinned_bytes(), 0u);
}

// NaN in morphology (SPEC.md): bands with halos give the reference's values on an f32 image with NaN holes
// larger than the elements, scattered NaN and infinities. Compared as values: any NaN matches any NaN.
TEST(CudaStream, MorphologyOnNaNHolesInBands) {
    REQUIRE_GPU();
    Image img = test::random_image(301, 240, 3, PixelType::f32, 12);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (int y = 0; y < img.height(); ++y)
        for (int k = 0; k < img.width() * img.channels(); ++k) {
            const int r = (y * 131 + k * 17) % 31;
            if (r < 2) img.row<float>(y)[k] = r ? inf : -inf;
            if (r == 2) img.row<float>(y)[k] = nan;
        }
    for (int y = 50; y < 110; ++y)  // 40 x 60 holes, one across several band seams
        for (int k = 30 * 3; k < 70 * 3; ++k) img.row<float>(y)[k] = img.row<float>(y + 100)[k + 450] = nan;
    const std::vector<std::vector<std::string>> pipelines = {
        {"dilate:se=rect:9x9", "erode:se=disk:3"}, {"open:se=ellipse:7x5,border=reflect"}, {"gradient:se=cross:5x5"},
        {"erode:se=rect:3x3,iterations=4"}, {"tophat:se=rect:101x3,border=wrap"}};
    for (const auto& specs : pipelines) {
        TempDir dir;
        const std::string in = (dir.path / "in.pfm").string(), out = (dir.path / "out.raw").string();
        write_image(in, img);
        const Pipeline p(specs);
        StreamOptions so;
        so.run.backend = Backend::cuda;
        so.band_rows = 23;
        const StreamReport r = stream_filter(in, out, p, so);
        EXPECT_GT(r.bands, 1);
        const std::string streamed = read_bytes(out);
        Image got(img.shape());
        ASSERT_EQ(streamed.size(), std::size_t(img.shape().row_bytes()) * std::size_t(img.height())) << specs[0];
        for (int y = 0; y < img.height(); ++y)
            std::memcpy(got.view().row_bytes(y), streamed.data() + std::size_t(y) * img.shape().row_bytes(), img.shape().row_bytes());
        EXPECT_TRUE(test::same_samples(got, p.run(img, {.backend = Backend::reference}))) << specs[0];
    }
}

// A raw volume streamed in z-slabs on the CUDA backend gives the whole run's bits: the fused volume pass runs in
// both (its steps never split), and a z step that wraps runs as two passes in both.
TEST(CudaStream, VolumesInZSlabsGiveTheWholeRunsBits) {
    REQUIRE_GPU();
    TempDir dir;
    const int w = 131, h = 47, d = 37;
    const Image rows = test::random_image(w, h * d, 1, PixelType::u16, 8);
    const std::string in = (dir.path / "in.raw").string(), out = (dir.path / "out.raw").string();
    {
        std::ofstream f(in, std::ios::binary);
        f << rows_of(rows);
    }
    ImageShape vs{w, h, 1, PixelType::u16, d};
    Image volume(vs);
    for (int r = 0; r < int(vs.rows()); ++r) std::memcpy(volume.view().row_bytes(r), rows.view().row_bytes(r), vs.row_bytes());
    for (const std::string spec : {"gaussian:sigma=2,sigma_z=1", "gaussian:sigma=1.5,sigma_z=1,border=wrap",
                                   "gaussian:sigma=1,sigma_z=0.7,border=constant,value=300"}) {
        const Pipeline p({spec});
        RunOptions cuda;
        cuda.backend = Backend::cuda;
        const Image whole = p.run(volume, cuda);
        StreamOptions so;
        so.run = cuda;
        so.raw = std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(d) + "x1:u16";
        so.band_rows = 5 * h;  // slabs of 5 planes
        const StreamReport r = stream_filter(in, out, p, so);
        EXPECT_GT(r.bands, 1) << spec;
        std::string want;
        for (int y = 0; y < int(vs.rows()); ++y)
            want.append(reinterpret_cast<const char*>(whole.view().row_bytes(y)), vs.row_bytes());
        const std::string got = read_bytes(out);
        ASSERT_EQ(got.size(), want.size()) << spec;
        int worst = 0;
        std::size_t first = got.size(), count = 0;
        for (std::size_t i = 0; i + 1 < got.size(); i += 2) {
            std::uint16_t a, b;
            std::memcpy(&a, got.data() + i, 2);
            std::memcpy(&b, want.data() + i, 2);
            if (a != b) worst = std::max(worst, std::abs(int(a) - int(b))), first = std::min(first, i / 2), ++count;
        }
        EXPECT_EQ(count, 0u) << spec << ": slabs differ from the whole CUDA run at " << count << " voxels, by up to "
                             << worst << ", the first at plane " << (first / (std::size_t(w) * h)) << " row "
                             << (first / w) % h << " x " << first % w;
    }
}
