// Rank filters on CUDA (src/cuda/rank_filter.cu and its families) against the reference executor, bit for bit:
// median, percentile and rank; u8/u16/f32; 1-4 channels; every border (constant with a value); rectangles
// 1x1 to 31x31, disks, crosses, ellipses and random elements with holes and off-centre anchors; odd image sizes
// (1x1, 1xN, Nx1, windows larger than the image); f32 with NaN holes, scattered NaN, +-0 and +-inf; device views
// whose pointer and pitch break alignment, and ROIs of larger images. Each family (rank_tile, rank_sort,
// rank_hist, rank_bits) is checked to run where choose_rank says, and the plan to name what runs.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if APRON_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda/launch_record.hpp"
#include "cuda/rank_filter.hpp"
#endif

#include "../bench/rank_cases.hpp"
#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "plan/kinds/rank_kind.hpp"
#include "plan/morph_decompose.hpp"
#include "plan/plan.hpp"
#include "plan/step_kind.hpp"
#include "gpu_test_morph_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

Image run_on(const std::string& op, ConstImageView in, Backend b) { return Pipeline({op}).run(in, {.backend = b}); }

const char* border_names[] = {"constant", "nearest", "reflect", "mirror", "wrap"};

// ",border=MODE" (constant with a value the type holds: u8 200, u16 40000, f32 -0.0 or 0.625).
std::string border_option(int k, PixelType t) {
    const std::string mode = border_names[k % 5];
    if (mode != "constant") return ",border=" + mode;
    const std::string value = t == PixelType::u8 ? "200" : t == PixelType::u16 ? "40000" : k % 2 ? "-0.0" : "0.625";
    return ",border=constant,value=" + value;
}

// The op for `which` (0 median, 1 percentile, 2 rank) over `se`.
std::string rank_op(int which, const std::string& se, int n_hint) {
    if (which == 0) return "median:se=" + se;
    if (which == 1) return "percentile:p=" + std::string(n_hint % 2 ? "25" : "90") + ",se=" + se;
    const int n = rank_cells(structuring_element(se));  // r within -n..n-1 (a 1x1 element takes 0 only)
    return "rank:r=" + std::to_string(n < 2 ? 0 : n_hint % 3 ? -2 : 1) + ",se=" + se;
}

::testing::AssertionResult same_bits(const Image& got, const Image& expected) {
    if (test::identical(got, expected)) return ::testing::AssertionSuccess();
    for (int y = 0; y < got.height(); ++y)
        for (std::size_t k = 0; k < got.shape().row_bytes(); ++k)
            if (std::memcmp(got.view().row_bytes(y) + k, expected.view().row_bytes(y) + k, 1) != 0)
                return ::testing::AssertionFailure() << "first difference at row " << y << ", byte " << k << " of "
                                                     << got.shape().row_bytes();
    return ::testing::AssertionFailure() << "shapes differ";
}

// The CUDA backend against the reference on one op and image.
::testing::AssertionResult cuda_matches(const std::string& op, const Image& in) {
    return same_bits(run_on(op, in, Backend::cuda), run_on(op, in, Backend::reference));
}

// The plan's rank step, made by the planner for this image shape.
RankPlan planned(const std::string& op, const ImageShape& shape) {
    const ExecutionPlan plan = make_plan({parse_operation(op)}, shape, shape.type, Backend::cuda);
    return std::get<RankPlan>(plan.operations.at(0).steps.at(0).what);
}

std::string kernel_name(const std::string& op, const ImageShape& shape) { return planned(op, shape).kernel.name(); }

// f32 images with the values order matters for: NaN (holes larger than the windows and scattered), +-0, +-inf.
Image special_floats(int w, int h, int c, std::uint32_t seed) {
    Image img = test::random_image(w, h, c, PixelType::f32, seed);
    std::mt19937 rng(seed);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const float pick[] = {nan, nan, inf, -inf, 0.0f, -0.0f, 0.0f, -0.0f};
    for (int k = 0; k < w * h * c / 6; ++k) img.row<float>(int(rng() % unsigned(h)))[rng() % unsigned(w * c)] = pick[rng() % 8];
    for (int y = h / 4; y < h / 4 + std::min(h / 2, 12); ++y)  // a NaN hole
        for (int k = (w / 3) * c; k < std::min(w, w / 3 + 10) * c; ++k) img.row<float>(y)[k] = nan;
    return img;
}

