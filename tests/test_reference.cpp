// The reference backend against results computed by hand from SPEC.md. Everything else is tested
// against the reference, so these cases pin the reference itself down.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "apron/pipeline.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

Image from_rows(std::initializer_list<std::initializer_list<double>> rows, PixelType type) {
    const int h = int(rows.size()), w = int(rows.begin()->size());
    Image img(w, h, 1, type);
    int y = 0;
    for (auto& r : rows) {
        int x = 0;
        for (double v : r)
            with_type(type, [&]<class T>() { img.row<T>(y)[x] = T(v); }), ++x;
        ++y;
    }
    return img;
}

std::vector<double> values(const Image& img) {
    std::vector<double> v;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x)
            for (int c = 0; c < img.channels(); ++c) v.push_back(test::sample_at(img.view(), x, y, c));
    return v;
}

Image run(const std::string& op, const Image& in, std::optional<PixelType> out = {}) {
    RunOptions o;
    o.backend = Backend::reference;
    o.out_type = out;
    return Pipeline({op}).run(in, o);
}

std::string write_mask(const std::string& name, const std::string& text) {
    const std::string path = testing::TempDir() + name;
    std::ofstream(path) << text;
    return path;
}

} // namespace

TEST(Reference, CorrelateAndConvolveWithAnEvenMask) {
    // 2x1 mask [1 10], centre cx = 1: correlate out(x) = 1*in(x-1) + 10*in(x);
    // convolve out(x) = 1*in(x+1-... ) i.e. m(i) in(x - i + 1): 1*in(x+1) + 10*in(x).
    const std::string m = write_mask("even2.kernel", "2 1\n1 10\n");
    const Image in = from_rows({{1, 2, 3}}, PixelType::f32);
    EXPECT_EQ(values(run("correlate:mask=" + m + ",border=constant", in)), (std::vector<double>{10, 21, 32}));
    EXPECT_EQ(values(run("convolve:mask=" + m + ",border=constant", in)), (std::vector<double>{12, 23, 30}));
    EXPECT_EQ(values(run("correlate:mask=" + m + ",border=wrap", in)), (std::vector<double>{13, 21, 32}));
}

TEST(Reference, BorderModesOnASmallImage) {
    const std::string m = write_mask("sum3.kernel", "3 1\n1 1 1\n");
    const Image in = from_rows({{1, 2, 4}}, PixelType::f32);
    EXPECT_EQ(values(run("correlate:mask=" + m + ",border=constant,value=10", in)), (std::vector<double>{13, 7, 16}));
    EXPECT_EQ(values(run("correlate:mask=" + m + ",border=nearest", in)), (std::vector<double>{4, 7, 10}));
    EXPECT_EQ(values(run("correlate:mask=" + m + ",border=reflect", in)), (std::vector<double>{4, 7, 10}));
    EXPECT_EQ(values(run("correlate:mask=" + m + ",border=mirror", in)), (std::vector<double>{5, 7, 8}));
    EXPECT_EQ(values(run("correlate:mask=" + m + ",border=wrap", in)), (std::vector<double>{7, 7, 7}));
}

TEST(Reference, MaskLargerThanTheImageRepeatsTheExtension) {
    // 1x1 image, 5x5 mask of ones: every mode but constant reads the one pixel 25 times.
    const Image in = from_rows({{3}}, PixelType::u16);
    for (const char* b : {"nearest", "reflect", "mirror", "wrap"})
        EXPECT_EQ(values(run(std::string("box:width=5,scale=25,border=") + b, in)), (std::vector<double>{75})) << b;
    EXPECT_EQ(values(run("box:width=5,scale=25,border=constant,value=1", in)), (std::vector<double>{27}));
}

