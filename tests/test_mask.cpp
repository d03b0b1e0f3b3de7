// Mask files and mask analysis (integer form, separability, flipping).
#include <gtest/gtest.h>

#include <numeric>

#include <cmath>

#include "apron/errors.hpp"
#include "apron/mask.hpp"

using namespace apron;

namespace {

void expect_error(const std::string& text, const std::string& fragment) {
    try {
        parse_mask_text(text, "m.kernel");
        ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("m.kernel"), std::string::npos) << msg;
        EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << "error must be one line: " << msg;
    }
}

} // namespace

TEST(MaskFile, ParsesCommentsBlankLinesDecimalsAndCentre) {
    const Mask m = parse_mask_text("# a comment\n\n4 2\n1 2.5 -3 4e-1\r\n  # inside\n0 0 0 1\n\n", "m");
    EXPECT_EQ(m.width, 4);
    EXPECT_EQ(m.height, 2);
    EXPECT_EQ(m.anchor_x, 2);
    EXPECT_EQ(m.anchor_y, 1);
    EXPECT_DOUBLE_EQ(m.at(1, 0), 2.5);
    EXPECT_DOUBLE_EQ(m.at(3, 0), 0.4);
    EXPECT_DOUBLE_EQ(m.at(3, 1), 1.0);
}

TEST(MaskFile, RefusesMalformedText) {
    expect_error("", "empty");
    expect_error("3\n1 2 3\n", "size");
    expect_error("0 3\n", "outside");
    expect_error("5000 1\n", "outside");
    expect_error("2.5 1\n1 2\n", "size");
    expect_error("2 2\n1 2\n", "rows");
    expect_error("2 2\n1 2\n3 4\n5 6\n", "rows");
    expect_error("2 1\n1 2 3\n", "expected 2 weights");
    expect_error("2 1\n1 x\n", "'x' is not a finite number");
    expect_error("2 1\n1 nan\n", "not a finite");
    expect_error("2 1\n1 1e999\n", "not a finite");
    expect_error(std::string("1 1\n1\0", 6), "NUL");
}

// A volume's mask file: "W H D", then D planes of H rows, in order of z; "W H" is one plane.
TEST(MaskFile, PlanesOfAVolumesMask) {
    const std::vector<Mask> planes = parse_mask_planes_text("# 2 x 1 x 3\n2 1 3\n1 2\n\n# plane 1\n3 4\n5 6\n", "m");
    ASSERT_EQ(planes.size(), 3u);
    EXPECT_EQ(planes[1].weights[0], 3);
    EXPECT_EQ(planes[2].weights[1], 6);
    EXPECT_EQ(planes[2].anchor_x, 1);
    EXPECT_EQ(parse_mask_planes_text("2 1\n1 2\n", "m").size(), 1u);
    auto refuses = [](const std::string& text, const std::string& part) {
        try {
            parse_mask_planes_text(text, "m.kernel");
            ADD_FAILURE() << "accepted: " << text;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("m.kernel"), std::string::npos) << e.what();
        }
    };
    refuses("2 1 0\n", "outside");
    refuses("2 1 x\n1 2\n", "'W H D'");
    refuses("2 1 2\n1 2\n", "2 planes of 1 rows");
    refuses("2 1 2\n1 2\n3\n", "expected 2 weights");
    refuses("2 1 2\n1 2\n3 nan\n", "not a finite");
    refuses("4097 4097 2\n", "more than");
    refuses("1 1 1 1\n1\n", "size");
}

TEST(MaskFile, NumbersFollowTheStrictSyntaxOfOpParameters) {
    // Weights: plain decimals, as in op parameters; a denormal is a number like any other.
    const Mask m = parse_mask_text("5 1\n.5 2. -0 1e-320 -2.5E+2\n", "m");
    EXPECT_EQ(m.weights, (std::vector<double>{0.5, 2, 0, 1e-320, -250}));
    EXPECT_GT(m.weights[3], 0);
    for (const char* bad : {"+1", "0x10", "0x1p3", "inf", "-inf", "infinity", "nan", "1e", "1.2.3", "1,5"})
        expect_error(std::string("2 1\n1 ") + bad + "\n", std::string("'") + bad + "' is not a finite number");
    expect_error("2 1\n1 1e999\n", "'1e999' is not a finite number (beyond the double range)");
    // The size: unsigned integers only.
    for (const char* bad : {"3.0 1", "+2 1", "2e0 1", "-2 1", "0x2 1", "2 1.", "2 one"}) expect_error(std::string(bad) + "\n1 2\n", "expected the mask size 'W H'");
    expect_error("99999999999 1\n", "mask size 99999999999x1 outside 1..4097");
    expect_error("1 4098\n", "mask size 1x4098 outside 1..4097");
}

