// Rectangle morphology on CUDA (src/cuda/morph_rect*.cu: the fused kernel, its fast interior path and the
// separable passes for elements beyond 64) against the CPU and reference backends: every pixel type, 1-4
// channels, odd and even rectangles and lines up to 101, masks larger than the image, every border,
// device ROIs that are not aligned, f32 special values, and the derived operations. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#if APRON_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "apron/pipeline.hpp"
#include "plan/plan.hpp"
#if APRON_HAVE_CUDA
#include "cuda/morph_rect.hpp"
#include "cuda/morph_rect_fast.hpp"
#endif
#include "gpu_test_morph_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

std::string spec(const char* kind, const std::string& rect, const std::string& border) {
    return std::string(kind) + ":se=rect:" + rect + border;
}

Image run_on(const std::string& op, ConstImageView in, Backend b) { return Pipeline({op}).run(in, {.backend = b}); }

std::string rect_name(int w, int h) { return std::to_string(w) + 'x' + std::to_string(h); }

// NaN, +inf and -inf at scattered samples of an f32 image, and a NaN block wider than most windows.
void add_special_values(Image& in) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (int y = 0; y < in.height(); ++y)
        for (int k = 0; k < in.width() * in.channels(); ++k) {
            const int r = (y * 131 + k * 17) % 29;
            if (r == 0) in.row<float>(y)[k] = nan;
            if (r == 1) in.row<float>(y)[k] = inf;
            if (r == 2) in.row<float>(y)[k] = -inf;
        }
    for (int y = in.height() / 3; y < std::min(in.height(), in.height() / 3 + 9); ++y)
        for (int k = 0; k < std::min(in.width() * in.channels(), 120); ++k) in.row<float>(y)[k] = nan;
}

Image random_input(int w, int h, int c, PixelType t, std::uint32_t seed) {
    Image in = test::random_image(w, h, c, t, seed);
    if (t == PixelType::f32) add_special_values(in);
    return in;
}

// Element sizes of the sweeps: lines, even sides, the fast kernel's widths per channel count (7, 9, 14,
// 16), the fused kernel's limit (64) and the separable passes beyond it (65, 101).
const std::vector<std::pair<int, int>> sweep_sizes = {
    {2, 1},  {1, 2},  {3, 3},   {7, 7},  {4, 6},   {9, 9},   {14, 3},  {16, 16},  {17, 17}, {33, 5},
    {5, 33}, {2, 16}, {64, 64}, {65, 3}, {3, 65},  {65, 65}, {101, 7}, {7, 101}, {101, 101}, {1, 101}, {101, 1}};

} // namespace

TEST(CudaMorphRect, PlansUseTheRectangleKernel) {
    const ImageShape shape{64, 64, 1, PixelType::u8};
    for (const char* rect : {"3x3", "4x2", "31x31", "1x9", "9x1", "64x3"}) {
        const std::string d = Pipeline({spec("dilate", rect, "")}).describe(shape, {.backend = Backend::cpu});
        EXPECT_NE(d.find("separable-rect"), std::string::npos) << rect << ": " << d;
    }
    // 1x1 is a copy: planned direct.
    EXPECT_EQ(Pipeline({"erode:se=rect:1x1"}).describe(shape, {.backend = Backend::cpu}).find("separable-rect"),
              std::string::npos);
}

TEST(CudaMorphRect, MatchesCpuAndReferenceOnSmallImages) {
    REQUIRE_GPU();
    const std::vector<std::pair<int, int>> sizes = {{1, 1}, {1, 37}, {37, 1}, {7, 5}, {61, 43}};
    const char* rects[] = {"1x1", "3x3", "4x2", "5x5", "17x5", "31x31", "1x9", "9x1", "64x3", "2x1", "1x2", "6x8"};
    std::uint32_t seed = 100;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c)
            for (auto [w, h] : sizes) {
                const Image in = test::random_image(w, h, c, t, ++seed);
                for (const char* rect : rects)
                    for (const char* kind : {"dilate", "erode"})
                        for (const std::string& border : test::morph_borders(t)) {
                            const std::string op = spec(kind, rect, border);
                            const Image gpu = run_on(op, in, Backend::cuda);
                            ASSERT_TRUE(test::same_samples(gpu, run_on(op, in, Backend::cpu)))
                                << op << ' ' << test::type_name(t) << " c" << c << ' ' << w << 'x' << h;
                            ASSERT_TRUE(test::same_samples(gpu, run_on(op, in, Backend::reference)))
                                << op << ' ' << test::type_name(t) << " c" << c << ' ' << w << 'x' << h;
                        }
            }
}

