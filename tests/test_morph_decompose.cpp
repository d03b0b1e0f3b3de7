// Structuring elements as chords (plan/morph_decompose.cpp): the chords rebuild the element exactly, the
// planner picks rectangle / chords / direct, and iterations of a full rectangle merge into one larger
// rectangle when borders are ignored (bit for bit what iterating gives), never with a border mode.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "plan/morph_decompose.hpp"
#include "plan/plan.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

// The element the chords describe, on the same grid and anchor as `like`.
Mask from_chords(const std::vector<MorphChord>& chords, const Mask& like) {
    Mask m(like.width, like.height, std::vector<double>(std::size_t(like.width) * like.height, 0.0));
    for (const MorphChord& c : chords)
        for (int k = 0; k < c.length; ++k) {
            const int i = c.dx + like.anchor_x + k, j = c.dy + like.anchor_y;
            EXPECT_TRUE(i >= 0 && i < like.width && j >= 0 && j < like.height) << i << ',' << j;
            if (i < 0 || i >= like.width || j < 0 || j >= like.height) continue;
            EXPECT_EQ(m.at(i, j), 0.0) << "cell " << i << ',' << j << " in two chords";
            m.at(i, j) = 1;
        }
    return m;
}

Mask random_element(int w, int h, double density, std::mt19937& rng) {
    std::bernoulli_distribution set(density);
    Mask m(w, h, std::vector<double>(std::size_t(w) * h, 0.0));
    bool any = false;
    for (double& v : m.weights) any |= (v = set(rng) ? 1.0 : 0.0) != 0;
    if (!any) m.at(w / 2, h / 2) = 1;
    return m;
}

void expect_exact_chords(const Mask& e, const std::string& what) {
    const std::vector<MorphChord> chords = element_chords(e);
    ASSERT_FALSE(chords.empty()) << what;
    for (std::size_t k = 1; k < chords.size(); ++k) {
        EXPECT_LE(chords[k - 1].dy, chords[k].dy) << what << ": not sorted by dy";
        // Runs are maximal: two chords of one row are separated by at least one unset cell.
        if (chords[k - 1].dy == chords[k].dy) EXPECT_LT(chords[k - 1].dx + chords[k - 1].length, chords[k].dx) << what;
    }
    for (const MorphChord& c : chords) EXPECT_GE(c.length, 1) << what;
    const Mask back = from_chords(chords, e);
    EXPECT_TRUE(back.weights == e.weights.values()) << what;
}

MorphPlan planned(const std::string& se) {
    MorphPlan p;
    p.step.element = structuring_element(se);
    p.step.kind = MorphKind::dilate;
    bool full = true;
    for (double w : p.step.element.weights) full = full && w != 0;
    decompose_element(p, full);
    return p;
}

const MorphStep& morph_step(const OpProgram& p, std::size_t k) { return std::get<MorphStep>(p.steps.at(k).action); }

} // namespace

TEST(MorphDecompose, ChordsRebuildNamedShapes) {
    for (int r : {0, 1, 2, 3, 4, 5, 6, 7, 15, 31}) expect_exact_chords(structuring_element("disk:" + std::to_string(r)), "disk");
    for (const char* se : {"ellipse:5x5", "ellipse:7x3", "ellipse:6x4", "ellipse:63x63", "cross:5x5", "cross:4x6",
                           "cross:1x9", "rect:3x3", "rect:1x1"})
        expect_exact_chords(structuring_element(se), se);
}

TEST(MorphDecompose, ChordsRebuildRandomElementsWithAnyAnchor) {
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int> side(1, 20);
    for (int trial = 0; trial < 300; ++trial) {
        Mask e = random_element(side(rng), side(rng), trial % 3 == 0 ? 0.2 : 0.6, rng);
        e.anchor_x = std::uniform_int_distribution<int>(0, e.width - 1)(rng);
        e.anchor_y = std::uniform_int_distribution<int>(0, e.height - 1)(rng);
        expect_exact_chords(e, "random element " + std::to_string(trial));
    }
}

