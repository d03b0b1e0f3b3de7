// The 8-bit separable paths of the fast CPU executor (16-bit lanes, fast_linear_8bit.cpp) against the
// reference: exact (bit for bit) for boxes and binomials on 1 to 4 channels, odd widths, every border,
// finishes that divide by odd, even and power-of-two sums, factors at the edge of the u16 bound; and
// the Q15 fixed-point Gaussian within SPEC's 1, including its worst-case windows.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/linear_finish.hpp"
#include "cpu/fast_executor.hpp"
#include "cpu/simd_kernels.hpp"
#include "apron/ops.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;
using namespace apron::cpu;

namespace {

Executor& reference() {
    static auto ex = make_reference_executor();
    return *ex;
}
Executor& fast() {
    static auto ex = make_cpu_executor(3);
    return *ex;
}

Mask outer(const std::vector<double>& row, const std::vector<double>& column) {
    std::vector<double> w;
    for (double c : column)
        for (double r : row) w.push_back(c * r);
    return Mask(int(row.size()), int(column.size()), w);
}

LinearPlan separable_plan(const Mask& m, const Image& in, PixelType out, BorderMode b, Normalise n, double value = 0) {
    LinearPlan p = test::plan_for(m, in.shape(), out, b, value, n);
    // Small masks stay direct in the planner; the separable form is what a larger one would carry.
    if (!p.integer_separable) p.integer_separable = integer_separable_form(p.integer_mask, m.width, m.height);
    p.algorithm = LinearAlgorithm::separable;
    return p;
}

void expect_same(const LinearPlan& p, const Image& in, const std::string& what) {
    Image want(in.width(), in.height(), in.channels(), p.out), got(in.width(), in.height(), in.channels(), p.out);
    reference().linear(p, in.view(), want.view());
    fast().linear(p, in.view(), got.view());
    EXPECT_TRUE(test::identical(want.view(), got.view()))
        << what << ": differs by " << test::max_abs_diff(want.view(), got.view());
}

} // namespace

TEST(CpuSmallInt, BoxesAndBinomialsMatchReference) {
    const std::vector<std::pair<std::vector<double>, std::vector<double>>> masks = {
        {{1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}},  // box 5x5: divide by 25
        {{1, 1, 1}, {1, 1, 1}},              // box 3x3: 9
        {{1, 2, 1}, {1, 2, 1}},              // binomial: 16
        {{1, 4, 6, 4, 1}, {1, 4, 6, 4, 1}},  // 256
        {{1, 1, 1, 1}, {1, 1}},              // even box 4x2: 8
        {{1, 1, 1, 1, 1, 1, 1}, {1}},        // one row: 7
        {{1}, {1, 1, 1, 1, 1, 1}},           // one column: 6
        {{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},  // 255
    };
    int k = 0;
    for (const auto& [row, column] : masks)
        for (BorderMode b : test::all_borders)
            for (int channels = 1; channels <= 4; ++channels) {
                const int w = 37 + 2 * (k % 5), h = 23;
                const Image in = test::random_image(w, h, channels, PixelType::u8, 300 + k++);
                for (Normalise n : {Normalise::sum, Normalise::none}) {
                    const LinearPlan p = separable_plan(outer(row, column), in, PixelType::u8, b, n, 77);
                    ASSERT_TRUE(cpu::small_int_separable_applies(p)) << row.size() << "x" << column.size();
                    expect_same(p, in, std::to_string(row.size()) + "x" + std::to_string(column.size()) + " on " +
                                           std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(channels) +
                                           " border " + to_string(b));
                }
            }
}

TEST(CpuSmallInt, OtherOutputTypesAndTinyImages) {
    const Mask box = outer({1, 1, 1, 1, 1}, {1, 1, 1});
    for (PixelType out : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (auto [w, h] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 5}, std::pair{3, 2}, std::pair{129, 3}})
            for (int channels : {1, 3, 4})
                for (BorderMode b : {BorderMode::mirror, BorderMode::wrap, BorderMode::constant}) {
                    const Image in = test::random_image(w, h, channels, PixelType::u8, unsigned(w * 31 + h + channels));
                    const LinearPlan p = separable_plan(box, in, out, b, Normalise::sum, 200);
                    ASSERT_TRUE(cpu::small_int_separable_applies(p));
                    expect_same(p, in, std::string(to_string(out)) + " " + std::to_string(w) + "x" + std::to_string(h));
                }
}