using test::random_element;

RankPlan plan_for(const Mask& e, PixelType t, int rank, BorderMode border, double value) {
    RankPlan p;
    p.type = t;
    p.step.element = e;
    p.step.rank = rank;
    p.step.border = border;
    p.step.border_value = value;
    p.count = rank_cells(e);
    p.chords = element_chords(e);
    p.algorithm = p.count <= rank_network_cells && e.width <= 7 && e.height <= 7 ? RankAlgorithm::network
                  : t == PixelType::f32                                          ? RankAlgorithm::select
                                                                                 : RankAlgorithm::histogram;
    return p;
}

} // namespace

// The planner's names (no GPU needed to plan): the families and their forms.
TEST(CudaRank, PlansNameTheFamilies) {
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c : {1, 3, 4}) {
            const ImageShape s{1031, 517, c, t};
            EXPECT_EQ(kernel_name("median:se=rect:3x3", s), "cuda.rank_tile 3x3 median");
            EXPECT_EQ(kernel_name("median:se=rect:5x5", s), "cuda.rank_tile 5x5 median");
            EXPECT_EQ(kernel_name("median:se=rect:7x7", s), "cuda.rank_tile 7x7 median");
            EXPECT_EQ(kernel_name("percentile:p=25,se=rect:3x3", s), "cuda.rank_sort n=9 sort=9");
            EXPECT_EQ(kernel_name("median:se=disk:2", s), "cuda.rank_sort n=13 sort=16");
            EXPECT_EQ(kernel_name("median:se=disk:3", s), "cuda.rank_sort n=29 sort=36");
            EXPECT_EQ(kernel_name("median:se=rect:1x1", s), "cuda.rank_sort n=1 sort=9");
            EXPECT_EQ(kernel_name("median:se=rect:4x4", s), "cuda.rank_sort n=16 sort=16");
            const std::string passes = t == PixelType::u8 ? "0" : t == PixelType::u16 ? "1" : "3";
            EXPECT_EQ(kernel_name("median:se=rect:31x31", s), "cuda.rank_hist runs=31 byte_passes=" + passes);
            EXPECT_EQ(kernel_name("median:se=disk:15", s), "cuda.rank_hist runs=31 byte_passes=" + passes);
            EXPECT_EQ(kernel_name("rank:r=3,se=rect:9x9", s), "cuda.rank_hist runs=9 byte_passes=" + passes);
            // more columns than the histogram kernel takes: the radix select
            EXPECT_EQ(kernel_name("median:se=rect:401x1", s), "cuda.rank_bits");
        }
}

TEST(CudaRank, SmallWindowsMatchTheReference) {
    REQUIRE_GPU();
    const char* elements[] = {"rect:3x3", "rect:5x5", "rect:7x7", "rect:1x1", "rect:2x3", "rect:7x1", "rect:1x6",
                              "disk:2",   "disk:3",   "cross:5x5", "ellipse:7x5", "cross:3x7", "rect:4x4"};
    const std::vector<std::pair<int, int>> sizes = {{67, 45}, {1, 1}, {1, 29}, {29, 1}, {5, 3}, {133, 70}};
    std::uint32_t seed = 100;
    int k = 0;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c)
            for (auto [w, h] : sizes) {
                const Image in = test::random_image(w, h, c, t, ++seed);
                for (const char* se : elements) {
                    ++k;
                    for (const std::string& op : {rank_op(0, se, k) + border_option(k, t), rank_op(1 + k % 2, se, k) + border_option(k + 2, t)})
                        ASSERT_TRUE(cuda_matches(op, in)) << op << ' ' << test::type_name(t) << " c" << c << ' ' << w << 'x' << h;
                }
            }
}