TEST(MaskFile, MissingFileIsNamed) {
    try {
        read_mask_file("/nonexistent/dir/m.kernel");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/m.kernel"), std::string::npos);
    }
}

TEST(MaskAnalysis, IntegerFormFindsTheCommonDivisor) {
    auto im = integer_form(Mask(3, 1, {0.25, 0.5, 0.25}));
    ASSERT_TRUE(im);
    EXPECT_EQ(im->divisor, 4);
    EXPECT_EQ(im->weights, (std::vector<std::int64_t>{1, 2, 1}));
    EXPECT_EQ(im->abs_sum, 4);
    auto thirds = integer_form(Mask(3, 1, {1.0 / 3, 1.0 / 3, -2.0 / 3}));
    ASSERT_TRUE(thirds);
    EXPECT_EQ(thirds->divisor, 3);
    EXPECT_EQ(thirds->weights, (std::vector<std::int64_t>{1, 1, -2}));
    auto mixed = integer_form(Mask(2, 1, {0.25, 1.0 / 6}));
    ASSERT_TRUE(mixed);
    EXPECT_EQ(mixed->divisor, 12);
    EXPECT_FALSE(integer_form(Mask(2, 1, {0.1234567, 0.5})));
    EXPECT_FALSE(integer_form(Mask(1, 1, {3.14159265358979})));
}

TEST(MaskAnalysis, IntegerFormFindsTheSmallestDivisorOfAnyFraction) {
    // p / q for every q up to 1000 and a few p: the divisor is q over gcd(p, q), found by the continued
    // fraction (the planner runs this on every float mask, so it must not scan 2^20 candidates).
    for (std::int64_t q = 1; q <= 1000; ++q)
        for (std::int64_t p : {1, 7, -13, 999, 4096}) {
            auto im = integer_form(Mask(2, 1, {double(p) / double(q), 0.0}));
            ASSERT_TRUE(im) << p << "/" << q;
            EXPECT_EQ(im->divisor, q / std::gcd(std::abs(p), q)) << p << "/" << q;
        }
    // A prime just below the 2^20 limit, and one above it.
    EXPECT_EQ(integer_form(Mask(1, 1, {5.0 / 1048573}))->divisor, 1048573);
    EXPECT_FALSE(integer_form(Mask(1, 1, {5.0 / 1048583})));
}

TEST(MaskAnalysis, SeparableFormIsRankOneOnly) {
    const Mask sobel(3, 3, {-1, 0, 1, -2, 0, 2, -1, 0, 1});
    auto s = separable_form(sobel);
    ASSERT_TRUE(s);
    for (int j = 0; j < 3; ++j)
        for (int i = 0; i < 3; ++i) EXPECT_NEAR(s->column[j] * s->row[i], sobel.at(i, j), 1e-15);
    EXPECT_FALSE(separable_form(Mask(3, 3, {0, 1, 0, 1, -4, 1, 0, 1, 0})));
    EXPECT_FALSE(separable_form(Mask(2, 2, {0, 0, 0, 0})));

    auto im = integer_form(sobel);
    ASSERT_TRUE(im);
    auto is = integer_separable_form(*im, 3, 3);
    ASSERT_TRUE(is);
    EXPECT_EQ(is->row, (std::vector<std::int64_t>{-1, 0, 1}));
    EXPECT_EQ(is->column, (std::vector<std::int64_t>{1, 2, 1}));
    // 2*[1 1] x [1 3]: integer rank one whose factors need the gcd step.
    auto im2 = integer_form(Mask(2, 2, {2, 6, 2, 6}));
    auto is2 = integer_separable_form(*im2, 2, 2);
    ASSERT_TRUE(is2);
    EXPECT_EQ(is2->row, (std::vector<std::int64_t>{1, 3}));
    EXPECT_EQ(is2->column, (std::vector<std::int64_t>{2, 2}));
}

TEST(MaskAnalysis, FlipMovesTheAnchorOfEvenMasks) {
    const Mask m(4, 3, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    const Mask f = flipped(m);
    EXPECT_EQ(f.anchor_x, 1);  // 4 - 1 - 2
    EXPECT_EQ(f.anchor_y, 1);
    EXPECT_EQ(f.at(0, 0), 12);
    EXPECT_EQ(f.at(3, 2), 1);
    EXPECT_EQ(flipped(f), m);
}

TEST(MaskAnalysis, RefusesBadConstruction) {
    EXPECT_THROW(Mask(0, 1, {}), Error);
    EXPECT_THROW(Mask(2, 1, {1}), Error);
    EXPECT_THROW(Mask(1, 1, {std::nan("")}), Error);
}