TEST(MorphDecompose, DiskSevenIsFifteenChordsOfSixLengths) {
    const std::vector<MorphChord> chords = element_chords(structuring_element("disk:7"));
    ASSERT_EQ(chords.size(), 15u);
    EXPECT_EQ(chords.front(), (MorphChord{-7, 0, 1}));
    EXPECT_EQ(chords[7], (MorphChord{0, -7, 15}));
    EXPECT_EQ(chords[6], (MorphChord{-1, -6, 13}));
    EXPECT_EQ(chord_power(15), 8);
    EXPECT_EQ(chord_power(16), 16);
    EXPECT_EQ(chord_power(1), 1);
}

TEST(MorphDecompose, PlannerPicksRectangleChordsOrDirect) {
    EXPECT_EQ(planned("rect:5x3").algorithm, MorphAlgorithm::separable_rect);
    EXPECT_TRUE(planned("rect:5x3").chords.empty());
    EXPECT_EQ(planned("rect:1x1").algorithm, MorphAlgorithm::direct);
    const MorphPlan disk = planned("disk:7");
    EXPECT_EQ(disk.algorithm, MorphAlgorithm::chords);
    EXPECT_EQ(disk.chords, element_chords(disk.step.element));
    EXPECT_EQ(planned("ellipse:63x63").algorithm, MorphAlgorithm::chords);
    EXPECT_EQ(planned("cross:5x5").algorithm, MorphAlgorithm::chords);
    // Beyond the chord kernels' sides: direct.
    EXPECT_EQ(planned("ellipse:65x65").algorithm, MorphAlgorithm::direct);
    EXPECT_TRUE(planned("ellipse:65x65").chords.empty());
    // Sparse elements still run chords (the direct kernel visits every mask cell)...
    MorphPlan sparse;
    sparse.step.element = Mask(9, 9, std::vector<double>(81, 0.0));
    sparse.step.element.at(0, 0) = sparse.step.element.at(8, 8) = 1;
    decompose_element(sparse, false);
    EXPECT_EQ(sparse.algorithm, MorphAlgorithm::chords);
    EXPECT_EQ(sparse.chords.size(), 2u);
    // ...but not over max_chords chords: a 32x32 checkerboard has 512.
    MorphPlan board;
    board.step.element = Mask(32, 32, std::vector<double>(1024, 0.0));
    for (int j = 0; j < 32; ++j)
        for (int i = 0; i < 32; ++i) board.step.element.at(i, j) = (i + j) % 2;
    decompose_element(board, false);
    EXPECT_EQ(board.algorithm, MorphAlgorithm::direct);
    EXPECT_TRUE(board.chords.empty());
}

TEST(MorphDecompose, PlanLabelsNameTheChords) {
    const ImageShape shape{40, 30, 3, PixelType::u8};
    const std::string d = Pipeline({"dilate:se=disk:7"}).describe(shape, {.backend = Backend::cpu});
    EXPECT_NE(d.find("chords(15,6)"), std::string::npos) << d;
    const std::string r = Pipeline({"erode:se=rect:7x7"}).describe(shape, {.backend = Backend::cpu});
    EXPECT_NE(r.find("separable-rect"), std::string::npos) << r;
}

TEST(MorphIterations, FullRectanglePassesMergeWhenBordersAreIgnored) {
    const OpProgram p = parse_operation("dilate:se=rect:3x3,iterations=4");
    ASSERT_EQ(p.steps.size(), 1u);
    const Mask& e = morph_step(p, 0).element;
    EXPECT_EQ(e.width, 9);
    EXPECT_EQ(e.height, 9);
    EXPECT_EQ(e.anchor_x, 4);
    EXPECT_EQ(e.anchor_y, 4);
    // Even sides: anchor (2, 1) of 4x2, three passes: 10x4 anchored at (6, 3).
    const OpProgram three = parse_operation("erode:se=rect:4x2,iterations=3");
    const Mask& even = morph_step(three, 0).element;
    EXPECT_EQ(even.width, 10);
    EXPECT_EQ(even.height, 4);
    EXPECT_EQ(even.anchor_x, 6);
    EXPECT_EQ(even.anchor_y, 3);
    // 40 passes of 3x3: one 81x81 rectangle.
    const OpProgram forty = parse_operation("erode:se=rect:3x3,iterations=40");
    ASSERT_EQ(forty.steps.size(), 1u);
    EXPECT_EQ(morph_step(forty, 0).element.width, 81);
    // Sides stay within 1025: 40 passes of 33x33 are 32 passes (1025x1025) then 8 (257x257).
    const OpProgram many = parse_operation("erode:se=rect:33x33,iterations=40");
    ASSERT_EQ(many.steps.size(), 2u);
    EXPECT_EQ(morph_step(many, 0).element.width, 1025);
    EXPECT_EQ(morph_step(many, 1).element.width, 257);
    EXPECT_EQ(many.steps[1].input, 0);
    // The derived operations merge each half.
    EXPECT_EQ(parse_operation("open:se=rect:3x3,iterations=2").steps.size(), 2u);
    EXPECT_EQ(parse_operation("gradient:se=rect:5x5,iterations=3").steps.size(), 3u);
    EXPECT_EQ(parse_operation("blackhat:se=rect:3x1,iterations=5").steps.size(), 3u);
}

