// Rank filters on the fast CPU executor (src/cpu/fast_rank*.cpp, simd_rank*.cpp) against the reference, bit
// for bit: the network kernels (compiled squares, interpreted programs for other shapes), the histogram
// kernels (u8 columns and runs, u16 runs, f32 key histograms) and the select fallback, over median,
// percentile and rank, u8 / u16 / f32, 1-4 channels, every border, element shapes and files, tiny images,
// windows larger than the image, f32 NaN holes, signed zeros and infinities, thread counts and SIMD targets.
// Each case also checks that the plan names the kernel that runs (rank_kernel_for).
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "apron/ops.hpp"
#include "plan/plan.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

constexpr PixelType kTypes[] = {PixelType::u8, PixelType::u16, PixelType::f32};

Executor& reference() { return test::reference_executor(); }
Executor& fast() { return test::fast_cpu_executor(); }

RankPlan rank_plan(const RankStep& s, const ImageShape& shape) { return test::kind_plan<RankPlan>(s, shape); }

int cells(const Mask& e) {
    int n = 0;
    for (double w : e.weights) n += w != 0;
    return n;
}

Mask element(const std::string& spec) { return structuring_element(spec); }

// A random 0/1 element with at least one cell; `fill` of its cells set on average.
Mask random_element(int w, int h, double fill, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<double> v(std::size_t(w) * h);
    for (double& x : v) x = std::uniform_real_distribution<double>(0, 1)(rng) < fill ? 1 : 0;
    v[std::size_t(rng() % v.size())] = 1;
    return Mask(w, h, v);
}

enum class Which { median, low, high, percentile };
int rank_for(Which which, int n, std::uint32_t seed) {
    switch (which) {
    case Which::median: return n / 2;
    case Which::low: return 0;
    case Which::high: return n - 1;
    case Which::percentile: return std::min(n - 1, int(std::floor(double(n) * double(seed % 101) / 100.0)));
    }
    return 0;
}

RankStep rank_step(const Mask& e, int rank, BorderMode border = BorderMode::reflect, double value = 0) {
    RankStep s;
    s.element = e;
    s.rank = rank;
    s.border = border;
    s.border_value = value;
    return s;
}

std::string describe(const RankStep& s, const Image& in, const std::string& what) {
    return what + ": " + std::to_string(s.element.width) + "x" + std::to_string(s.element.height) + " anchor " +
           std::to_string(s.element.anchor_x) + "," + std::to_string(s.element.anchor_y) + " rank " + std::to_string(s.rank) +
           "/" + std::to_string(cells(s.element)) + " " + to_string(in.type()) + " " + std::to_string(in.width()) + "x" +
           std::to_string(in.height()) + "x" + std::to_string(in.channels()) + " border " + to_string(s.border);
}

// The fast executor against the reference, bit for bit, on a view into a larger image (rows off vector
// boundaries) writing into a view of another; `kernel`: the kernel name the plan must give ("" any).
void check(const RankStep& s, const Image& in, const std::string& what, const std::string& kernel = "",
           Executor& ex = fast()) {
    const RankPlan p = rank_plan(s, in.shape());
    if (!kernel.empty()) EXPECT_EQ(p.kernel.family, kernel) << describe(s, in, what) << " detail " << p.kernel.detail;
    Image want(in.shape());
    reference().rank(p, in.view(), want.view());
    Image src_store(in.width() + 3, in.height() + 2, in.channels(), in.type());
    ConstImageView src = ConstImageView(src_store.view()).roi(1, 1, in.width(), in.height());
    for (int y = 0; y < in.height(); ++y)
        std::memcpy(const_cast<std::byte*>(src.row_bytes(y)), in.view().row_bytes(y), in.shape().row_bytes());
    Image out_store(in.width() + 5, in.height() + 3, in.channels(), in.type());
    ImageView out = out_store.view().roi(3, 2, in.width(), in.height());
    ex.rank(p, src, out);
    EXPECT_TRUE(test::identical(want.view(), out)) << describe(s, in, what) << " kernel " << p.kernel.name();
}