// Offsets (book normalisation of a zero-sum mask is not separable here; a scale or delta is), odd and
// even deltas, and a fractional scale that leaves integer rounding.
TEST(CpuSmallInt, ScalesAndDeltas) {
    const Mask box = outer({1, 1, 1}, {1, 1, 1, 1, 1});
    const Image in = test::random_image(53, 17, 3, PixelType::u8, 8);
    for (PixelType out : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (auto [scale, delta] : {std::pair{1.0, 3.0}, std::pair{1.0, -4.0}, std::pair{1.0, 100.0}, std::pair{0.5, 1.0}, std::pair{3.0, 0.25}})
            for (Normalise n : {Normalise::sum, Normalise::none, Normalise::book}) {
                LinearPlan p = test::plan_for(box, in.shape(), out, BorderMode::reflect, 0, n, scale, delta);
                if (!p.integer_separable) p.integer_separable = integer_separable_form(p.integer_mask, box.width, box.height);
                p.algorithm = LinearAlgorithm::separable;
                ASSERT_TRUE(cpu::small_int_separable_applies(p));
                expect_same(p, in, std::string(to_string(out)) + " scale " + std::to_string(scale) + " delta " + std::to_string(delta));
            }
}

// 255 * 257 = 65535 is the largest sum the u16 lanes hold; all-255 input reaches it. One more and the
// path must step aside (the f32 path takes the step, with the same bits).
TEST(CpuSmallInt, BoundOfTheU16Lanes) {
    Image in(67, 9, 3, PixelType::u8);
    for (int y = 0; y < in.height(); ++y) std::memset(in.view().row_bytes(y), 255, in.shape().row_bytes());
    const Image noisy = test::random_image(67, 9, 3, PixelType::u8, 5);
    for (const auto& [row, applies] : {std::pair{std::vector<double>{255, 2}, true}, std::pair{std::vector<double>{255, 3}, false},
                                       std::pair{std::vector<double>{200, 57}, true}})
        for (const Image* src : {static_cast<const Image*>(&in), &noisy})
            for (PixelType out : {PixelType::u16, PixelType::u8}) {
                const LinearPlan p = separable_plan(outer(row, {1}), *src, out, BorderMode::nearest, Normalise::none);
                EXPECT_EQ(cpu::small_int_separable_applies(p), applies) << row[1];
                expect_same(p, *src, "row " + std::to_string(row[0]) + "," + std::to_string(row[1]));
            }
    // Column factors count too: 1 x 1 row over a column summing to 257.
    const LinearPlan p = separable_plan(outer({1}, {128, 129}), in, PixelType::u16, BorderMode::reflect, Normalise::none);
    EXPECT_TRUE(cpu::small_int_separable_applies(p));
    expect_same(p, in, "column 128,129");
    // Negative factors take it too (signed sums), as long as the range of the sum is narrower than 2^16:
    // 255 * (5 + 3) here; 255 * 257 * 2 is not.
    const LinearPlan q = separable_plan(outer({1, -1, 1}, {1, 2, 1}), noisy, PixelType::u8, BorderMode::reflect, Normalise::none);
    EXPECT_TRUE(cpu::small_int_separable_applies(q));
    expect_same(q, noisy, "1,-1,1 x 1,2,1");
    const LinearPlan wide = separable_plan(outer({255, -2}, {1}), noisy, PixelType::u16, BorderMode::reflect, Normalise::none);
    EXPECT_TRUE(cpu::small_int_separable_applies(wide));
    expect_same(wide, noisy, "255,-2");
    const LinearPlan too_wide = separable_plan(outer({255, -3}, {1}), noisy, PixelType::u16, BorderMode::reflect, Normalise::none);
    EXPECT_FALSE(cpu::small_int_separable_applies(too_wide));
    expect_same(too_wide, noisy, "255,-3");
}

// The fused finish divides by a reciprocal for odd denominators (exact by the argument in
// simd_small_int.cpp). Every sum the u16 lanes can hold, 0..65535, against the integer finish, for every
// odd denominator up to 1023, large odd ones, powers of two and even ones (a division there), with
// offsets and deltas.
TEST(CpuSmallInt, FusedFinishIsExactForEverySum) {
    std::vector<std::uint16_t> row(65536);
    for (std::size_t i = 0; i < row.size(); ++i) row[i] = std::uint16_t(i);
    const std::uint16_t* rows[1] = {row.data()};
    const std::uint16_t one = 1;
    std::vector<std::uint16_t> got(row.size());
    std::vector<std::int64_t> dens;
    for (std::int64_t d = 1; d < 1024; d += 2) dens.push_back(d);
    for (std::int64_t d : {65535, 65537, 99999, 1 << 21, (1 << 22) - 1, 2, 6, 10, 12, 100, 1024, 50000}) dens.push_back(d);
    int checked = 0;
    for (std::int64_t d : dens)
        for (auto [offset, delta] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {12345, -7}, {-40000, 3}}) {
            LinearFinish f;
            f.denominator = d;
            f.inverse_denominator = 1.0 / double(d);
            f.offset = offset;
            f.delta_int = delta;
            f.integer_rounding = true;
            ASSERT_TRUE(simd::u16_finish_fuses(PixelType::u16, f, 65535.0));
            simd::sum_rows_u16_finish(rows, &one, 1, PixelType::u16, got.data(), got.size(), f, false);
            for (std::size_t i = 0; i < row.size(); ++i) {
                const std::uint16_t want = finish_exact<std::uint16_t>(std::int64_t(i), f);
                if (got[i] != want) {
                    ADD_FAILURE() << "sum " << i << " / " << d << " offset " << offset << ": " << got[i] << " != " << want;
                    return;
                }
            }
            ++checked;
        }
    EXPECT_EQ(checked, int(dens.size()) * 3);
}

namespace {

LinearPlan gaussian_plan(double sigma, const Image& in, BorderMode b, double value = 0) {
    OpProgram prog = parse_operation("gaussian:sigma=" + std::to_string(sigma));
    std::get<LinearStep>(prog.steps.at(0).action).border = b;
    std::get<LinearStep>(prog.steps.at(0).action).border_value = value;
    LinearPlan p = std::get<LinearPlan>(test::plan_step(prog.steps.at(0), in.shape(), PixelType::u8).what);
    EXPECT_EQ(p.algorithm, LinearAlgorithm::separable);
    return p;
}

// Within 1 of the reference (SPEC's integer tolerance), the largest difference returned.
double expect_within_one(const LinearPlan& p, const Image& in, const std::string& what) {
    Image want(in.shape()), got(in.shape());
    reference().linear(p, in.view(), want.view());
    fast().linear(p, in.view(), got.view());
    const double d = test::max_abs_diff(want.view(), got.view());
    EXPECT_LE(d, 1) << what;
    return d;
}

} // namespace

