// Morphology with any flat structuring element on CUDA (src/cuda/morph_chords.cu) against the reference
// executor on the same plan, bit for bit: disks, ellipses, crosses, random 0/1 elements with holes and
// off-centre anchors, even sizes, elements larger than the image, 1x1 and 1xN images, 1-4 channels,
// u8/u16/f32 (f32 with NaN and infinities), every border, device views whose pointer and pitch break 4- and
// 16-byte alignment, dilate and erode; each kernel schedule (cuda/chord_schedule.hpp) in turn. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if APRON_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda/morph_chords.hpp"
#endif

#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "plan/morph_decompose.hpp"
#include "plan/plan.hpp"
#include "gpu_test_morph_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

Image run_on(const std::string& op, ConstImageView in, Backend b) { return Pipeline({op}).run(in, {.backend = b}); }

MorphPlan plan_for(const Mask& element, MorphKind kind, PixelType t, std::optional<BorderMode> border, double value) {
    MorphPlan p;
    p.type = t;
    p.step.element = element;
    p.step.kind = kind;
    p.step.border = border;
    p.step.border_value = value;
    bool full = true;
    for (double w : element.weights) full = full && w != 0;
    decompose_element(p, full);
    return p;
}

using test::random_element;

std::string element_text(const Mask& m) {
    std::string s = std::to_string(m.width) + "x" + std::to_string(m.height) + " anchor " + std::to_string(m.anchor_x) +
                    "," + std::to_string(m.anchor_y) + ":";
    for (int j = 0; j < m.height && j < 16; ++j) {
        s += ' ';
        for (int i = 0; i < m.width && i < 16; ++i) s += m.at(i, j) != 0 ? '1' : '0';
    }
    return s;
}

// `f(schedule name)` with each schedule of the chord kernel forced in turn, then the dispatch table's again.
template <class F>
void for_each_schedule(F&& f) {
#if APRON_HAVE_CUDA
    for (cuda::ChordSchedule s : cuda::chord_schedules) {
        cuda::set_morph_chords_schedule(s);
        f(cuda::name_of(s));
    }
    cuda::set_morph_chords_schedule(std::nullopt);
#else
    f("-");
#endif
}

} // namespace

TEST(CudaMorphChords, PlansUseChords) {
    const ImageShape shape{64, 64, 3, PixelType::u8};
    for (const char* se : {"disk:7", "disk:1", "ellipse:5x5", "cross:5x5", "ellipse:63x63", "ellipse:6x4"}) {
        const std::string d = Pipeline({std::string("dilate:se=") + se}).describe(shape, {.backend = Backend::cpu});
        EXPECT_NE(d.find("chords("), std::string::npos) << se << ": " << d;
    }
}

#if APRON_HAVE_CUDA
TEST(CudaMorphChords, KernelTakesElementsUpTo64) {
    REQUIRE_GPU();  // the shared-memory limit is the device's
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
        for (const char* se : {"disk:7", "disk:15", "disk:31", "ellipse:63x63", "ellipse:64x64", "cross:64x64", "cross:3x64"}) {
            const MorphPlan p = plan_for(structuring_element(se), MorphKind::dilate, t, std::nullopt, 0);
            EXPECT_EQ(p.algorithm, MorphAlgorithm::chords) << se;
            EXPECT_TRUE(cuda::morph_chords_supports(p)) << se << ' ' << test::type_name(t);
        }
        EXPECT_FALSE(cuda::morph_chords_supports(plan_for(structuring_element("rect:5x5"), MorphKind::dilate, t, std::nullopt, 0)));
        // A one-pixel-wide ellipse sets every cell: a rectangle, not chords.
        for (const char* se : {"ellipse:1x64"})
            EXPECT_EQ(plan_for(structuring_element(se), MorphKind::dilate, t, std::nullopt, 0).algorithm,
                      MorphAlgorithm::separable_rect) << se;
    }
}
#endif

TEST(CudaMorphChords, NamedShapesMatchTheReference) {
    REQUIRE_GPU();
    const std::vector<std::pair<int, int>> sizes = {{1, 1}, {1, 37}, {37, 1}, {61, 43}};
    const char* shapes[] = {"disk:0", "disk:1", "disk:2", "disk:3", "disk:4", "disk:5", "disk:6", "disk:7",
                            "ellipse:5x5", "ellipse:7x3", "ellipse:6x4", "cross:5x5", "cross:4x6", "ellipse:2x9"};
    std::uint32_t seed = 300;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c)
            for (auto [w, h] : sizes) {
                const Image in = test::random_image(w, h, c, t, ++seed);
                for (const char* se : shapes)
                    for (const char* kind : {"dilate", "erode"})
                        for (const std::string& border : test::morph_borders(t)) {
                            const std::string op = std::string(kind) + ":se=" + se + border;
                            const Image expected = run_on(op, in, Backend::reference);
                            for_each_schedule([&](const char* schedule) {
                                ASSERT_TRUE(test::same_samples(run_on(op, in, Backend::cuda), expected))
                                    << op << ' ' << test::type_name(t) << " c" << c << ' ' << w << 'x' << h << " schedule " << schedule;
                            });
                            if (HasFatalFailure()) return;
                        }
            }
}