// f32 images with every special value: NaN holes (a block, a full row, a full column, scattered), -0 and
// +0, infinities.
Image special_f32(int w, int h, int channels, std::uint32_t seed) {
    Image in = test::random_image(w, h, channels, PixelType::f32, seed);
    std::mt19937 rng(seed);
    const int C = channels;
    for (int y = 0; y < h; ++y)
        for (int k = 0; k < w * C; ++k) {
            float& v = in.row<float>(y)[k];
            const unsigned r = rng() % 40;
            if (r == 0) v = NAN;
            else if (r == 1) v = -0.0f;
            else if (r == 2) v = 0.0f;
            else if (r == 3) v = INFINITY;
            else if (r == 4) v = -INFINITY;
            else if (r < 12) v = float(int(v * 4)) / 4;  // repeats: ties between equal samples
        }
    for (int y = h / 3; y < std::min(h, h / 3 + 9); ++y)  // a hole larger than most windows: all-NaN windows
        for (int x = w / 4; x < std::min(w, w / 4 + 9); ++x)
            for (int c = 0; c < C; ++c) in.row<float>(y)[std::size_t(x) * C + c] = NAN;
    if (h > 2)
        for (int k = 0; k < w * C; ++k) in.row<float>(h - 2)[k] = NAN;
    for (int y = 0; y < h; ++y) in.row<float>(y)[std::size_t(w - 1) * C] = NAN;
    return in;
}

} // namespace

// Every rank of the compiled squares (3 x 3, 5 x 5) and the 7 x 7 median, and other 7 x 7 ranks (interpreted).
TEST(CpuRank, SquaresEveryRank) {
    int k = 0;
    for (int size : {3, 5, 7})
        for (int rank = 0; rank < size * size; ++rank) {
            if (size == 7 && rank % 6 != 0 && rank != 24) continue;
            const PixelType t = kTypes[k % 3];
            const Image in = test::random_image(97 + k % 5, 11 + size, 1 + k % 4, t, 100 + k);
            const RankStep s = rank_step(element("rect:" + std::to_string(size) + "x" + std::to_string(size)), rank,
                                         test::all_borders[k % 5], 17);
            check(s, in, "square", "cpu.rank_network");
            ++k;
        }
}

// The benchmark's medians on every type, channel count and border, on rows long enough for several vectors.
TEST(CpuRank, MedianSquaresEveryBorderChannelAndType) {
    int k = 0;
    for (int size : {3, 5, 7})
        for (PixelType t : kTypes)
            for (int c = 1; c <= 4; ++c)
                for (BorderMode b : test::all_borders) {
                    const Image in = test::random_image(150 + 7 * c, 9, c, t, 300 + k);
                    const RankStep s = rank_step(element("rect:" + std::to_string(size)), size * size / 2, b,
                                                 t == PixelType::f32 ? -0.25 : 200);
                    check(s, in, "median square", "cpu.rank_network");
                    ++k;
                }
}

// Shapes of up to 7 x 7 cells (interpreted programs over the element's columns), rectangles that are not
// compiled squares, anchors off centre.
TEST(CpuRank, SmallShapes) {
    const std::vector<std::string> shapes = {"rect:1x1", "rect:2x3", "rect:3x2", "rect:4x4", "rect:7x1", "rect:1x7", "rect:6x7",
                                             "cross:3x3", "cross:5x5", "cross:7x3", "ellipse:5x5", "ellipse:7x5", "ellipse:7x7",
                                             "disk:1", "disk:2", "disk:3"};
    int k = 0;
    for (const std::string& shape : shapes)
        for (Which which : {Which::median, Which::low, Which::high, Which::percentile}) {
            Mask e = element(shape);
            if (k % 3 == 1) e.anchor_x = 0;
            if (k % 3 == 2) e.anchor_y = e.height - 1;
            const PixelType t = kTypes[k % 3];
            const Image in = test::random_image(70 + k % 9, 13, 1 + k % 4, t, 500 + k);
            const RankStep s = rank_step(e, rank_for(which, cells(e), 37 * k + 11), test::all_borders[k % 5], 5);
            check(s, in, shape, "cpu.rank_network");
            ++k;
        }
}