TEST(CudaMorphRect, MatchesCpuOnALargeImage) {
    REQUIRE_GPU();
    std::uint32_t seed = 500;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c) {
            const Image in = test::random_image(1031, 517, c, t, ++seed);
            for (const char* rect : {"3x3", "4x2", "5x5", "17x5", "31x31", "1x9", "9x1", "64x3", "3x64", "64x64"})
                for (const char* kind : {"dilate", "erode"})
                    for (const std::string& border : {test::morph_borders(t)[0], test::morph_borders(t)[1], test::morph_borders(t)[3], test::morph_borders(t)[5]}) {
                        const std::string op = spec(kind, rect, border);
                        EXPECT_TRUE(test::same_samples(run_on(op, in, Backend::cuda), run_on(op, in, Backend::cpu)))
                            << op << ' ' << test::type_name(t) << " c" << c;
                    }
        }
}

// NaN is a missing sample (a window of NaN only gives NaN), infinities stay, as in the reference.
TEST(CudaMorphRect, FloatSpecialValuesFollowTheReference) {
    REQUIRE_GPU();
    Image in = test::random_image(67, 29, 2, PixelType::f32, 7);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (int y = 0; y < in.height(); ++y)
        for (int k = 0; k < in.width() * in.channels(); ++k) {
            const int r = (y * 131 + k * 17) % 23;
            if (r == 0) in.row<float>(y)[k] = nan;
            if (r == 1) in.row<float>(y)[k] = inf;
            if (r == 2) in.row<float>(y)[k] = -inf;
        }
    // A block of NaN wider than the window: outputs whose whole window is NaN.
    for (int y = 10; y < 20; ++y)
        for (int k = 0; k < 40; ++k) in.row<float>(y)[k] = nan;
    for (const char* rect : {"3x3", "4x2", "9x1", "1x5"})
        for (const char* kind : {"dilate", "erode"})
            for (const std::string& border : {std::string(), std::string(",border=reflect"), std::string(",border=constant,value=-3.4e38")}) {
                const std::string op = spec(kind, rect, border);
                const Image gpu = run_on(op, in, Backend::cuda);
                EXPECT_TRUE(test::same_samples(gpu, run_on(op, in, Backend::reference))) << op;
                EXPECT_TRUE(test::same_samples(gpu, run_on(op, in, Backend::cpu))) << op;
            }
}

// SPEC.md, Morphology: a NaN sample is missing; an output whose window holds no other sample is NaN (not
// -3.4e38 / +3.4e38), and -inf / +inf come out as they are. The fused kernel (sides up to 64) and the
// separable passes (65 and beyond) against the reference, on NaN holes larger than the element, scattered
// NaN and infinities, images all NaN or infinite, 1x1 and one-row images, every border, 1, 3 and 4 channels.
TEST(CudaMorphRect, NaNIsAMissingSample) {
    REQUIRE_GPU();
    std::uint32_t seed = 2600;
    for (int c : {1, 3, 4})
        for (const auto& [name, in] : test::nan_images(c, ++seed))
            for (const char* rect : {"3x3", "4x2", "5x7", "17x13", "1x9", "65x3", "3x101"})
                for (const char* kind : {"dilate", "erode"})
                    for (auto mode : test::nan_border_modes()) {
                        const std::string op = spec(kind, rect, test::border_option(mode));
                        const Image gpu = run_on(op, in, Backend::cuda);
                        ASSERT_TRUE(test::same_samples(gpu, run_on(op, in, Backend::reference)))
                            << op << " on " << name << " c" << c << ": differs by "
                            << test::max_abs_diff(gpu, run_on(op, in, Backend::reference));
                        if (name == "holed" && std::string(rect) != "65x3" && std::string(rect) != "3x101")
                            EXPECT_TRUE(test::hole_centre_is_nan(gpu)) << op << " c" << c;
                        if (name == "all NaN" && mode != BorderMode::constant) EXPECT_TRUE(std::isnan(gpu.row<float>(3)[0])) << op;
                        if (name == "all -inf" && mode != BorderMode::constant) EXPECT_EQ(gpu.row<float>(3)[0], -std::numeric_limits<float>::infinity()) << op;
                    }
}