// The Q15 form of 8-bit Gaussians: its error bound holds for sigma up to 4 (so it runs), and results
// stay within 1 of the reference on 1 to 4 channels, odd sizes, every border.
TEST(CpuFixedPoint, GaussiansWithinOneOfReference) {
    int k = 0;
    for (double sigma : {0.5, 0.8, 1.0, 1.7, 2.0, 3.0, 4.0})
        for (BorderMode b : test::all_borders)
            for (int channels = 1; channels <= 4; ++channels) {
                const int w = 41 + 2 * (k % 4), h = 29 + (k % 3);
                const Image in = test::random_image(w, h, channels, PixelType::u8, 700 + k++);
                const LinearPlan p = gaussian_plan(sigma, in, b, 90);
                const double bound = cpu::fixed_point_separable_bound(p);
                EXPECT_LT(bound, 0.49) << "sigma " << sigma;
                expect_within_one(p, in, "sigma " + std::to_string(sigma) + " " + std::to_string(channels) + " channels, border " + to_string(b));
            }
}

// The worst case of the weight rounding: a window of 255 where the rounded 2-D weight exceeds the
// exact one and 0 elsewhere (and the opposite), tiled so that every k-th output pixel sees it.
TEST(CpuFixedPoint, WorstCaseWindowsStayWithinOne) {
    for (double sigma : {1.0, 2.0, 4.0}) {
        Image probe(8, 8, 1, PixelType::u8);
        const LinearPlan p = gaussian_plan(sigma, probe, BorderMode::wrap);
        std::vector<double> r = p.separable->row, c = p.separable->column;
        double sr = 0;  // balanced as the fixed-point form does
        for (double v : r) sr += std::fabs(v);
        for (double& v : r) v /= sr;
        for (double& v : c) v *= sr;
        const int kw = int(r.size()), kh = int(c.size());
        auto q = [](double v) { return std::lrint(v * 32768) / 32768.0; };
        for (bool positive : {true, false}) {
            Image in(kw * 5, kh * 5, 3, PixelType::u8);
            for (int y = 0; y < in.height(); ++y)
                for (int x = 0; x < in.width(); ++x) {
                    const int i = x % kw, j = y % kh;
                    const double e = q(c[std::size_t(j)] * p.finish.mul) * q(r[std::size_t(i)]) - c[std::size_t(j)] * p.finish.mul * r[std::size_t(i)];
                    for (int ch = 0; ch < 3; ++ch)
                        in.view().row<std::uint8_t>(y)[x * 3 + ch] = (e > 0) == positive ? 255 : ch * 40;
                }
            const LinearPlan pin = gaussian_plan(sigma, in, BorderMode::wrap);
            ASSERT_LT(cpu::fixed_point_separable_bound(pin), 0.49);
            expect_within_one(pin, in, "sigma " + std::to_string(sigma) + (positive ? " +" : " -"));
        }
    }
}

// Constant images: every exact result is the pixel itself, which the fixed-point form must give too
// (within 1), including 0 and 255 at the ends of the range.
TEST(CpuFixedPoint, ConstantImagesAndLargeSigmasFallBack) {
    for (int v : {0, 1, 128, 254, 255}) {
        Image in(37, 21, 4, PixelType::u8);
        for (int y = 0; y < in.height(); ++y) std::memset(in.view().row_bytes(y), v, in.shape().row_bytes());
        expect_within_one(gaussian_plan(2.0, in, BorderMode::nearest), in, "constant " + std::to_string(v));
    }
    // Long masks: the bound grows with the taps; past it the f32 path runs (still within 1).
    const Image in = test::random_image(131, 17, 3, PixelType::u8, 3);
    const LinearPlan p = gaussian_plan(12.0, in, BorderMode::reflect);
    EXPECT_GE(cpu::fixed_point_separable_bound(p), 0.49);
    expect_within_one(p, in, "sigma 12");
}

// Float separable masks proportional to small integers (weights of 2^40, normalised by their sum) are
// summed exactly by the f32 path; they keep it, and so their exact results.
TEST(CpuFixedPoint, IntegerProportionalMasksKeepTheF32Path) {
    const Image in = test::random_image(23, 37, 3, PixelType::u8, 20);
    for (double w : {0x1p40, 1e30}) {
        const Mask m(9, 9, std::vector<double>(81, w));
        LinearPlan p = test::plan_for(m, in.shape(), PixelType::u8, BorderMode::reflect, 0, Normalise::sum);
        ASSERT_FALSE(p.exact);
        ASSERT_TRUE(p.separable);
        p.algorithm = LinearAlgorithm::separable;
        EXPECT_GE(cpu::fixed_point_separable_bound(p), 0.49) << w;
        Image want(in.shape()), got(in.shape());
        reference().linear(p, in.view(), want.view());
        fast().linear(p, in.view(), got.view());
        EXPECT_TRUE(test::identical(want.view(), got.view())) << w;
    }
}

namespace {

// Positive random weights normalised to sum 1 (a blur drawn at random, as bench masks are).
Mask normalised_mask(int w, int h, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<double> v(std::size_t(w) * std::size_t(h));
    double sum = 0;
    for (double& x : v) sum += x = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    for (double& x : v) x /= sum;
    return Mask(w, h, v);
}

LinearPlan direct_plan(const Mask& m, const Image& in, BorderMode b, double value = 0) {
    LinearPlan p = test::plan_for(m, in.shape(), PixelType::u8, b, value);
    p.algorithm = LinearAlgorithm::direct;
    return p;
}

} // namespace