TEST(CudaMorphChords, LargeDisksAndEllipses) {
    REQUIRE_GPU();
    std::uint32_t seed = 400;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c : {1, 3, 4}) {
            const Image in = test::random_image(97, 71, c, t, ++seed);
            const std::vector<std::string> borders = test::morph_borders(t);
            for (const char* se : {"disk:15", "ellipse:63x63", "ellipse:64x20", "cross:31x63"})
                for (const std::string& border : {borders[0], borders[1], borders[3], borders[5]}) {
                    const std::string op = std::string(seed % 2 ? "dilate" : "erode") + ":se=" + se + border;
                    const Image expected = run_on(op, in, Backend::reference);
                    for_each_schedule([&](const char* schedule) {
                        EXPECT_TRUE(test::same_samples(run_on(op, in, Backend::cuda), expected))
                            << op << ' ' << test::type_name(t) << " c" << c << " schedule " << schedule;
                    });
                }
        }
}

// A large image (many tiles, interior and edge blocks) against the CPU backend's own decomposition.
TEST(CudaMorphChords, MatchesCpuOnALargeImage) {
    REQUIRE_GPU();
    std::uint32_t seed = 500;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c) {
            const Image in = test::random_image(1031, 517, c, t, ++seed);
            const std::vector<std::string> borders = test::morph_borders(t);
            for (const char* se : {"disk:7", "ellipse:9x5", "cross:7x7", "disk:20"})
                for (const char* kind : {"dilate", "erode"})
                    for (const std::string& border : {borders[0], borders[2]}) {
                        const std::string op = std::string(kind) + ":se=" + se + border;
                        const Image expected = run_on(op, in, Backend::cpu);
                        for_each_schedule([&](const char* schedule) {
                            EXPECT_TRUE(test::same_samples(run_on(op, in, Backend::cuda), expected))
                                << op << ' ' << test::type_name(t) << " c" << c << " schedule " << schedule;
                        });
                    }
        }
}

#if APRON_HAVE_CUDA
namespace {

using test::DeviceImage;

// The CUDA executor on `plan` (device views at the given misalignment) against the reference executor.
::testing::AssertionResult same_as_reference(const MorphPlan& plan, const Image& in, int offset = 0, int pad = 0) {
    auto cuda = make_cuda_executor();
    DeviceImage d_in(in.shape(), offset, pad), d_out(in.shape(), (offset + 1) % 4, pad + 1);
    d_in.upload(in);
    Image expected(in.shape());
    make_reference_executor()->morph(plan, in, expected.view());
    ::testing::AssertionResult result = ::testing::AssertionSuccess();
    for_each_schedule([&](const char* schedule) {
        cuda->morph(plan, as_const(d_in.view), d_out.view);
        cuda->synchronize();
        const Image gpu = d_out.download();
        if (result && !test::same_samples(gpu, expected))
            result = ::testing::AssertionFailure() << "schedule " << schedule << ": max difference " << test::max_abs_diff(gpu, expected);
    });
    return result;
}

} // namespace

TEST(CudaMorphChords, RandomElementsWithHolesAndAnyAnchor) {
    REQUIRE_GPU();
    std::mt19937 rng(2024);
    std::uniform_int_distribution<int> side(1, 64);
    const std::vector<std::pair<int, int>> sizes = {{1, 1}, {1, 23}, {23, 1}, {5, 3}, {40, 29}, {131, 67}};
    const std::optional<BorderMode> modes[] = {std::nullopt, BorderMode::constant, BorderMode::nearest, BorderMode::reflect,
                                               BorderMode::mirror, BorderMode::wrap};
    std::uint32_t seed = 600;
    for (int trial = 0; trial < 120; ++trial) {
        const PixelType t = trial % 3 == 0 ? PixelType::u8 : trial % 3 == 1 ? PixelType::u16 : PixelType::f32;
        const int c = 1 + trial % 4;
        // Small elements mostly, a few up to 64 per side (and so larger than the small images).
        const int w = trial % 5 == 4 ? side(rng) : 1 + int(rng() % 12), h = trial % 7 == 6 ? side(rng) : 1 + int(rng() % 12);
        const Mask e = random_element(w, h, trial % 2 ? 0.3 : 0.7, rng);
        const auto [iw, ih] = sizes[std::size_t(trial) % sizes.size()];
        const Image in = test::random_image(iw, ih, c, t, ++seed);
        const auto border = modes[trial % 6];
        const double value = t == PixelType::u8 ? 77 : t == PixelType::u16 ? 1234 : -0.375;
        for (MorphKind kind : {MorphKind::dilate, MorphKind::erode}) {
            const MorphPlan p = plan_for(e, kind, t, border, value);
            ASSERT_TRUE(same_as_reference(p, in)) << element_text(e) << ' ' << test::type_name(t) << " c" << c << ' ' << iw << 'x'
                                                  << ih << " border " << (border ? to_string(*border) : "ignore")
                                                  << " chords " << p.chords.size() << " algorithm " << int(p.algorithm);
        }
    }
}