TEST(Reference, RoundsHalfToEvenAndSaturates) {
    // box 2x1 over u8: (1+2)/2 = 1.5 -> 2, (2+3)/2 = 2.5 -> 2, (3+3)/2 = 3.
    const Image in = from_rows({{1, 2, 3}}, PixelType::u8);
    EXPECT_EQ(values(run("box:width=2,height=1,border=nearest", in)), (std::vector<double>{1, 2, 2}));
    // Saturation: 3x sharpen of a step, and negative values clamp to 0.
    const Image step = from_rows({{0, 0, 200, 200}}, PixelType::u8);
    EXPECT_EQ(values(run("separable:row=-1:3:-1,border=nearest", step)), (std::vector<double>{0, 0, 255, 200}));
    // f32 output keeps the sign.
    EXPECT_EQ(values(run("separable:row=-1:3:-1,border=nearest", step, PixelType::f32)),
              (std::vector<double>{0, -200, 400, 200}));
}

TEST(Reference, Normalisations) {
    const std::string pos = write_mask("pos.kernel", "3 1\n1 2 1\n");
    const std::string zero = write_mask("zero.kernel", "3 1\n-1 0 1\n");
    const std::string neg = write_mask("neg.kernel", "3 1\n-1 -2 -1\n");
    const Image in = from_rows({{10, 20, 60}}, PixelType::u8);
    EXPECT_EQ(values(run("correlate:mask=" + pos + ",normalize=sum,border=nearest", in)), (std::vector<double>{12, 28, 50}));
    EXPECT_EQ(values(run("correlate:mask=" + pos + ",normalize=book,border=nearest", in)), (std::vector<double>{12, 28, 50}));
    // book, S = 0: add 128 (u8 mid): 10, 50, 40 -> 138, 178, 168
    EXPECT_EQ(values(run("correlate:mask=" + zero + ",normalize=book,border=nearest", in)), (std::vector<double>{138, 178, 168}));
    // book, S < 0: add 255: -50 -> 205, -110 -> 145, -200 -> 55
    EXPECT_EQ(values(run("correlate:mask=" + neg + ",normalize=book,border=nearest", in)), (std::vector<double>{205, 145, 55}));
    // sum with a negative sum divides by it: (-50)/(-4) = 12.5 -> 12
    EXPECT_EQ(values(run("correlate:mask=" + neg + ",normalize=sum,border=nearest", in)), (std::vector<double>{12, 28, 50}));
    // scale and delta after normalisation: 2 * 12.5 + 0.5 = 25.5 -> 26 (double path: scale != 1)
    EXPECT_EQ(values(run("correlate:mask=" + pos + ",normalize=sum,scale=2,delta=0.5,border=nearest", in)),
              (std::vector<double>{26, 56, 100.0}));
}

// SPEC.md "Any finite weights": the same normalisations with weights near the largest double (their sum
// passes it) and subnormal ones; unnormalised sums of huge weights are inf, not NaN.
TEST(Reference, WeightsAtTheEdgesOfDouble) {
    const Image in = from_rows({{10, 20, 60}}, PixelType::u8);
    for (const char* w : {"1e308", "1.5e308", "1e-300"}) {
        const std::string m = write_mask("edge.kernel", std::string("3 1\n") + w + " " + w + " " + w + "\n");
        EXPECT_EQ(values(run("correlate:mask=" + m + ",normalize=sum,border=nearest", in)), (std::vector<double>{13, 30, 47})) << w;
        EXPECT_EQ(values(run("correlate:mask=" + m + ",border=nearest", in, PixelType::f32))[0], std::stod(w) > 1 ? INFINITY : 0.0)
            << w;
    }
    // [1 2 1] times 2^1023, 1.7e308 / 2 and a subnormal, built directly.
    for (double b : {0x1p1023, 1.7e308, 0x1p-1065}) {
        LinearStep s;
        s.mask = Mask(3, 1, {b / 2, b, b / 2});
        s.border = BorderMode::nearest;
        s.normalise = Normalise::sum;
        Pipeline p;
        p.add(OpProgram{"t", {Step{s}}});
        EXPECT_EQ(values(p.run(in, {.backend = Backend::reference})), (std::vector<double>{12, 28, 50})) << b;
        s.normalise = Normalise::none;
        Pipeline q;
        q.add(OpProgram{"t", {Step{s}}});
        for (double v : values(q.run(in, {.backend = Backend::reference, .out_type = PixelType::f32})))
            EXPECT_EQ(v, b > 1 ? INFINITY : 0.0) << b;
    }
}