// Small float masks on u8 run direct in Q15 where the bound allows: 3x3 to 7x7 and even shapes, every
// border, 1 to 4 channels, odd widths, within 1 of the reference.
TEST(CpuFixedPoint, DirectMasksWithinOneOfReference) {
    int k = 0;
    for (auto [mw, mh] : {std::pair{3, 3}, std::pair{5, 5}, std::pair{7, 7}, std::pair{2, 4}, std::pair{5, 1}})
        for (BorderMode b : test::all_borders)
            for (int channels = 1; channels <= 4; ++channels) {
                const int w = 39 + 2 * (k % 4), h = 21 + (k % 3);
                const Image in = test::random_image(w, h, channels, PixelType::u8, 900 + k);
                const LinearPlan p = direct_plan(normalised_mask(mw, mh, 50 + k++), in, b, 33);
                ASSERT_FALSE(p.exact);
                EXPECT_LT(cpu::fixed_point_direct_bound(p), 0.49) << mw << "x" << mh;
                expect_within_one(p, in, std::to_string(mw) + "x" + std::to_string(mh) + " " + std::to_string(channels) +
                                             " channels, border " + to_string(b));
            }
}

// Worst case of the weight rounding for the direct form: 255 where the rounded weight exceeds the exact
// one, 0 elsewhere (and the opposite), tiled so every mask-sized step of output pixels sees it.
TEST(CpuFixedPoint, DirectWorstCaseWindowsStayWithinOne) {
    for (int size : {3, 5, 7}) {
        const Mask m = normalised_mask(size, size, unsigned(size));
        for (bool positive : {true, false}) {
            Image in(size * 6, size * 5, 4, PixelType::u8);
            for (int y = 0; y < in.height(); ++y)
                for (int x = 0; x < in.width(); ++x) {
                    const double exact = m.at(x % size, y % size);
                    const double e = std::lrint(exact * 32768) / 32768.0 - exact;
                    for (int ch = 0; ch < 4; ++ch)
                        in.view().row<std::uint8_t>(y)[x * 4 + ch] = (e > 0) == positive ? 255 : ch * 30;
                }
            const LinearPlan p = direct_plan(m, in, BorderMode::wrap);
            ASSERT_LT(cpu::fixed_point_direct_bound(p), 0.49);
            expect_within_one(p, in, std::to_string(size) + (positive ? " +" : " -"));
        }
    }
}

// Masks the bound refuses keep the f32 path: large sums of |weights| (sharpening), masks past 7x7, and
// masks proportional to small integers (exact there).
TEST(CpuFixedPoint, DirectFallsBackWhereTheBoundFails) {
    const Image in = test::random_image(31, 17, 3, PixelType::u8, 4);
    EXPECT_GE(cpu::fixed_point_direct_bound(direct_plan(Mask(3, 3, {0, -1, 0, -1, 5, -1, 0, -1, 0}), in, BorderMode::reflect)), 0.49);
    EXPECT_GE(cpu::fixed_point_direct_bound(direct_plan(normalised_mask(9, 9, 1), in, BorderMode::reflect)), 0.49);
    const LinearPlan big = direct_plan(Mask(3, 3, std::vector<double>(9, 0x1p40 / 9 / 0x1p40 * 3)), in, BorderMode::reflect);
    EXPECT_GE(cpu::fixed_point_direct_bound(big), 0.49);
    for (const LinearPlan& p : {big, direct_plan(normalised_mask(9, 9, 1), in, BorderMode::mirror)})
        expect_within_one(p, in, "fallback");
}

// Every compiled SIMD target (SSE4, AVX2, AVX-512, the portable one) gives the same results on these
// paths: exact bits for the u16 box, and for the Q15 forms the bits of the best target (each product
// is rounded the same way in every lane width), with widths that leave vector tails.
TEST(CpuFixedPoint, EverySimdTargetGivesTheSameBits) {
    const Image in = test::random_image(77, 19, 3, PixelType::u8, 14);
    std::vector<LinearPlan> plans;
    plans.push_back(gaussian_plan(1.5, in, BorderMode::mirror));
    plans.push_back(direct_plan(normalised_mask(5, 5, 8), in, BorderMode::constant, 200));
    plans.push_back(separable_plan(outer({1, 1, 1, 1, 1}, {1, 1, 1}), in, PixelType::u8, BorderMode::reflect, Normalise::sum));
    ASSERT_LT(cpu::fixed_point_separable_bound(plans[0]), 0.49);
    ASSERT_LT(cpu::fixed_point_direct_bound(plans[1]), 0.49);
    ASSERT_TRUE(cpu::small_int_separable_applies(plans[2]));
    std::vector<Image> first;
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        auto ex = make_cpu_executor(2);
        for (std::size_t k = 0; k < plans.size(); ++k) {
            Image got(in.shape()), want(in.shape());
            ex->linear(plans[k], in.view(), got.view());
            reference().linear(plans[k], in.view(), want.view());
            EXPECT_LE(test::max_abs_diff(want.view(), got.view()), k == 2 ? 0 : 1) << hwy::TargetName(target) << " " << k;
            if (first.size() < plans.size()) first.push_back(copy_of(got.view()));
            else EXPECT_TRUE(test::identical(first[k].view(), got.view())) << hwy::TargetName(target) << " " << k;
        }
    }
    hwy::SetSupportedTargetsForTest(0);
}

// ---- The 16-bit exact forms: signed masks, direct masks, running box sums, the integer finish -------------