// Images of several tiles a side, so that each schedule meets blocks whose staged region lies inside the
// image (staged_rows' border-free loads and raw staging) as well as edge blocks, at every border mode.
TEST(CudaMorphChords, SchedulesInsideAndAtTheEdges) {
    REQUIRE_GPU();
    std::mt19937 rng(77);
    const std::optional<BorderMode> modes[] = {std::nullopt, BorderMode::constant, BorderMode::nearest, BorderMode::reflect,
                                               BorderMode::mirror, BorderMode::wrap};
    std::uint32_t seed = 900;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c) {
            const Image in = test::random_image(301, 203, c, t, ++seed);
            const double value = t == PixelType::u8 ? 77 : t == PixelType::u16 ? 1234 : -0.375;
            const Mask elements[] = {structuring_element("disk:3"), structuring_element("disk:7"), structuring_element("cross:7x7"),
                                     structuring_element("ellipse:15x15"), random_element(9, 7, 0.5, rng),
                                     random_element(15, 15, 0.4, rng)};
            int k = 0;
            for (const Mask& e : elements) {
                const auto border = modes[std::size_t(k++ + c) % 6];
                for (MorphKind kind : {MorphKind::dilate, MorphKind::erode})
                    EXPECT_TRUE(same_as_reference(plan_for(e, kind, t, border, value), in, c == 3 ? 1 : 0, c == 2 ? 3 : 0))
                        << element_text(e) << ' ' << test::type_name(t) << " c" << c << " border "
                        << (border ? to_string(*border) : "ignore");
            }
        }
}

// Pointers and pitches that break 4- and 16-byte alignment: staging reads and the paired stores go
// sample by sample where they must.
TEST(CudaMorphChords, UnalignedDeviceViews) {
    REQUIRE_GPU();
    std::uint32_t seed = 700;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c)
            for (int offset : {0, 1, 3})
                for (int pad : {0, 1, 5}) {
                    const Image in = test::random_image(77, 19, c, t, ++seed);
                    for (const char* se : {"disk:3", "ellipse:6x4", "cross:5x3"}) {
                        const MorphPlan p = plan_for(structuring_element(se), seed % 2 ? MorphKind::dilate : MorphKind::erode, t,
                                                     offset == 1 ? std::optional(BorderMode::reflect) : std::nullopt, 0);
                        EXPECT_TRUE(same_as_reference(p, in, offset, pad))
                            << se << ' ' << test::type_name(t) << " c" << c << " offset " << offset << " pad " << pad;
                    }
                }
}

// NaN is a missing sample (a window of NaN only gives NaN), infinities stay, as in the reference.
TEST(CudaMorphChords, FloatSpecialValuesFollowTheReference) {
    REQUIRE_GPU();
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (int c : {1, 3}) {
        Image in = test::random_image(67, 29, c, PixelType::f32, 8);
        for (int y = 0; y < in.height(); ++y)
            for (int k = 0; k < in.width() * in.channels(); ++k) {
                const int r = (y * 131 + k * 17) % 23;
                if (r == 0) in.row<float>(y)[k] = nan;
                if (r == 1) in.row<float>(y)[k] = inf;
                if (r == 2) in.row<float>(y)[k] = -inf;
            }
        for (int y = 10; y < 22; ++y)  // a NaN block wider than the elements: windows that are all NaN
            for (int k = 0; k < 45; ++k) in.row<float>(y)[k] = nan;
        for (const char* se : {"disk:2", "ellipse:5x3", "cross:3x5", "disk:5"})
            for (MorphKind kind : {MorphKind::dilate, MorphKind::erode})
                for (auto border : {std::optional<BorderMode>(), std::optional(BorderMode::reflect), std::optional(BorderMode::constant)})
                    EXPECT_TRUE(same_as_reference(plan_for(structuring_element(se), kind, PixelType::f32, border, -3.4e38), in))
                        << se << " c" << c;
    }
}