// The derived operations on NaN holes: OpenCV's morphologyEx over the NaN rule, gradient / tophat / blackhat
// by float arithmetic (NaN - x = NaN, inf - inf = NaN), iterations merged into one rectangle or not.
TEST(CudaMorphRect, DerivedOperationsWithNaN) {
    REQUIRE_GPU();
    for (int c : {1, 3})
        for (const auto& [name, in] : test::nan_images(c, 2700))
            for (const char* op : {"open:se=rect:5x5", "close:se=rect:5x5", "gradient:se=rect:3x3", "tophat:se=rect:7x3",
                                   "blackhat:se=rect:3x7,border=reflect", "dilate:se=rect:3x3,iterations=3",
                                   "erode:se=rect:3x3,iterations=2,border=wrap"}) {
                const Image gpu = run_on(op, in, Backend::cuda);
                EXPECT_TRUE(test::same_samples(gpu, run_on(op, in, Backend::reference))) << op << " on " << name << " c" << c;
            }
}

TEST(CudaMorphRect, DerivedOperations) {
    REQUIRE_GPU();
    test::expect_derived_operations_match({"open:se=rect:7x7", "close:se=rect:7x7", "gradient:se=rect:7x7", "tophat:se=rect:7x7",
                                          "blackhat:se=rect:6x4,border=wrap", "dilate:se=rect:5x3,iterations=3"},
                                         "separable-rect", Backend::cpu);
}

TEST(CudaMorphRect, HostRoiViews) {
    REQUIRE_GPU();
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
        const Image big = test::random_image(300, 200, 3, t, 12);
        const ConstImageView roi = big.view().roi(11, 7, 257, 131);
        for (const char* op : {"dilate:se=rect:9x7", "erode:se=rect:4x2,border=mirror", "dilate:se=rect:31x31,border=nearest"})
            EXPECT_TRUE(test::same_samples(run_on(op, roi, Backend::cuda), run_on(op, roi, Backend::cpu))) << op;
    }
}

#if APRON_HAVE_CUDA
namespace {

struct DeviceBuffer {
    std::byte* data = nullptr;
    std::size_t pitch = 0;
    ImageShape shape;
    DeviceBuffer(const ImageShape& s, ConstImageView host = {}) : shape(s) {
        void* p = nullptr;
        EXPECT_EQ(cudaMallocPitch(&p, &pitch, s.row_bytes(), std::size_t(s.height)), cudaSuccess);
        data = static_cast<std::byte*>(p);
        if (host.data)
            EXPECT_EQ(cudaMemcpy2D(data, pitch, host.data, host.pitch, s.row_bytes(), std::size_t(s.height),
                                   cudaMemcpyHostToDevice),
                      cudaSuccess);
    }
    ~DeviceBuffer() { cudaFree(data); }
    ImageView view() { return ImageView{data, shape, pitch, Memory::device}; }
};

} // namespace