namespace {

// A linear op from the registry, planned for this image (the planner's own algorithm choice).
LinearPlan op_plan(const std::string& spec, const Image& in, PixelType out, BorderMode b, double value = 0) {
    OpProgram prog = parse_operation(spec);
    auto& step = std::get<LinearStep>(prog.steps.at(0).action);
    step.border = b;
    step.border_value = value;
    return std::get<LinearPlan>(test::plan_step(prog.steps.at(0), in.shape(), out).what);
}

// Every sum of [smin, smax] (as 16-bit lanes hold it) through the fused kernel against finish_exact.
// Returns false (with a failure) at the first difference.
bool finish_matches(const LinearFinish& f, PixelType out, std::int64_t smin, std::int64_t smax) {
    simd::IntFinish16 fin;
    if (!simd::int_finish16(f, out, smin, smax, fin)) {
        ADD_FAILURE() << "no 16-bit finish for d " << f.denominator << " range " << smin << ".." << smax;
        return false;
    }
    const std::size_t n = std::size_t(smax - smin + 1);
    std::vector<std::int16_t> sums(n + simd::slack);
    for (std::size_t i = 0; i < n; ++i) sums[i] = std::int16_t(std::uint16_t(std::uint64_t(smin + std::int64_t(i)) & 0xFFFF));
    const void* rows[1] = {sums.data()};
    const std::uint32_t end[1] = {1};
    const std::int16_t w[1] = {1};
    const simd::Taps16 t{rows, end, w, 1};
    std::vector<std::uint16_t> got16(n + 1, 0xABCD);
    std::vector<std::uint8_t> got8(n + 1, 0xAB);
    if (out == PixelType::u8) simd::sum_taps16_finish(false, t, fin, out, got8.data(), n, false);
    else simd::sum_taps16_finish(false, t, fin, out, got16.data(), n, false);
    if (out == PixelType::u8 ? got8[n] != 0xAB : got16[n] != 0xABCD) {
        ADD_FAILURE() << "wrote past n";
        return false;
    }
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t S = smin + std::int64_t(i);
        const unsigned want = out == PixelType::u8 ? unsigned(finish_exact<std::uint8_t>(S, f)) : unsigned(finish_exact<std::uint16_t>(S, f));
        const unsigned got = out == PixelType::u8 ? got8[i] : got16[i];
        if (got != want) {
            ADD_FAILURE() << "sum " << S << " / " << f.denominator << " offset " << f.offset << " delta " << f.delta_int
                          << " (kind " << fin.kind << ", magic " << fin.magic << ", shift " << fin.shift << "): " << got
                          << " != " << want;
            return false;
        }
    }
    return true;
}

LinearFinish integer_finish(std::int64_t d, std::int64_t offset = 0, std::int64_t delta = 0) {
    LinearFinish f;
    f.denominator = d;
    f.inverse_denominator = 1.0 / double(d);
    f.offset = offset;
    f.delta_int = delta;
    f.integer_rounding = true;
    return f;
}

} // namespace

// The integer reciprocal finish against finish_exact over every sum a 16-bit range holds: the unsigned
// range (less room for the rounding) for every denominator up to 1024 and a spread of larger ones (even, odd, powers of two,
// 65535), signed ranges (Sobel-like, offsets and odd deltas moved into the offset), and for every box of
// up to 31 x 31 whose sums fit (d = w h, sums 0..255 w h, the range the reciprocal is picked for).
TEST(CpuSmallInt, IntegerFinishIsExactOverTheReachableRange) {
    std::vector<std::int64_t> dens;
    for (std::int64_t d = 1; d <= 1024; ++d) dens.push_back(d);
    for (std::int64_t d : {1025, 2047, 2048, 3000, 4095, 4097, 10000, 16383, 16385, 32767, 32768, 32769, 50000, 65534, 65535})
        dens.push_back(d);
    int checked = 0;
    for (std::int64_t d : dens) {
        // The rounding adds d / 2: sums up to 65535 - d / 2 leave room for it.
        if (!finish_matches(integer_finish(d), PixelType::u16, 0, 65535 - d / 2)) return;
        ++checked;
    }
    for (std::int64_t d : {1, 2, 3, 4, 7, 8, 16, 25, 36, 100, 255, 1000})
        for (auto [offset, delta] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {0, 128}, {128 * 7, -3}, {-40000, 9}, {12345, -70000}, {0, 70000}})
            for (auto [lo, hi] : {std::pair<std::int64_t, std::int64_t>{-1020, 1020}, {-32000, 32000}, {-8160, 8160}, {-64000, 0}, {-2040, 0}})
                for (PixelType out : {PixelType::u8, PixelType::u16}) {
                    if (!finish_matches(integer_finish(d, offset * d / 7, delta), out, lo, hi)) return;
                    ++checked;
                }
    for (int w = 1; w <= 31; ++w)
        for (int h = 1; h <= 31; ++h) {
            const std::int64_t d = std::int64_t(w) * h;
            if (255 * d > 65535) continue;
            for (PixelType out : {PixelType::u8, PixelType::u16}) {
                if (!finish_matches(integer_finish(d), out, 0, 255 * d)) return;
                ++checked;
            }
        }
    EXPECT_GT(checked, 1000);
    // Outside 16 bits there is no such finish: the plan keeps the float route.
    simd::IntFinish16 fin;
    EXPECT_FALSE(simd::int_finish16(integer_finish(3), PixelType::u8, -40000, 40000, fin));
    EXPECT_FALSE(simd::int_finish16(integer_finish(65536), PixelType::u8, 0, 100, fin));
    LinearFinish scaled = integer_finish(5);
    scaled.integer_rounding = false;
    EXPECT_FALSE(simd::int_finish16(scaled, PixelType::u8, 0, 100, fin));
}

