// The CPU backend's FFT path (src/cpu/fft_linear.cpp) against the reference executor: exact plans bit for
// bit, float plans within SPEC.md's tolerance, for masks 15x15 to 129x129 (odd, even, non-square, off-centre
// anchors), every border mode, 1-4 channels, every type, images from 1x1 to several tiles and smaller than
// the mask. Also when the planner takes it and when it must not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/overrides.hpp"
#include "apron/pipeline.hpp"
#include "cpu/fft_linear.hpp"
#include "plan/plan.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {


#define REQUIRE_FFT() \
    if (!cpu::fft_available()) GTEST_SKIP() << "built without FFTW"

using test::random_mask;

// The plan through the FFT on the fast executor against the reference executor.
void expect_fft_matches_reference(LinearPlan p, const Image& in) {
    p.algorithm = LinearAlgorithm::fft;
    const std::string what = std::to_string(p.step.mask.width) + "x" + std::to_string(p.step.mask.height) + " " +
                             to_string(p.in) + "->" + to_string(p.out) + (p.exact ? " exact" : " float") + " border " +
                             to_string(p.step.border) + " image " + std::to_string(in.width()) + "x" +
                             std::to_string(in.height()) + "x" + std::to_string(in.channels());
    Image want(in.width(), in.height(), in.channels(), p.out), got(in.width(), in.height(), in.channels(), p.out);
    make_reference_executor()->linear(p, in.view(), want.view());
    make_cpu_executor(3)->linear(p, in.view(), got.view());
    if (p.exact) {
        EXPECT_TRUE(test::identical(want.view(), got.view())) << what << ": differs by " << test::max_abs_diff(want.view(), got.view());
        return;
    }
    double tol = 1;  // integer outputs: within 1 of the correctly rounded value
    if (p.out == PixelType::f32) {
        const double in_max = std::max(test::max_abs(in.view()), std::fabs(p.step.border_value));
        tol = 1e-5 * p.step.mask.abs_sum() * in_max * std::max(1.0, std::fabs(p.finish.mul)) + 1e-30;
    }
    EXPECT_LE(test::max_abs_diff(want.view(), got.view()), tol) << what;
}

void sweep_borders(const Mask& m, const Image& in, PixelType out, Normalise n = Normalise::none) {
    for (BorderMode b : test::all_borders) {
        const double value = b == BorderMode::constant ? (in.type() == PixelType::f32 ? 0.75 : 7) : 0;
        expect_fft_matches_reference(test::plan_for(m, in.shape(), out, b, value, n), in);
    }
}

} // namespace

TEST(CpuFft, MaskShapesAndBorders) {
    REQUIRE_FFT();
    std::uint32_t seed = 1;
    struct Shape {
        int w, h;
    };
    for (Shape s : {Shape{15, 15}, Shape{16, 9}, Shape{31, 31}, Shape{4, 40}, Shape{1, 17}}) {
        for (bool integer : {true, false}) {
            const Mask m = random_mask(s.w, s.h, integer, ++seed);
            for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
                const Image in = test::random_image(157, 83, 1 + int(seed % 4), t, seed);
                sweep_borders(m, in, t);
            }
        }
    }
}

TEST(CpuFft, LargeMasksSmallImagesAndManyTiles) {
    REQUIRE_FFT();
    const Mask m63 = random_mask(63, 63, true, 21, 2), m129 = random_mask(129, 129, false, 22), m64 = random_mask(64, 48, false, 23);
    for (auto [w, h] : {std::pair{1, 1}, {7, 5}, {64, 33}, {1, 200}}) {
        const Image u8 = test::random_image(w, h, 1, PixelType::u8, std::uint32_t(w * 7 + h));
        const Image f = test::random_image(w, h, 2, PixelType::f32, std::uint32_t(w * 5 + h));
        sweep_borders(m63, u8, PixelType::u8, Normalise::sum);
        sweep_borders(m129, f, PixelType::f32);
        sweep_borders(m64, u8, PixelType::f32);
    }
    // An image of several tiles in both directions, through the planner's own choice.
    const Image big = test::random_image(600, 550, 1, PixelType::u8, 24);
    const Mask m25 = random_mask(25, 25, true, 25);
    const LinearPlan p = test::plan_for(m25, big.shape(), PixelType::u8, BorderMode::reflect, 0, Normalise::sum);
    EXPECT_EQ(p.algorithm, LinearAlgorithm::fft);
    const cpu::FftTile tile = cpu::choose_fft_tile(25, 25, 600, 550);
    EXPECT_TRUE(tile.nx - 24 < 600 && tile.ny - 24 < 550) << "one tile would not test the seams";
    expect_fft_matches_reference(p, big);
}