TEST(CudaRank, LargeWindowsMatchTheReference) {
    REQUIRE_GPU();
    const char* elements[] = {"rect:9x9", "rect:31x31", "disk:7", "disk:15", "cross:11x9", "ellipse:15x9", "rect:8x1", "rect:1x12"};
    const std::vector<std::pair<int, int>> sizes = {{67, 45}, {1, 1}, {1, 40}, {40, 1}, {20, 15}};
    std::uint32_t seed = 200;
    int k = 0;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c : {1, 2, 3, 4})
            for (auto [w, h] : sizes) {
                const Image in = test::random_image(w, h, c, t, ++seed);
                for (const char* se : elements) {
                    ++k;
                    const std::string op = rank_op(k % 3, se, k) + border_option(k, t);
                    ASSERT_TRUE(cuda_matches(op, in)) << op << ' ' << test::type_name(t) << " c" << c << ' ' << w << 'x' << h;
                }
            }
}

// u16 keys over the whole range and few distinct values (ties), where the byte passes resolve the rank.
TEST(CudaRank, SixteenBitTiesAndFullRange) {
    REQUIRE_GPU();
    for (int c : {1, 3}) {
        Image in = test::random_image(71, 53, c, PixelType::u16, 9);
        for (int y = 0; y < in.height(); y += 2)
            for (int k = 0; k < in.width() * c; ++k) in.row<std::uint16_t>(y)[k] = std::uint16_t((k * 7919 + y) % 4 * 21845);
        for (const char* op : {"median:se=rect:3x3", "median:se=disk:3", "percentile:p=30,se=rect:13x13", "rank:r=5,se=disk:9",
                               "median:se=rect:31x31,border=nearest"})
            EXPECT_TRUE(cuda_matches(op, in)) << op << " c" << c;
    }
}

// SPEC.md, Rank: f32 NaN is missing (the rank among the valid ones; NaN where none is), -0 before +0.
TEST(CudaRank, FloatSpecialValues) {
    REQUIRE_GPU();
    const char* ops[] = {"median:se=rect:3x3", "median:se=rect:5x5", "median:se=rect:7x7", "median:se=disk:2",
                         "percentile:p=75,se=rect:7x7", "rank:r=0,se=cross:5x5", "rank:r=-1,se=rect:4x2",
                         "median:se=rect:9x9", "median:se=disk:7", "percentile:p=10,se=rect:15x3"};
    std::uint32_t seed = 300;
    for (int c : {1, 3, 4})
        for (auto [w, h] : std::vector<std::pair<int, int>>{{57, 43}, {1, 1}, {1, 30}, {30, 1}, {140, 37}}) {
            const Image in = special_floats(w, h, c, ++seed);
            int k = 0;
            for (const char* op : ops) {
                const std::string full = op + border_option(k++, PixelType::f32);
                ASSERT_TRUE(cuda_matches(full, in)) << full << " c" << c << ' ' << w << 'x' << h;
            }
        }
    // Images all NaN, all +inf, and the morphology suites' NaN images.
    for (int c : {1, 3})
        for (const auto& [name, in] : test::nan_images(c, 400))
            for (const char* op : {"median:se=rect:3x3", "median:se=rect:7x7", "median:se=ellipse:5x7", "median:se=disk:6",
                                   "median:se=rect:3x3,border=constant,value=-0.0", "rank:r=2,se=rect:11x11,border=mirror"})
                ASSERT_TRUE(cuda_matches(op, in)) << op << " on " << name << " c" << c;
}