// Signed integer masks in 16-bit lanes, bit for bit: Sobel (sizes 3, 5, 7, orders 1 and 2), Scharr,
// Laplacian, sharpen, emboss, with scales and deltas, on 1 to 4 channels, odd sizes, every border, into
// u8, u16 and f32 (the last through the float finish of the exact sums).
TEST(CpuSmallInt, SignedMasksMatchReference) {
    const std::vector<std::string> specs = {
        "sobel:dx=1", "sobel:dx=0,dy=1", "sobel:dx=1,dy=1,ksize=5,scale=0.25,delta=128", "sobel:dx=2,ksize=7",
        "sobel:dx=1,ksize=5", "scharr:dx=1", "scharr:dx=0,dy=1,delta=128", "laplacian", "laplacian:neighbours=8,delta=128",
        "sharpen", "sharpen:strength=2", "emboss", "emboss:scale=0.5,delta=64", "sobel:dx=1,delta=-3", "laplacian:delta=7"};
    int k = 0;
    for (const std::string& spec : specs)
        for (BorderMode b : test::all_borders) {
            const int channels = 1 + k % 4, w = 29 + 2 * (k % 7), h = 13 + k % 5;
            const Image in = test::random_image(w, h, channels, PixelType::u8, 1000 + k++);
            for (PixelType out : {PixelType::u8, PixelType::u16, PixelType::f32}) {
                const LinearPlan p = op_plan(spec, in, out, b, 201);
                ASSERT_TRUE(p.exact) << spec;
                const bool fits = cpu::small_int_separable_applies(p);
                // Every one of these fits 16 bits except the 7x7 second derivative (sum |w| = 1024).
                EXPECT_EQ(fits, spec != "sobel:dx=2,ksize=7") << spec;
                expect_same(p, in, spec + " " + std::to_string(channels) + " channels, " + std::to_string(w) + "x" +
                                       std::to_string(h) + " border " + to_string(b) + " -> " + to_string(out));
            }
        }
}

// Random small signed integer masks, separable (outer products of random integer vectors) and not
// (direct), sizes 1..7 on each side including even ones, normalised by their sum where it is not zero.
TEST(CpuSmallInt, RandomSignedMasksMatchReference) {
    std::mt19937 rng(77);
    int taken = 0;
    for (int k = 0; k < 120; ++k) {
        const int mw = 1 + int(rng() % 7), mh = 1 + int(rng() % 7), channels = 1 + int(rng() % 4);
        const int w = 1 + int(rng() % 40), h = 1 + int(rng() % 20);
        const Image in = test::random_image(w, h, channels, PixelType::u8, 2000 + unsigned(k));
        Mask m = test::random_mask(mw, mh, true, 3000 + unsigned(k), 3);
        if (k % 2) {
            std::vector<double> r, c;
            for (int i = 0; i < mw; ++i) r.push_back(double(int(rng() % 7) - 3));
            for (int j = 0; j < mh; ++j) c.push_back(double(int(rng() % 5) - 2));
            m = outer(r, c);
        }
        const BorderMode b = test::all_borders[std::size_t(k) % std::size(test::all_borders)];
        const Normalise n = k % 3 == 0 ? Normalise::sum : Normalise::none;
        const PixelType out = k % 5 == 0 ? PixelType::u16 : PixelType::u8;
        const LinearPlan p = test::plan_for(m, in.shape(), out, b, 99, n, 1, double(int(rng() % 9) - 4));
        if (!p.exact) continue;
        taken += cpu::small_int_separable_applies(p);
        expect_same(p, in, "mask " + std::to_string(mw) + "x" + std::to_string(mh) + " #" + std::to_string(k) + " on " +
                               std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(channels));
    }
    EXPECT_GT(taken, 60);
}

// Boxes of every width and height 1..31 (even, odd, non-square; tall ones keep a running column sum),
// masks larger than the image, 1-pixel images, u8 and u16 input (u16 and the boxes past the 16-bit
// bound take the float path: the same bits).
TEST(CpuSmallInt, BoxesOfEveryWidthMatchReference) {
    int k = 0;
    for (int mw = 1; mw <= 31; mw += (mw < 9 ? 1 : 3))
        for (int mh = 1; mh <= 31; mh += (mh < 9 ? 1 : 4)) {
            const BorderMode b = test::all_borders[std::size_t(k) % std::size(test::all_borders)];
            const int channels = 1 + k % 4;
            const int w = k % 11 == 0 ? 1 : 3 + k % 45, h = k % 13 == 0 ? 1 : 2 + k % 37;
            for (PixelType type : {PixelType::u8, PixelType::u16}) {
                const Image in = test::random_image(w, h, channels, type, 4000 + unsigned(k));
                const LinearPlan p = op_plan("box:width=" + std::to_string(mw) + ",height=" + std::to_string(mh), in,
                                             type, b, 17);
                if (type == PixelType::u8) EXPECT_EQ(cpu::small_int_separable_applies(p), 255 * mw * mh <= 65535);
                expect_same(p, in, "box " + std::to_string(mw) + "x" + std::to_string(mh) + " on " + std::to_string(w) +
                                       "x" + std::to_string(h) + "x" + std::to_string(channels) + " " + to_string(type) +
                                       " border " + to_string(b));
            }
            ++k;
        }
}