TEST(CpuFft, OutputTypesAndFinishes) {
    REQUIRE_FFT();
    const Image in = test::random_image(211, 97, 3, PixelType::u8, 31);
    const Mask m = random_mask(17, 17, true, 32);
    for (PixelType out : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (Normalise n : {Normalise::none, Normalise::sum, Normalise::book})
            for (double scale : {1.0, 0.125, 0.3})
                expect_fft_matches_reference(test::plan_for(m, in.shape(), out, BorderMode::mirror, 0, n, scale, 3), in);
    // Off-centre anchors (convolve flips the mask and moves the anchor).
    Mask shifted = random_mask(20, 18, false, 33);
    shifted.anchor_x = 0, shifted.anchor_y = 17;
    sweep_borders(shifted, test::random_image(90, 70, 1, PixelType::f32, 34), PixelType::f32);
}

TEST(CpuFft, WhenThePlannerTakesIt) {
    REQUIRE_FFT();
    const ImageShape shape{512, 512, 1, PixelType::u8};
    const Mask big = random_mask(31, 31, true, 41);
    EXPECT_EQ(test::plan_for(big, shape, PixelType::u8).algorithm, LinearAlgorithm::fft);
    // Small masks stay direct; separable ones separable; other backends never get it.
    EXPECT_EQ(test::plan_for(random_mask(9, 9, true, 42), shape, PixelType::u8).algorithm, LinearAlgorithm::direct);
    EXPECT_EQ(test::plan_for(Mask(31, 31, std::vector<double>(961, 1.0)), shape, PixelType::u8).algorithm,
              LinearAlgorithm::separable);
    LinearStep s;
    s.mask = big;
    Step step;
    step.action = s;
    OpProgram prog;
    prog.spec = "test";
    prog.steps.push_back(step);
    EXPECT_EQ(std::get<LinearPlan>(make_plan({prog}, shape, PixelType::u8, Backend::reference).operations[0].steps[0].what).algorithm,
              LinearAlgorithm::direct);
    // An exact plan whose sums a double transform could not round back exactly stays direct.
    const ImageShape wide{300, 300, 1, PixelType::u16};
    const LinearPlan huge = test::plan_for(random_mask(31, 31, true, 43, 100000000), wide, PixelType::u16);
    ASSERT_TRUE(huge.exact);
    EXPECT_GE(cpu::fft_exact_error_bound(huge, cpu::choose_fft_tile(31, 31, 300, 300)), 0.25);
    EXPECT_EQ(huge.algorithm, LinearAlgorithm::direct);
    // Tiles: about 4k and at least 256, at most 1024, one tile when the image fits in it, none past 1024.
    EXPECT_EQ(cpu::choose_fft_tile(31, 31, 4096, 4096).nx, 256);
    EXPECT_EQ(cpu::choose_fft_tile(301, 301, 3000, 3000).nx, 1024);
    EXPECT_EQ(cpu::choose_fft_tile(63, 63, 100, 20).nx, 162);  // 2 x 3^4 >= 100 + 62
    EXPECT_EQ(cpu::choose_fft_tile(1100, 5, 3000, 3000).nx, 0);
    // APRON_FFT=0 keeps it out.
    Overrides no_fft = overrides();
    no_fft.fft_path = 0;
    const OverrideScope scope(no_fft);
    EXPECT_EQ(test::plan_for(big, shape, PixelType::u8).algorithm, LinearAlgorithm::direct);
}

TEST(CpuFft, NonFiniteSamplesStayInTheirWindows) {
    REQUIRE_FFT();
    // A transform would spread a NaN or an infinity over its whole tile; the executor sees them and sums
    // directly, so only the windows that hold them are affected, as in the reference.
    Image in = test::random_image(120, 90, 1, PixelType::f32, 51);
    in.view().row<float>(10)[20] = std::numeric_limits<float>::quiet_NaN();
    in.view().row<float>(70)[100] = std::numeric_limits<float>::infinity();
    const LinearPlan p = test::plan_for(random_mask(31, 31, false, 52), in.shape(), PixelType::f32, BorderMode::reflect);
    ASSERT_EQ(p.algorithm, LinearAlgorithm::fft);
    Image want(in.shape()), got(in.shape());
    make_reference_executor()->linear(p, in.view(), want.view());
    make_cpu_executor(2)->linear(p, in.view(), got.view());
    int nan_want = 0, nan_got = 0, differ = 0;
    for (int y = 0; y < 90; ++y)
        for (int x = 0; x < 120; ++x) {
            const float a = want.view().row<float>(y)[x], b = got.view().row<float>(y)[x];
            nan_want += std::isnan(a), nan_got += std::isnan(b);
            if (std::isfinite(a) != std::isfinite(b) || (std::isfinite(a) && std::fabs(a - b) > 1e-3f)) ++differ;
        }
    EXPECT_EQ(nan_got, nan_want);
    EXPECT_GT(nan_want, 0);
    EXPECT_LT(nan_want, 120 * 90);  // not the whole image: the windows only
    EXPECT_EQ(differ, 0);
}

// Float plans on integer images shift the samples to the middle of the image's own range before the
// transforms, so the transforms' error is relative to the samples as SPEC.md's tolerance is: an all-zero
// image gives exactly 0 and a constant one its exact sum (the middle of the type's range, 128, made both
// noise of 128 x the weights: 255 instead of 0 with a mask of 1e38 weights), dark images stay within
// tolerance of their own max |in|.
TEST(CpuFft, ShiftCentredOnTheImage) {
    REQUIRE_FFT();
    const Mask m = random_mask(25, 23, false, 61);
    for (double magnitude : {1.0, 1e38, 1e200}) {
        std::vector<double> w = m.weights;
        for (double& x : w) x *= magnitude;
        const Mask big(m.width, m.height, w);
        for (PixelType t : {PixelType::u8, PixelType::u16}) {
            Image zero(70, 50, 2, t), flat(70, 50, 2, t);
            with_type(t, [&]<class T>() {
                for (int y = 0; y < 50; ++y) std::fill_n(zero.row<T>(y), 140, T(0)), std::fill_n(flat.row<T>(y), 140, T(9));
            });
            for (PixelType out : {PixelType::u8, PixelType::f32}) {
                // Through the whole plan: unnormalised weights of 1e200 add a combine step after the FFT.
                const RunOptions fft{.backend = Backend::cpu, .out_type = out, .algorithm = Algorithm::fft};
                Pipeline none, mean;
                none.add(test::correlation_op(big, BorderMode::wrap));
                mean.add(test::correlation_op(big, BorderMode::reflect, 0, Normalise::sum));
                EXPECT_EQ(test::max_abs(none.run(zero, fft)), 0.0) << magnitude << " " << to_string(t) << "->" << to_string(out);
                EXPECT_NEAR(test::max_abs(mean.run(flat, fft)), 9.0, 1e-4) << magnitude << " " << to_string(t) << "->" << to_string(out);
            }
            Image dark = test::random_image(70, 50, 1, t, 62);
            with_type(t, [&]<class T>() {
                for (int y = 0; y < 50; ++y)
                    for (int x = 0; x < 70; ++x) dark.row<T>(y)[x] = T(int(dark.row<T>(y)[x]) % 3);
            });
            expect_fft_matches_reference(test::plan_for(big, dark.shape(), PixelType::f32, BorderMode::constant, 1), dark);
        }
    }
}