// SPEC.md, Morphology: a NaN sample is missing; an output whose element covers no other sample is NaN (not
// -3.4e38 / +3.4e38), and -inf / +inf come out as they are. The chord kernel (each schedule) and
// morph_direct (the executor's fallback for any element) against the reference, on NaN holes larger than
// the element, scattered NaN and infinities, images all NaN or infinite, 1x1 and one-row images, every
// border, 1, 3 and 4 channels.
TEST(CudaMorphChords, NaNIsAMissingSample) {
    REQUIRE_GPU();
    std::uint32_t seed = 2800;
    for (int c : {1, 3, 4})
        for (const auto& [name, in] : test::nan_images(c, ++seed))
            for (const char* se : {"disk:2", "disk:6", "ellipse:7x5", "ellipse:6x4", "cross:5x3", "cross:17x13"})
                for (const char* kind : {"dilate", "erode"})
                    for (auto mode : test::nan_border_modes()) {
                        const std::string op = std::string(kind) + ":se=" + se + test::border_option(mode);
                        const Image expected = run_on(op, in, Backend::reference);
                        for_each_schedule([&](const char* schedule) {
                            const Image gpu = run_on(op, in, Backend::cuda);
                            ASSERT_TRUE(test::same_samples(gpu, expected)) << op << " on " << name << " c" << c << " schedule " << schedule;
                            if (name == "holed") EXPECT_TRUE(test::hole_centre_is_nan(gpu)) << op << " c" << c;
                            if (name == "all NaN" && mode != BorderMode::constant) EXPECT_TRUE(std::isnan(gpu.row<float>(3)[0])) << op;
                            if (name == "all +inf" && mode != BorderMode::constant) EXPECT_EQ(gpu.row<float>(3)[0], std::numeric_limits<float>::infinity()) << op;
                        });
                        if (HasFatalFailure()) return;
                        // morph_direct, which takes what neither rect nor chords take.
                        MorphPlan direct = plan_for(structuring_element(se), std::string(kind) == "dilate" ? MorphKind::dilate : MorphKind::erode,
                                                    PixelType::f32, mode, 0.5);
                        direct.kernel = {"cuda.morph_direct", ""};
                        EXPECT_TRUE(same_as_reference(direct, in)) << "morph_direct " << op << " on " << name << " c" << c;
                    }
}

// A random element with holes and an off-centre anchor, and derived operations, on NaN holes.
TEST(CudaMorphChords, NaNWithRandomElementsAndDerivedOperations) {
    REQUIRE_GPU();
    std::mt19937 rng(77);
    for (int c : {1, 4})
        for (const auto& [name, in] : test::nan_images(c, 2900)) {
            for (int k = 0; k < 4; ++k) {
                const Mask e = random_element(2 + int(rng() % 9u), 2 + int(rng() % 9u), 0.5, rng);
                for (MorphKind kind : {MorphKind::dilate, MorphKind::erode})
                    EXPECT_TRUE(same_as_reference(plan_for(e, kind, PixelType::f32, std::nullopt, 0), in))
                        << element_text(e) << " on " << name << " c" << c;
            }
            for (const char* op : {"open:se=disk:3", "close:se=ellipse:7x5", "gradient:se=disk:2", "tophat:se=cross:5x5",
                                   "blackhat:se=disk:2,border=mirror", "dilate:se=disk:1,iterations=3"})
                EXPECT_TRUE(test::same_samples(run_on(op, in, Backend::cuda), run_on(op, in, Backend::reference)))
                    << op << " on " << name << " c" << c;
        }
}

// Elements the chord kernel declines (over max_chords chords) still give the reference's result.
TEST(CudaMorphChords, ElementsOverTheChordLimitFallBack) {
    REQUIRE_GPU();
    Mask board(31, 31, std::vector<double>(31 * 31, 0.0));
    for (int j = 0; j < 31; ++j)
        for (int i = 0; i < 31; ++i) board.at(i, j) = (i + j) % 2;
    const MorphPlan p = plan_for(board, MorphKind::dilate, PixelType::u8, std::nullopt, 0);
    EXPECT_NE(p.algorithm, MorphAlgorithm::chords);
    EXPECT_TRUE(same_as_reference(p, test::random_image(45, 40, 2, PixelType::u8, 9)));
}
#endif

TEST(CudaMorphChords, DerivedOperations) {
    REQUIRE_GPU();
    test::expect_derived_operations_match({"open:se=disk:5", "close:se=ellipse:7x5", "gradient:se=disk:3", "tophat:se=cross:5x5",
                                          "blackhat:se=disk:4,border=wrap", "dilate:se=disk:2,iterations=3"},
                                         "chords(", Backend::reference);
}