#if APRON_HAVE_CUDA
namespace {

using test::DeviceImage;

// The plan on device views against the reference executor; the family that ran is the one choose_rank names.
::testing::AssertionResult device_matches(const RankPlan& p, const Image& in, int offset, int pad, const std::string& family) {
    DeviceImage d_in(in.shape(), offset, pad), d_out(in.shape(), (offset + 1) % 4, pad + 1);
    d_in.upload(in);
    Image expected(in.shape());
    make_reference_executor()->rank(p, in, expected.view());
    auto& ex = test::shared_cuda_executor();
    cuda::clear_launches();
    ex.rank(p, as_const(d_in.view), d_out.view);
    ex.synchronize();
    const std::string ran = cuda::launches().empty() ? "nothing" : cuda::launches().back().name();
    const std::string named = cuda::choose_rank(p, in.shape()).name();
    if (ran != named) return ::testing::AssertionFailure() << "ran " << ran << ", choose_rank names " << named;
    if (ran.rfind(family, 0) != 0) return ::testing::AssertionFailure() << "ran " << ran << ", expected " << family;
    return same_bits(d_out.download(), expected) << " (" << ran << ")";
}

} // namespace

// Each family on device views at every misalignment of pointer and pitch.
TEST(CudaRank, UnalignedDeviceViewsEachFamily) {
    REQUIRE_GPU();
    struct Case {
        const char* se;
        bool median;
        const char* family;
    };
    const Case cases[] = {{"rect:3x3", true, "cuda.rank_tile"}, {"rect:7x7", true, "cuda.rank_tile"},
                          {"rect:5x5", false, "cuda.rank_sort"}, {"disk:3", true, "cuda.rank_sort"},
                          {"disk:7", true, "cuda.rank_hist"},   {"rect:400x1", true, "cuda.rank_bits"}};
    std::uint32_t seed = 500;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c)
            for (int offset : {0, 1, 3})
                for (int pad : {0, 1, 5}) {
                    const Image in = t == PixelType::f32 ? special_floats(77, 23, c, ++seed) : test::random_image(77, 23, c, t, ++seed);
                    int k = 0;
                    for (const Case& cs : cases) {
                        const Mask e = structuring_element(cs.se);
                        const int n = rank_cells(e);
                        const BorderMode b = BorderMode(++k % 5);
                        const RankPlan p = plan_for(e, t, cs.median ? n / 2 : n / 3, b, t == PixelType::u16 ? 1234 : 7);
                        ASSERT_TRUE(device_matches(p, in, offset, pad, cs.family))
                            << cs.se << ' ' << test::type_name(t) << " c" << c << " offset " << offset << " pad " << pad;
                    }
                }
}

// A constant border of NaN (a plan's value; the op's parser takes no NaN) is missing as a NaN sample is.
TEST(CudaRank, NaNConstantBorderIsMissing) {
    REQUIRE_GPU();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int c : {1, 3}) {
        const Image in = special_floats(29, 17, c, 31);
        for (const char* se : {"rect:3x3", "rect:7x7", "disk:2", "rect:11x11", "disk:7"}) {
            const Mask e = structuring_element(se);
            const int n = rank_cells(e);
            for (int rank : {0, n / 2, n - 1}) {
                const RankPlan p = plan_for(e, PixelType::f32, rank, BorderMode::constant, nan);
                const std::string family = p.algorithm == RankAlgorithm::network
                                               ? (rank == n / 2 && std::string(se).rfind("rect", 0) == 0 ? "cuda.rank_tile" : "cuda.rank_sort")
                                               : "cuda.rank_hist";
                ASSERT_TRUE(device_matches(p, in, 0, 0, family)) << se << " rank " << rank << " c" << c;
            }
        }
    }
}

// ROIs of a larger host image (rows that do not start the allocation's rows), through the pipeline.
TEST(CudaRank, HostRoiViews) {
    REQUIRE_GPU();
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
        const Image big = test::random_image(300, 200, 3, t, 12);
        const ConstImageView roi = big.view().roi(11, 7, 257, 131);
        for (const char* op : {"median:se=rect:3x3", "median:se=rect:7x7,border=mirror", "percentile:p=20,se=disk:3,border=wrap",
                               "median:se=disk:15,border=nearest"})
            EXPECT_TRUE(same_bits(run_on(op, roi, Backend::cuda), run_on(op, roi, Backend::reference))) << op;
    }
}