TEST(Reference, GaussianMatchesItsDefinition) {
    // 1D gaussian sigma=1 radius 1 on an impulse: weights e^-0.5 / (1 + 2 e^-0.5) etc.
    const Image in = from_rows({{0, 0, 1, 0, 0}}, PixelType::f32);
    const auto v = values(run("gaussian:sigma=1,radius=1,border=constant", in));
    const double e = std::exp(-0.5), s = 1 + 2 * e;
    ASSERT_EQ(v.size(), 5u);
    EXPECT_NEAR(v[1], e / s * (1 / s), 1e-7);  // column kernel centre weight 1/s times row weight e/s
    EXPECT_NEAR(v[2], 1 / s / s, 1e-7);
}

TEST(Reference, SobelWeightsAreOpenCVs) {
    const Image in = from_rows({{0, 0, 0}, {0, 1, 0}, {0, 0, 0}}, PixelType::f32);
    // Correlating an impulse gives the mask rotated by 180 degrees.
    EXPECT_EQ(values(run("sobel:dx=1,border=constant", in)), (std::vector<double>{1, 0, -1, 2, 0, -2, 1, 0, -1}));
    EXPECT_EQ(values(run("sobel:dx=0,dy=1,border=constant", in)), (std::vector<double>{1, 2, 1, 0, 0, 0, -1, -2, -1}));
    EXPECT_EQ(values(run("scharr:dx=1,border=constant", in)), (std::vector<double>{3, 0, -3, 10, 0, -10, 3, 0, -3}));
}

TEST(Reference, MorphologyIgnoresOutsidePixelsByDefault) {
    const Image in = from_rows({{5, 1, 7}, {2, 9, 3}}, PixelType::u8);
    EXPECT_EQ(values(run("dilate:se=rect:3x3", in)), (std::vector<double>{9, 9, 9, 9, 9, 9}));
    EXPECT_EQ(values(run("erode:se=rect:3x1", in)), (std::vector<double>{1, 1, 1, 2, 2, 3}));
    // constant border 0 makes erosion reach 0 at the edges.
    EXPECT_EQ(values(run("erode:se=rect:3x1,border=constant", in)), (std::vector<double>{0, 1, 0, 0, 2, 0}));
    // Even SE 2x1, anchor 1: out(x) = max(in(x-1), in(x)).
    EXPECT_EQ(values(run("dilate:se=rect:2x1", in)), (std::vector<double>{5, 5, 7, 2, 9, 9}));
    // gradient = dilate - erode; tophat = in - open.
    EXPECT_EQ(values(run("gradient:se=rect:3x1", in)), (std::vector<double>{4, 6, 6, 7, 7, 6}));
}

TEST(Reference, UnsharpIsIdentityPlusAmountTimesDetail) {
    const Image in = test::random_image(9, 7, 1, PixelType::f32, 5);
    const Image blur = run("gaussian:sigma=1.2", in);
    const Image sharp = run("unsharp:sigma=1.2,amount=0.6", in);
    for (int y = 0; y < 7; ++y)
        for (int x = 0; x < 9; ++x) {
            const double a = in.row<float>(y)[x], b = blur.row<float>(y)[x];
            EXPECT_NEAR(sharp.row<float>(y)[x], a + 0.6 * (a - b), 1e-5);
        }
}

TEST(Reference, EmptyPipelineConvertsTheType) {
    const Image in = from_rows({{-0.5, 0.5, 1.5, 2.5, 300}}, PixelType::f32);
    EXPECT_EQ(values(Pipeline().run(in, {.backend = Backend::reference, .out_type = PixelType::u8})),
              (std::vector<double>{0, 0, 2, 2, 255}));
}