// The same bits on 1, 2, 3 and 7 threads (bands and strips cut differently; a running sum restarts at
// every band) for boxes, Sobel and the direct forms, on an image wide enough for several strips.
TEST(CpuSmallInt, ResultsDoNotDependOnThreadCount) {
    const Image in = test::random_image(613, 211, 3, PixelType::u8, 31);
    std::vector<LinearPlan> plans;
    for (const char* spec : {"box:width=5", "box:width=4,height=9", "box:width=31,height=2", "sobel:dx=1", "scharr:dx=0,dy=1",
                             "laplacian:neighbours=8,delta=128", "sharpen", "emboss"})
        plans.push_back(op_plan(spec, in, PixelType::u8, BorderMode::mirror));
    for (const LinearPlan& p : plans) ASSERT_TRUE(cpu::small_int_separable_applies(p));
    std::vector<Image> first;
    for (int threads : {1, 2, 3, 7}) {
        auto ex = make_cpu_executor(threads);
        for (std::size_t i = 0; i < plans.size(); ++i) {
            Image got(in.shape());
            ex->linear(plans[i], in.view(), got.view());
            if (first.size() < plans.size()) {
                Image want(in.shape());
                reference().linear(plans[i], in.view(), want.view());
                EXPECT_TRUE(test::identical(want.view(), got.view())) << "plan " << i;
                first.push_back(std::move(got));
            } else {
                EXPECT_TRUE(test::identical(first[i].view(), got.view())) << "plan " << i << ", " << threads << " threads";
            }
        }
    }
}

// Every compiled SIMD target gives the reference's bits on the 16-bit forms (signed, direct, running,
// each finish variant), with widths that leave vector tails.
TEST(CpuSmallInt, EverySimdTargetMatchesReference) {
    const Image in = test::random_image(133, 23, 3, PixelType::u8, 41);
    std::vector<LinearPlan> plans;
    for (const char* spec : {"box:width=5", "box:width=3,height=7", "box:width=6", "sobel:dx=1", "scharr:dx=1,delta=128",
                             "laplacian", "sharpen", "emboss:scale=0.5,delta=64", "sobel:dx=1,scale=0.25"})
        for (PixelType out : {PixelType::u8, PixelType::u16})
            plans.push_back(op_plan(spec, in, out, BorderMode::reflect));
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        auto ex = make_cpu_executor(2);
        for (std::size_t k = 0; k < plans.size(); ++k) {
            Image got(in.width(), in.height(), 3, plans[k].out), want(in.width(), in.height(), 3, plans[k].out);
            ex->linear(plans[k], in.view(), got.view());
            reference().linear(plans[k], in.view(), want.view());
            EXPECT_TRUE(test::identical(want.view(), got.view())) << hwy::TargetName(target) << " plan " << k;
        }
        // The finish on its own, every sum of a box 5x5 and of a signed range.
        EXPECT_TRUE(finish_matches(integer_finish(25), PixelType::u8, 0, 255 * 25)) << hwy::TargetName(target);
        EXPECT_TRUE(finish_matches(integer_finish(6, 3, 128), PixelType::u16, -3000, 3000)) << hwy::TargetName(target);
        EXPECT_TRUE(finish_matches(integer_finish(1000), PixelType::u16, 0, 63535)) << hwy::TargetName(target);
        EXPECT_TRUE(finish_matches(integer_finish(1), PixelType::u8, 0, 65535)) << hwy::TargetName(target);
    }
    hwy::SetSupportedTargetsForTest(0);
}

// Outputs whose rows start 1..15 samples past a cache line (NumPy's arrays start 16 bytes past one):
// the 16-bit and Q15 kernels write up to the line plainly and align their vectors (and the ring rows
// they read) from there. Bit for bit the aligned output's, on every SIMD target, with a running box,
// a Q15 Gaussian, a direct Q15 mask, Sobel and a box into f32; wide enough for several vectors a row,
// pitches with and without a multiple of 64 bytes.
TEST(CpuSmallInt, OutputsOffACacheLineOnEveryTarget) {
    const Image in3 = test::random_image(301, 11, 3, PixelType::u8, 61), in1 = test::random_image(517, 9, 1, PixelType::u8, 62);
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        auto ex = make_cpu_executor(2);
        for (const Image* in : {&in3, &in1}) {
            std::vector<LinearPlan> plans = {
                separable_plan(outer({1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}), *in, PixelType::u8, BorderMode::mirror, Normalise::sum),
                separable_plan(outer({1, 1, 1}, {1, 1, 1, 1, 1, 1}), *in, PixelType::u16, BorderMode::constant, Normalise::sum, 40),
                separable_plan(outer({1, 1, 1}, {1, 1, 1, 1}), *in, PixelType::f32, BorderMode::wrap, Normalise::sum),
                gaussian_plan(1.7, *in, BorderMode::reflect),
                test::plan_for(Mask(3, 3, {-1, 0, 1, -2, 0, 2, -1, 0, 1}), in->shape(), PixelType::u8, BorderMode::mirror,
                               0, Normalise::none, 1, 128),
                test::plan_for(Mask(3, 3, {0.1, 0.2, 0.05, 0.13, 0.21, 0.07, 0.03, 0.11, 0.1}), in->shape(), PixelType::u8),
            };
            for (const LinearPlan& p : plans) {
                Image want(in->width(), in->height(), in->channels(), p.out);
                ex->linear(p, in->view(), want.view());
                if (p.exact) {
                    Image ref(in->width(), in->height(), in->channels(), p.out);
                    reference().linear(p, in->view(), ref.view());
                    EXPECT_TRUE(test::identical(ref.view(), want.view())) << hwy::TargetName(target);
                }
                for (int dx = 1; dx <= 15; ++dx) {
                    Image big(in->width() + 16 + (dx % 2 ? 0 : dx), in->height(), in->channels(), p.out);
                    const ImageView out = big.view().roi(dx, 0, in->width(), in->height());
                    ex->linear(p, in->view(), out);
                    EXPECT_TRUE(test::identical(want.view(), ConstImageView(out)))
                        << hwy::TargetName(target) << " " << p.step.mask.width << "x" << p.step.mask.height << " to "
                        << to_string(p.out) << " on " << in->channels() << " channels, offset " << dx;
                }
            }
        }
    }
    hwy::SetSupportedTargetsForTest(0);
}