// Random element masks, small (network) and larger (histograms, select for f32).
TEST(CpuRank, RandomElements) {
    int k = 0;
    for (auto [w, h] : {std::pair{3, 3}, std::pair{5, 4}, std::pair{7, 7}, std::pair{2, 7}, std::pair{9, 8}, std::pair{13, 11},
                        std::pair{4, 17}})
        for (double fill : {0.2, 0.6, 0.95})
            for (PixelType t : kTypes) {
                const Mask e = random_element(w, h, fill, 900 + k);
                const Image in = test::random_image(41 + k % 7, 19, 1 + k % 4, t, 1000 + k);
                const RankStep s = rank_step(e, rank_for(Which(k % 4), cells(e), 13 * k), test::all_borders[k % 5], 3);
                check(s, in, "random element");
                ++k;
            }
}

// Large windows: rectangles (u8 column histograms), disks and ellipses (runs), on every type.
TEST(CpuRank, LargeWindows) {
    const std::vector<std::string> shapes = {"rect:8x8", "rect:9x9", "rect:15x15", "rect:31x31", "rect:31x3", "rect:2x40", "disk:7",
                                             "disk:15", "ellipse:21x9", "cross:11x11"};
    int k = 0;
    for (const std::string& shape : shapes)
        for (PixelType t : kTypes) {
            const Mask e = element(shape);
            const Image in = test::random_image(61 + k % 5, 37, 1 + k % 4, t, 1500 + k);
            const RankStep s = rank_step(e, rank_for(Which(k % 4), cells(e), 7 * k + 3), test::all_borders[k % 5], 9);
            check(s, in, shape);
            ++k;
        }
}

// Every border mode with every kernel kind, constant with a value inside and outside the samples' range.
TEST(CpuRank, EveryBorderEveryKernel) {
    int k = 0;
    for (const std::string& shape : {"rect:3x3", "rect:5x5", "disk:2", "rect:9x9", "disk:7"})
        for (PixelType t : kTypes)
            for (BorderMode b : test::all_borders)
                for (double value : {0.0, 1.0, 77.0, -3.5}) {
                    if (b != BorderMode::constant && value != 0) continue;
                    if (t != PixelType::f32 && value < 0) continue;
                    const Mask e = element(shape);
                    const Image in = test::random_image(23, 17, 1 + k % 3, t, 2000 + k);
                    check(rank_step(e, cells(e) / 2, b, value), in, "border");
                    check(rank_step(e, cells(e) / 5, b, value), in, "border");
                    ++k;
                }
}

// One pixel, one row, one column, odd sizes, windows larger than the image in both directions.
TEST(CpuRank, TinyImagesAndHugeWindows) {
    int k = 0;
    for (auto [w, h] : {std::pair{1, 1}, std::pair{1, 9}, std::pair{11, 1}, std::pair{3, 2}, std::pair{5, 7}})
        for (const std::string& shape : {"rect:3x3", "rect:5x5", "rect:7x7", "disk:2", "rect:9x9", "disk:15", "rect:1x31"})
            for (PixelType t : kTypes) {
                const Mask e = element(shape);
                const Image in = test::random_image(w, h, 1 + k % 4, t, 2500 + k);
                check(rank_step(e, rank_for(Which(k % 4), cells(e), 3 * k), test::all_borders[k % 5], 4), in, "tiny");
                ++k;
            }
}

