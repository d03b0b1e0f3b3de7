// Low-rank masks (src/core/low_rank.cpp) and their plans: the SVD against masks of known rank, the rank
// the planner picks, and the low-rank path run through whole pipelines on the CPU backend against the
// reference executor, within SPEC.md's tolerance, for every border mode, odd, even and non-square masks,
// off-centre anchors, every type and the normalisations.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/pipeline.hpp"
#include "core/low_rank.hpp"
#include "plan/plan.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

using test::all_borders;

// A W x H mask of rank r: a sum of r random outer products.
Mask rank_mask(int w, int h, int r, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> weights(std::size_t(w) * h, 0.0);
    for (int t = 0; t < r; ++t) {
        std::vector<double> row(static_cast<std::size_t>(w)), col(static_cast<std::size_t>(h));
        for (double& x : row) x = u(rng);
        for (double& x : col) x = u(rng);
        for (int j = 0; j < h; ++j)
            for (int i = 0; i < w; ++i) weights[std::size_t(j) * w + i] += col[std::size_t(j)] * row[std::size_t(i)];
    }
    return Mask(w, h, weights);
}

// A difference of Gaussians: rank 2, the usual band-pass.
Mask dog(int radius, double s1, double s2) {
    const int n = 2 * radius + 1;
    std::vector<double> g1(static_cast<std::size_t>(n)), g2(static_cast<std::size_t>(n));
    double t1 = 0, t2 = 0;
    for (int i = 0; i < n; ++i) {
        const double x = i - radius;
        t1 += g1[std::size_t(i)] = std::exp(-x * x / (2 * s1 * s1));
        t2 += g2[std::size_t(i)] = std::exp(-x * x / (2 * s2 * s2));
    }
    std::vector<double> w(std::size_t(n) * n);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
            w[std::size_t(j) * n + i] = g1[std::size_t(i)] * g1[std::size_t(j)] / (t1 * t1) - g2[std::size_t(i)] * g2[std::size_t(j)] / (t2 * t2);
    return Mask(n, n, w);
}

using test::correlation_op;

TEST(LowRank, SingularValuesOfKnownMasks) {
    // A diagonal mask: its singular values are the absolute diagonal, largest first.
    Mask diag(4, 4, {3, 0, 0, 0, 0, -7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0.5});
    const auto s = mask_singular_values(diag);
    ASSERT_EQ(s.size(), 4u);
    EXPECT_NEAR(s[0], 7, 1e-12);
    EXPECT_NEAR(s[1], 3, 1e-12);
    EXPECT_NEAR(s[2], 1, 1e-12);
    EXPECT_NEAR(s[3], 0.5, 1e-12);
    // Rank r masks, tall and wide: r singular values stand out, the rest are rounding.
    for (auto [w, h, r] : {std::tuple{9, 9, 2}, {31, 17, 3}, {12, 40, 4}, {64, 64, 5}}) {
        const auto sv = mask_singular_values(rank_mask(w, h, r, 7u + unsigned(w)));
        ASSERT_EQ(int(sv.size()), std::min(w, h));
        EXPECT_GT(sv[std::size_t(r - 1)], 1e-3 * sv[0]) << w << "x" << h;
        if (int(sv.size()) > r) EXPECT_LT(sv[std::size_t(r)], 1e-12 * sv[0]) << w << "x" << h;
    }
}

TEST(LowRank, FormReconstructsTheMask) {
    for (auto [w, h, r] : {std::tuple{5, 5, 2}, {31, 31, 3}, {40, 11, 2}, {10, 33, 4}, {129, 129, 2}}) {
        const Mask m = rank_mask(w, h, r, 99u + unsigned(h));
        const auto lr = low_rank_form(m, 8);
        ASSERT_TRUE(lr) << w << "x" << h;
        EXPECT_EQ(int(lr->terms.size()), r) << w << "x" << h;
        double err = 0;
        for (int j = 0; j < h; ++j)
            for (int i = 0; i < w; ++i) {
                double v = 0;
                for (const auto& t : lr->terms) v += t.column[std::size_t(j)] * t.row[std::size_t(i)];
                err += std::fabs(v - m.at(i, j));
            }
        EXPECT_LE(err, 1e-9 * m.abs_sum());
        EXPECT_NEAR(lr->residual_l1, err, 1e-9 * m.abs_sum());
    }
    EXPECT_EQ(low_rank_form(dog(15, 3, 6), 8)->terms.size(), 2u);
    // A disk has no low-rank form within the tolerance; a mask of zeros has none at all.
    std::vector<double> disk(31 * 31);
    for (int j = 0; j < 31; ++j)
        for (int i = 0; i < 31; ++i) disk[std::size_t(j) * 31 + i] = (i - 15) * (i - 15) + (j - 15) * (j - 15) <= 225;
    EXPECT_FALSE(low_rank_form(Mask(31, 31, disk), 8));
    EXPECT_FALSE(low_rank_form(Mask(3, 3, std::vector<double>(9, 0.0)), 8));
    // The rank cap: a rank-5 mask has no form of rank <= 4.
    EXPECT_FALSE(low_rank_form(rank_mask(20, 20, 5, 3), 4));
}