TEST(MorphIterations, NoMergeWithABorderModeOrAnElementWithHoles) {
    for (const char* op : {"dilate:se=rect:3x3,iterations=4,border=reflect", "dilate:se=rect:3x3,iterations=4,border=constant",
                           "erode:se=cross:3x3,iterations=4", "erode:se=disk:2,iterations=4"})
        EXPECT_EQ(parse_operation(op).steps.size(), 4u) << op;
    const OpProgram wrap = parse_operation("dilate:se=rect:3x3,iterations=4,border=wrap");
    EXPECT_EQ(morph_step(wrap, 3).element.width, 3);
}

TEST(MorphIterations, MergedRectangleEqualsIteratingThroughTheReference) {
    auto reference = make_reference_executor();
    std::mt19937 rng(77);
    const std::vector<std::pair<int, int>> sizes = {{1, 1}, {1, 9}, {13, 1}, {17, 11}, {6, 5}};
    const std::vector<std::pair<int, int>> rects = {{3, 3}, {4, 2}, {1, 5}, {2, 2}, {5, 1}};
    std::uint32_t seed = 10;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (auto [w, h] : sizes)
            for (auto [rw, rh] : rects)
                for (int n : {2, 3})
                    for (MorphKind kind : {MorphKind::dilate, MorphKind::erode}) {
                        const int c = 1 + int(seed % 3);
                        const Image in = test::random_image(w, h, c, t, ++seed);
                        MorphPlan one;
                        one.type = t;
                        one.step.kind = kind;
                        one.step.element = Mask(rw, rh, std::vector<double>(std::size_t(rw) * rh, 1.0));
                        // Any anchor inside the element merges exactly (off-centre too).
                        one.step.element.anchor_x = int(rng() % unsigned(rw));
                        one.step.element.anchor_y = int(rng() % unsigned(rh));
                        Image a = copy_of(in), b(in.shape());
                        for (int k = 0; k < n; ++k) {
                            reference->morph(one, a.view(), b.view());
                            std::swap(a, b);
                        }
                        const std::string op = std::string(kind == MorphKind::dilate ? "dilate" : "erode") +
                                               ":se=rect:" + std::to_string(rw) + "x" + std::to_string(rh) +
                                               ",iterations=" + std::to_string(n);
                        MorphPlan merged = one;
                        const OpProgram program = parse_operation(op);
                        ASSERT_EQ(program.steps.size(), 1u) << op;
                        merged.step.element = morph_step(program, 0).element;
                        merged.step.element.anchor_x = n * one.step.element.anchor_x;
                        merged.step.element.anchor_y = n * one.step.element.anchor_y;
                        Image m(in.shape());
                        reference->morph(merged, in.view(), m.view());
                        ASSERT_TRUE(test::identical(a, m)) << op << " anchor " << one.step.element.anchor_x << ','
                                                           << one.step.element.anchor_y << ' ' << w << 'x' << h;
                    }
}

TEST(MorphIterations, MergedPipelineMatchesReferenceAndCpu) {
    // The runner on the merged program: the reference backend against the CPU backend.
    const Image in = test::random_image(45, 31, 3, PixelType::u8, 5);
    for (const char* op : {"dilate:se=rect:3x3,iterations=5", "close:se=rect:4x2,iterations=3", "tophat:se=rect:5x3,iterations=2"}) {
        const Pipeline p({op});
        EXPECT_TRUE(test::identical(p.run(in, {.backend = Backend::cpu}), p.run(in, {.backend = Backend::reference}))) << op;
    }
}