// f32: NaN holes (windows wholly NaN give NaN), NaN border values, -0 / +0 told apart, infinities, repeats.
TEST(CpuRank, F32SpecialValues) {
    int k = 0;
    for (const std::string& shape : {"rect:3x3", "rect:5x5", "rect:7x7", "cross:5x5", "disk:3", "rect:9x9", "disk:7", "rect:31x31"})
        for (int c : {1, 3})
            for (Which which : {Which::median, Which::low, Which::high, Which::percentile}) {
                const Mask e = element(shape);
                const Image in = special_f32(47 + k % 5, 29, c, 3000 + k);
                const BorderMode b = test::all_borders[k % 5];
                const double value = k % 2 ? NAN : -0.0;
                check(rank_step(e, rank_for(which, cells(e), 17 * k + 5), b, value), in, "f32 special " + shape);
                ++k;
            }
}

// Squares with the anchor off centre (every corner), on the compiled sweeps.
TEST(CpuRank, AnchoredSquares) {
    int k = 0;
    for (int size : {3, 5, 7})
        for (auto [ax, ay] : {std::pair{0, 0}, std::pair{size - 1, 0}, std::pair{0, size - 1}, std::pair{size - 1, size - 1}})
            for (PixelType t : kTypes) {
                Mask e = element("rect:" + std::to_string(size));
                e.anchor_x = ax;
                e.anchor_y = ay;
                const Image in = t == PixelType::f32 ? special_f32(140, 19, 1 + k % 4, 4000 + k)
                                                     : test::random_image(140, 19, 1 + k % 4, t, 4000 + k);
                check(rank_step(e, size * size / 2, test::all_borders[k % 5], 6), in, "anchored square", "cpu.rank_network");
                ++k;
            }
}

// The rarer paths of the histogram kernels: u8 windows of 65536 cells and more (32-bit column counts), f32
// windows so tall that their rows of keys would pass the ring's limit (read through the column map instead).
TEST(CpuRank, HistogramLimits) {
    const Image u8 = test::random_image(20, 12, 2, PixelType::u8, 51);
    check(rank_step(element("rect:256x256"), 65536 / 3, BorderMode::reflect), u8, "u8 65536 cells", "cpu.rank_histogram");
    check(rank_step(element("rect:257x255"), 255 * 257 - 1, BorderMode::constant, 200), u8, "u8 65535 cells", "cpu.rank_histogram");
    const Image f32 = special_f32(3700, 3, 1, 52);
    check(rank_step(element("rect:1x1101"), 550, BorderMode::mirror), f32, "f32 tall window", "cpu.rank_keyhist");
    check(rank_step(element("rect:3x21"), 31, BorderMode::wrap), special_f32(3700, 30, 1, 53), "f32 wide image", "cpu.rank_keyhist");
}

// A NaN border value is a missing sample (constant border) even where the image holds no NaN.
TEST(CpuRank, F32NanBorderValue) {
    const Image in = test::random_image(150, 17, 2, PixelType::f32, 61);
    for (const std::string& shape : {"rect:3x3", "rect:5x5", "rect:7x7", "disk:2", "cross:7x5", "rect:9x9", "disk:7"}) {
        const Mask e = element(shape);
        for (int rank : {0, cells(e) / 2, cells(e) - 1}) check(rank_step(e, rank, BorderMode::constant, NAN), in, "NaN border " + shape);
    }
}

// Results do not depend on the thread count, nor on strips of a wide image.
TEST(CpuRank, ThreadCounts) {
    const Image wide = test::random_image(3000, 23, 3, PixelType::u8, 7);
    const Image f = special_f32(700, 41, 1, 8);
    const Image u16 = test::random_image(501, 67, 2, PixelType::u16, 9);
    const Image rgba = special_f32(2100, 21, 4, 10);  // strips: the kernels cut rows this wide
    for (const Image* in : {&wide, &f, &u16, &rgba})
        for (const std::string& shape : {"rect:3x3", "rect:5x5", "ellipse:5x7", "rect:15x15", "disk:7"}) {
            const Mask e = element(shape);
            const RankStep s = rank_step(e, cells(e) / 2, BorderMode::mirror);
            const RankPlan p = rank_plan(s, in->shape());
            Image want(in->shape());
            reference().rank(p, in->view(), want.view());
            for (int threads : {1, 3}) {
                auto ex = make_cpu_executor(threads);
                Image got(in->shape());
                ex->rank(p, in->view(), got.view());
                EXPECT_TRUE(test::identical(want.view(), got.view())) << describe(s, *in, "threads " + std::to_string(threads));
            }
        }
}