// The pipeline with the low-rank path forced on the CPU backend against the reference executor.
void expect_low_rank_matches(const OpProgram& op, const Image& in, PixelType out, const std::string& what) {
    Pipeline p;
    p.add(op);
    RunOptions fast{.backend = Backend::cpu, .threads = 3, .out_type = out};
    fast.algorithm = Algorithm::low_rank;
    const std::string plan = p.describe(in.shape(), fast);
    ASSERT_NE(plan.find("low-rank term 1/"), std::string::npos) << what << "\n" << plan;
    const Image got = p.run(in.view(), fast);
    const Image want = p.run(in.view(), {.backend = Backend::reference, .out_type = out});
    const auto& s = std::get<LinearStep>(op.steps[0].action);
    double tol = 1;  // integer outputs: within 1 of the correctly rounded value
    if (out == PixelType::f32) {
        double mul = s.scale;
        if (s.normalise == Normalise::sum && s.mask.sum() != 0) mul /= s.mask.sum();
        const double in_max = std::max(test::max_abs(in.view()), std::fabs(s.border_value));
        tol = 1e-5 * s.mask.abs_sum() * in_max * std::fabs(mul) + 1e-30;
    }
    EXPECT_LE(test::max_abs_diff(want.view(), got.view()), tol) << what;
}

TEST(LowRank, PathMatchesReferenceEveryBorder) {
    const Image f = test::random_image(67, 45, 1, PixelType::f32, 5);
    const Image u = test::random_image(50, 37, 3, PixelType::u8, 6);
    for (BorderMode b : all_borders) {
        const std::string mode = to_string(b);
        expect_low_rank_matches(correlation_op(rank_mask(9, 9, 2, 1), b), f, PixelType::f32, "9x9 rank 2 f32 " + mode);
        expect_low_rank_matches(correlation_op(rank_mask(16, 10, 3, 2), b, 0.25), f, PixelType::f32,
                                "16x10 rank 3 f32 " + mode);
        expect_low_rank_matches(correlation_op(dog(15, 2, 5), b, 0, Normalise::none, 40, 128), u, PixelType::u8, "DoG 31x31 u8 " + mode);
        expect_low_rank_matches(correlation_op(rank_mask(7, 12, 2, 3), b, 17, Normalise::sum), u, PixelType::f32,
                                "7x12 rank 2 u8->f32 sum " + mode);
    }
}

TEST(LowRank, MasksLargerThanTheImageAndOffCentreAnchors) {
    const Image one = test::random_image(1, 1, 1, PixelType::f32, 8);
    const Image thin = test::random_image(5, 3, 2, PixelType::u16, 9);
    Mask m = rank_mask(65, 41, 2, 10);
    m.anchor_x = 3;
    m.anchor_y = 40;
    for (BorderMode b : all_borders) {
        expect_low_rank_matches(correlation_op(m, b), one, PixelType::f32, std::string("1x1 ") + to_string(b));
        expect_low_rank_matches(correlation_op(m, b), thin, PixelType::f32, std::string("5x3 u16 ") + to_string(b));
        expect_low_rank_matches(correlation_op(rank_mask(129, 129, 3, 11), b, 0, Normalise::none, 0.01), thin, PixelType::u16,
                                std::string("129x129 u16 ") + to_string(b));
    }
}

TEST(LowRank, PlannerOffersItOnlyWhereItIsExactEnough) {
    const ImageShape f32{256, 256, 1, PixelType::f32}, u8{256, 256, 1, PixelType::u8};
    auto estimates = [](const OpProgram& op, const ImageShape& s) {
        return make_plan({op}, s, s.type, Backend::cpu).operations.at(0).steps.at(0).estimates;
    };
    auto low_rank_reason = [&](const OpProgram& op, const ImageShape& s) {
        for (const auto& e : estimates(op, s))
            if (e.path == Algorithm::low_rank) return e.unavailable;
        return std::string("missing");
    };
    EXPECT_EQ(low_rank_reason(correlation_op(dog(10, 2, 4), BorderMode::reflect), f32), "");
    // Integer weights on an integer image are exact sums: never split into float terms.
    std::vector<double> ints(9 * 9);
    for (std::size_t k = 0; k < ints.size(); ++k) ints[k] = double(int(k % 7) - 3);
    EXPECT_NE(low_rank_reason(correlation_op(Mask(9, 9, ints), BorderMode::reflect), u8).find("exact"), std::string::npos);
    // A rank-1 mask within tolerance is separable, not low-rank.
    EXPECT_NE(low_rank_reason(correlation_op(rank_mask(9, 9, 1, 4), BorderMode::reflect), f32).find("rank 1"), std::string::npos);
    // Forcing a path that cannot run fails naming --algo.
    try {
        make_plan({correlation_op(rank_mask(9, 9, 1, 4), BorderMode::reflect)}, u8, PixelType::u8, Backend::cpu, Algorithm::tensor);
        ADD_FAILURE() << "tensor on the CPU backend was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--algo"), std::string::npos) << e.what();
    }
    EXPECT_THROW(make_plan({correlation_op(rank_mask(9, 9, 4, 4), BorderMode::reflect)}, f32, PixelType::f32, Backend::cpu,
                           Algorithm::separable),
                 Error);
}

} // namespace