// Boxes on u8 into u8 run in one sweep a row (fast_linear_8bit.cpp, Box16Job): two samples a 16-bit lane,
// the interior of each input row read in place and only the blocks whose taps reach past the edge (or
// a row wholly outside) read padded copies. Bit for bit the reference's on every SIMD target: widths
// with no interior, a short one and several blocks; every border; 1 to 4 channels; masks of 1 to 9 a side
// and larger than the image; finishes with and without a clamp (a delta, no normalisation); inputs and
// outputs packed as NumPy packs them (pitch = the row's bytes, rows at every offset) from a vector
// boundary and 1..15 bytes past one.
TEST(CpuSmallInt, BoxSweepMatchesReferenceOnEveryTarget) {
    struct Case {
        int mw, mh;
        Normalise norm;
        double delta;
    };
    const Case cases[] = {{5, 5, Normalise::sum, 0}, {3, 3, Normalise::sum, 0}, {1, 4, Normalise::sum, 0},
                          {9, 2, Normalise::sum, 0}, {4, 6, Normalise::sum, 3}, {6, 1, Normalise::none, 0},
                          {2, 7, Normalise::sum, -5}, {8, 8, Normalise::sum, 0}};
    const int widths[] = {1, 2, 7, 40, 77, 131, 300};
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        auto ex = make_cpu_executor(2);
        int k = 0;
        for (const Case& c : cases)
            for (int width : widths) {
                const int channels = 1 + k % 4, height = k % 7 == 0 ? 1 : 3 + k % 19;
                const BorderMode b = test::all_borders[std::size_t(k) % std::size(test::all_borders)];
                const Image in = test::random_image(width, height, channels, PixelType::u8, 900 + unsigned(k));
                LinearPlan p = test::plan_for(Mask(c.mw, c.mh, std::vector<double>(std::size_t(c.mw * c.mh), 1.0)), in.shape(),
                                              PixelType::u8, b, 77, c.norm, 1, c.delta);
                if (!p.integer_separable) p.integer_separable = integer_separable_form(p.integer_mask, c.mw, c.mh);
                p.algorithm = LinearAlgorithm::separable;
                const std::string what = std::string(hwy::TargetName(target)) + " box " + std::to_string(c.mw) + "x" +
                                         std::to_string(c.mh) + " on " + std::to_string(width) + "x" + std::to_string(height) +
                                         "x" + std::to_string(channels) + " border " + to_string(b);
                ASSERT_TRUE(cpu::small_int_separable_applies(p)) << what;
                Image want(in.shape());
                reference().linear(p, in.view(), want.view());
                Image got(in.shape());
                ex->linear(p, in.view(), got.view());
                EXPECT_TRUE(test::identical(want.view(), got.view())) << what;
                const std::size_t pitch = in.shape().row_bytes();
                for (std::size_t start : {std::size_t(0), std::size_t(1) + std::size_t(k) % 15}) {
                    std::vector<std::byte> in_store(pitch * std::size_t(height) + 256), out_store(pitch * std::size_t(height) + 256);
                    auto at = [](std::vector<std::byte>& v, std::size_t extra) {
                        return v.data() + (64 - reinterpret_cast<std::uintptr_t>(v.data()) % 64) % 64 + extra;
                    };
                    const ImageView packed_in{at(in_store, (start * 7) % 16), in.shape(), pitch, Memory::host};
                    for (int y = 0; y < height; ++y) std::memcpy(packed_in.row_bytes(y), in.view().row_bytes(y), pitch);
                    const ImageView packed_out{at(out_store, start), in.shape(), pitch, Memory::host};
                    ex->linear(p, ConstImageView(packed_in), packed_out);
                    EXPECT_TRUE(test::identical(want.view(), ConstImageView(packed_out))) << what << ", packed from " << start;
                }
                ++k;
            }
    }
    hwy::SetSupportedTargetsForTest(0);
}

// The box sweep on an image wide enough to be cut into strips (each strip pads its own edges and reads
// its interior in place), on 1 and 3 threads, and into an output big enough to be streamed.
TEST(CpuSmallInt, BoxSweepStripsMatchReference) {
    const Image in = test::random_image(40001, 12, 4, PixelType::u8, 17);
    for (const char* spec : {"box:width=5", "box:width=9,height=3"}) {
        const LinearPlan p = op_plan(spec, in, PixelType::u8, BorderMode::reflect);
        Image want(in.shape());
        reference().linear(p, in.view(), want.view());
        for (int threads : {1, 3}) {
            Image got(in.shape());
            make_cpu_executor(threads)->linear(p, in.view(), got.view());
            EXPECT_TRUE(test::identical(want.view(), got.view())) << spec << ", " << threads << " threads";
        }
    }
    const Image big = test::random_image(4099, 4101, 1, PixelType::u8, 18);  // 16 MiB: streamed
    const LinearPlan p = op_plan("box:width=5", big, PixelType::u8, BorderMode::mirror);
    Image want(big.shape()), got(big.shape());
    reference().linear(p, big.view(), want.view());
    fast().linear(p, big.view(), got.view());
    EXPECT_TRUE(test::identical(want.view(), got.view()));
}