// Device views at offsets: rows not 4-byte aligned (per-sample staging and scalar stores in every block),
// 4- but not 16-byte aligned, and 16-byte aligned (the fast kernel), 1-4 channels, both kernel families.
TEST(CudaMorphRect, UnalignedDeviceViews) {
    REQUIRE_GPU();
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c) {
            const Image in = test::random_image(333, 211, c, t, 13);
            DeviceBuffer d_in(in.shape(), in), d_out(in.shape());
            const ImageShape roi_shape{201, 167, c, t};
            // Offsets (in pixels) that break 4-byte alignment, keep 4 but break 16, and keep 16 (pitches from
            // cudaMallocPitch are multiples of 16): the fast kernel runs in the last only.
            for (auto [ix, ox] : std::vector<std::pair<int, int>>{{3, 1}, {4, 4}, {16, 16}})
                for (const char* op : {"dilate:se=rect:5x5", "erode:se=rect:17x5,border=reflect",
                                       "dilate:se=rect:4x2,border=constant,value=3", "erode:se=rect:7x7,border=wrap",
                                       "dilate:se=rect:65x9,border=mirror", "erode:se=rect:3x101"}) {
                    const Pipeline p({op});
                    ImageView out = d_out.view().roi(ox, 3, 201, 167);
                    p.run(d_in.view().roi(ix, 5, 201, 167), out, {.backend = Backend::cuda});
                    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
                    const Image expected = p.run(in.view().roi(ix, 5, 201, 167), {.backend = Backend::cpu});
                    EXPECT_EQ(expected.shape(), roi_shape);
                    EXPECT_TRUE(test::same_samples(test::download(out), expected))
                        << op << ' ' << test::type_name(t) << " c" << c << " offsets " << ix << ',' << ox;
                }
        }
}
#endif

#if APRON_HAVE_CUDA
// The fast interior kernel takes colour: u8 and u16 with 1-4 channels up to 7x7 (more for fewer channels).
// If it silently stopped taking a case, the sweeps below would still pass on the general kernel; this fails.
TEST(CudaMorphRect, FastPathTakesColour) {
    for (PixelType t : {PixelType::u8, PixelType::u16})
        for (int c = 1; c <= 4; ++c) {
            EXPECT_TRUE(cuda::morph_rect_fast_path_takes(t, c, 7, 7)) << test::type_name(t) << " c" << c;
            EXPECT_TRUE(cuda::morph_rect_fast_path_takes(t, c, 2, 64)) << test::type_name(t) << " c" << c;
            EXPECT_TRUE(cuda::morph_rect_fast_path_takes(t, c, 1, 1)) << test::type_name(t) << " c" << c;
        }
    EXPECT_TRUE(cuda::morph_rect_fast_path_takes(PixelType::u8, 1, 16, 16));
    EXPECT_TRUE(cuda::morph_rect_fast_path_takes(PixelType::u8, 2, 14, 3));
    EXPECT_TRUE(cuda::morph_rect_fast_path_takes(PixelType::u8, 3, 9, 9));
    EXPECT_FALSE(cuda::morph_rect_fast_path_takes(PixelType::u8, 3, 10, 3));
    EXPECT_FALSE(cuda::morph_rect_fast_path_takes(PixelType::u8, 4, 8, 3));
    EXPECT_FALSE(cuda::morph_rect_fast_path_takes(PixelType::u16, 1, 3, 65));
    EXPECT_FALSE(cuda::morph_rect_fast_path_takes(PixelType::f32, 1, 3, 3));
}

// Any full rectangle is the rectangle family's: beyond 64 the separable passes, not the generic kernel.
TEST(CudaMorphRect, SupportsEveryRectangle) {
    REQUIRE_GPU();  // the shared memory limit is the device's
    for (auto [w, h] : std::vector<std::pair<int, int>>{{65, 1}, {1, 65}, {101, 101}, {3, 300}, {1001, 5}, {4097, 3}}) {
        MorphPlan plan;
        plan.algorithm = MorphAlgorithm::separable_rect;
        plan.step.element = Mask(w, h, std::vector<double>(std::size_t(w) * h, 1.0));
        for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
            plan.type = t;
            EXPECT_TRUE(cuda::morph_rect_supports(plan)) << w << 'x' << h << ' ' << test::type_name(t);
        }
    }
}
#endif

// Sweep of element sizes x 1-4 channels x u8/u16/f32 (f32 with NaN and infinities) on an image whose
// interior the fast kernel makes (odd width), each case with both kinds and one border in turn (all six
// over the sweep), against the CPU backend; the smaller elements also against the reference.
TEST(CudaMorphRect, ChannelSweepMatchesCpuAndReference) {
    REQUIRE_GPU();
    std::uint32_t seed = 900;
    int turn = 0;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c) {
            const Image in = random_input(333, 203, c, t, ++seed);
            for (auto [w, h] : sweep_sizes) {
                const std::string border = test::morph_borders(t)[std::size_t(turn++ % 6)];
                for (const char* kind : {"dilate", "erode"}) {
                    const std::string op = spec(kind, rect_name(w, h), border);
                    const Image gpu = run_on(op, in, Backend::cuda);
                    ASSERT_TRUE(test::same_samples(gpu, run_on(op, in, Backend::cpu)))
                        << op << ' ' << test::type_name(t) << " c" << c;
                    if (w * h <= 100)
                        ASSERT_TRUE(test::same_samples(gpu, run_on(op, in, Backend::reference)))
                            << op << ' ' << test::type_name(t) << " c" << c;
                }
            }
        }
}