// Random elements with holes and off-centre anchors: within 7 x 7 (rank_sort), then larger (rank_hist: vertical
// runs with gaps), every rank.
TEST(CudaRank, RandomElementsWithHolesAndAnyAnchor) {
    REQUIRE_GPU();
    std::mt19937 rng(2026);
    std::uint32_t seed = 600;
    for (int trial = 0; trial < 90; ++trial) {
        const PixelType t = trial % 3 == 0 ? PixelType::u8 : trial % 3 == 1 ? PixelType::u16 : PixelType::f32;
        const int c = 1 + trial % 4;
        const bool large = trial % 2;
        const int w = large ? 1 + int(rng() % 24) : 1 + int(rng() % 7), h = large ? 1 + int(rng() % 24) : 1 + int(rng() % 7);
        const Mask e = random_element(w, h, trial % 4 < 2 ? 0.35 : 0.8, rng);
        const int n = rank_cells(e);
        const Image in = t == PixelType::f32 && trial % 5 == 0 ? special_floats(45, 33, c, ++seed) : test::random_image(45, 33, c, t, ++seed);
        const RankPlan p = plan_for(e, t, int(rng() % unsigned(n)), BorderMode(trial % 5), t == PixelType::u8 ? 77 : 0.5);
        const std::string family = p.algorithm == RankAlgorithm::network ? "cuda.rank_sort" : "cuda.rank_hist";
        ASSERT_TRUE(device_matches(p, in, trial % 3, trial % 2, family))
            << w << 'x' << h << " anchor " << e.anchor_x << ',' << e.anchor_y << " n " << n << " rank " << p.step.rank << ' '
            << test::type_name(t) << " c" << c;
    }
}

// Many tiles and block rows (interior blocks, edges, the histogram kernel's row segments) against the CPU
// backend (the same rule, exact), on every family.
TEST(CudaRank, MatchesCpuOnALargeImage) {
    REQUIRE_GPU();
    std::uint32_t seed = 700;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c : {1, 3, 4}) {
            const Image in = test::random_image(1031, 517, c, t, ++seed);
            for (const char* op : {"median:se=rect:3x3", "median:se=rect:5x5,border=nearest", "median:se=rect:7x7,border=wrap",
                                   "percentile:p=40,se=disk:3", "median:se=rect:15x15,border=constant,value=3",
                                   "median:se=disk:7,border=mirror"})
                EXPECT_TRUE(same_bits(run_on(op, in, Backend::cuda), run_on(op, in, Backend::cpu))) << op << ' ' << test::type_name(t) << " c" << c;
        }
}

// The plan names the kernel that runs, for every rank case of the GPU benchmark (bench/rank_cases.hpp) and the
// forms of each family, on the benchmark's channel counts.
TEST(CudaRank, PlansNameTheKernelThatRuns) {
    REQUIRE_GPU();
    std::vector<std::pair<std::string, ImageShape>> cases;
    for (const bench::RankCase& r : bench::rank_cases()) cases.push_back({r.program.spec, ImageShape{1031, 517, r.channels, r.type}});
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (const char* op : {"percentile:p=90,se=rect:5x5", "median:se=disk:3", "rank:r=4,se=rect:21x3", "median:se=rect:301x1"})
            cases.push_back({op, ImageShape{333, 97, 3, t}});
    for (const auto& [op, shape] : cases) {
        const RankPlan p = planned(op, shape);
        const Image in = test::random_image(shape.width, shape.height, shape.channels, shape.type, 5);
        Image expected(in.shape());
        make_reference_executor()->rank(p, in, expected.view());
        DeviceImage d_in(in.shape(), 0, 0), d_out(in.shape(), 0, 0);
        d_in.upload(in);
        auto& ex = test::shared_cuda_executor();
        cuda::clear_launches();
        ex.rank(p, as_const(d_in.view), d_out.view);
        ex.synchronize();
        ASSERT_EQ(cuda::launches().size(), 1u) << op;
        EXPECT_EQ(cuda::launches().back().name(), p.kernel.name()) << op << ' ' << test::type_name(shape.type) << " c" << shape.channels;
        EXPECT_TRUE(same_bits(d_out.download(), expected)) << op << ' ' << test::type_name(shape.type) << " c" << shape.channels;
    }
}
#endif