// The plan names the kernel that runs: the network for small windows (compiled squares by size), histograms
// for larger u8 / u16 ones, key histograms for larger f32 ones.
TEST(CpuRank, PlanNamesTheKernel) {
    const ImageShape u8{64, 64, 1, PixelType::u8}, u16{64, 64, 1, PixelType::u16}, f32{64, 64, 1, PixelType::f32};
    auto kernel = [](const std::string& shape, const ImageShape& sh, int rank = -1) {
        const Mask e = element(shape);
        const RankPlan p = rank_plan(rank_step(e, rank < 0 ? cells(e) / 2 : rank), sh);
        return p.kernel.name();
    };
    EXPECT_EQ(kernel("rect:3x3", u8), "cpu.rank_network 3x3");
    EXPECT_EQ(kernel("rect:5x5", f32), "cpu.rank_network 5x5");
    EXPECT_EQ(kernel("rect:7x7", u16), "cpu.rank_network 7x7");
    EXPECT_EQ(kernel("rect:7x7", u16, 3), "cpu.rank_network cells=49");
    EXPECT_EQ(kernel("disk:2", u8), "cpu.rank_network cells=13");
    EXPECT_EQ(kernel("rect:15x15", u8), "cpu.rank_histogram u8 columns");
    EXPECT_EQ(kernel("disk:15", u8), "cpu.rank_histogram u8 runs");
    EXPECT_EQ(kernel("rect:15x15", u16), "cpu.rank_histogram u16 runs");
    EXPECT_EQ(kernel("disk:15", f32), "cpu.rank_keyhist f32 runs");
}

// Every SIMD level compiled in gives the reference's results.
TEST(CpuRank, EverySimdTargetMatchesReference) {
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        auto ex = make_cpu_executor(2);
        int k = 0;
        for (PixelType t : kTypes)
            for (const std::string& shape : {"rect:3x3", "rect:5x5", "rect:7x7", "disk:2", "rect:9x9", "disk:7"}) {
                const Mask e = element(shape);
                const Image in = t == PixelType::f32 ? special_f32(131, 12, 1 + k % 4, 70 + k) : test::random_image(131, 12, 1 + k % 4, t, 70 + k);
                check(rank_step(e, rank_for(Which(k % 4), cells(e), k), test::all_borders[k % 5], 2), in,
                      std::string(hwy::TargetName(target)), "", *ex);
                ++k;
            }
    }
    hwy::SetSupportedTargetsForTest(0);
}

// The operations as the registry builds them: median, percentile and rank with their parameters.
TEST(CpuRank, Operations) {
    const Image u8 = test::random_image(90, 30, 3, PixelType::u8, 41);
    const Image f32 = special_f32(90, 30, 1, 42);
    const std::string diamond = test::source_path("samples/masks/diamond5x5.se");  // an element file
    for (const std::string& spec : {std::string("median"), std::string("median:se=rect:5x5,border=nearest"), std::string("median:se=disk:3"),
                                    std::string("median:se=rect:4x2,border=wrap"), std::string("median:se=cross:5x5,border=constant,value=7"),
                                    std::string("percentile:p=25"), std::string("percentile:p=100,se=rect:2x3"),
                                    std::string("percentile:p=90,se=ellipse:7x5,border=nearest"), std::string("rank:r=0"),
                                    std::string("rank:r=-1,se=disk:2"), std::string("rank:r=3,se=rect:3x2,border=mirror"),
                                    std::string("median:se=rect:21x21"), std::string("percentile:p=10,se=disk:9"),
                                    "median:se=" + diamond + ",border=mirror", "percentile:p=70,se=" + diamond}) {
        const OpProgram prog = parse_operation(spec);
        const RankStep s = std::get<RankStep>(prog.steps.at(0).action);
        check(s, u8, spec);
        check(s, f32, spec);
    }
}