// Elements wider and taller than the image, 1x1 and one-row / one-column images, every border: the
// separable passes and the fused kernel against the reference.
TEST(CudaMorphRect, ElementsLargerThanTheImage) {
    REQUIRE_GPU();
    std::uint32_t seed = 1300;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c)
            for (auto [iw, ih] : std::vector<std::pair<int, int>>{{1, 1}, {5, 3}, {1, 9}, {11, 1}, {70, 2}}) {
                const Image in = random_input(iw, ih, c, t, ++seed);
                for (const char* rect : {"65x65", "101x101", "101x2", "2x101", "16x17", "8x8"})
                    for (const char* kind : {"dilate", "erode"})
                        for (const std::string& border : test::morph_borders(t)) {
                            const std::string op = spec(kind, rect, border);
                            ASSERT_TRUE(test::same_samples(run_on(op, in, Backend::cuda), run_on(op, in, Backend::reference)))
                                << op << ' ' << test::type_name(t) << " c" << c << ' ' << iw << 'x' << ih;
                        }
            }
}

// Large colour images: many fast tiles, the ring around them, and the passes' block grid.
TEST(CudaMorphRect, LargeColourImagesMatchCpu) {
    REQUIRE_GPU();
    std::uint32_t seed = 1700;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c) {
            const Image in = random_input(1031, 517, c, t, ++seed);
            for (const char* rect : {"7x7", "9x9", "14x14", "16x3", "65x65", "101x101", "3x101", "101x3"})
                for (const char* kind : {"dilate", "erode"})
                    for (const std::string& border : {test::morph_borders(t)[0], test::morph_borders(t)[2], test::morph_borders(t)[5]}) {
                        const std::string op = spec(kind, rect, border);
                        EXPECT_TRUE(test::same_samples(run_on(op, in, Backend::cuda), run_on(op, in, Backend::cpu)))
                            << op << ' ' << test::type_name(t) << " c" << c;
                    }
        }
}

#if APRON_HAVE_CUDA
// Colour rectangles wider than the fast kernel's span run as a chain of fast passes (morph_rect.cu): the
// plan says so, and every width past the span up to 16, even ones with their off-centre anchor, short and
// tall, both kinds and every border in turn, on an image of many fast tiles and a ring, equal the CPU's.
TEST(CudaMorphRect, WideColourRectanglesChainFastPasses) {
    REQUIRE_GPU();
    const std::string d = Pipeline({"dilate:se=rect:15x15"})
                              .describe(ImageShape{1024, 512, 3, PixelType::u8}, {.backend = Backend::cuda});
    EXPECT_NE(d.find("fast chain"), std::string::npos) << d;
    std::uint32_t seed = 2100;
    int turn = 0;
    for (PixelType t : {PixelType::u8, PixelType::u16})
        for (int c = 2; c <= 4; ++c) {
            const Image in = random_input(1031, 203, c, t, ++seed);
            const int first = cuda::morph_fast_max_width(c) + 1;
            for (int w : {first, first + 1, 12, 15, 16}) {
                if (w > 16) continue;
                for (int h : {1, 4, 15}) {
                    const std::string border = test::morph_borders(t)[std::size_t(turn++ % 6)];
                    for (const char* kind : {"dilate", "erode"}) {
                        const std::string op = spec(kind, rect_name(w, h), border);
                        ASSERT_TRUE(test::same_samples(run_on(op, in, Backend::cuda), run_on(op, in, Backend::cpu)))
                            << op << ' ' << test::type_name(t) << " c" << c;
                    }
                }
            }
        }
}
#endif
