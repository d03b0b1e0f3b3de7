// The operation registry: every declared operation builds from its examples and its defaults, and
// every kind of bad op spec is refused with one line naming the operation and the parameter.
#include <gtest/gtest.h>

#include "apron/errors.hpp"
#include "apron/ops.hpp"

using namespace apron;

TEST(Registry, EveryOperationIsDocumentedAndHasExamples) {
    ASSERT_GE(operations().size(), 24u);
    for (const auto& op : operations()) {
        EXPECT_FALSE(op.summary.empty()) << op.name;
        EXPECT_FALSE(op.details.empty()) << op.name;
        EXPECT_FALSE(op.examples.empty()) << op.name;
        for (const auto& p : op.params) EXPECT_FALSE(p.help.empty()) << op.name << ":" << p.name;
        for (const auto& ex : op.examples) {
            OpProgram prog;
            EXPECT_NO_THROW(prog = parse_operation(ex)) << ex;
            EXPECT_FALSE(prog.steps.empty()) << ex;
            EXPECT_EQ(prog.spec, ex);
        }
    }
    for (const char* name : {"correlate", "convolve", "separable", "gaussian", "box", "sobel", "scharr", "prewitt",
                             "laplacian", "sharpen", "unsharp", "emboss", "xf-sharpen", "xf-highpass", "xf-lowpass",
                             "xf-gaussian", "xf-dgaussian", "dilate", "erode", "open", "close", "gradient", "tophat",
                             "blackhat"})
        EXPECT_NE(find_operation(name), nullptr) << name;
}

TEST(Registry, DefaultsBuildTheDocumentedMasks) {
    const auto sharpen = parse_operation("sharpen");
    const auto& s = std::get<LinearStep>(sharpen.steps[0].action);
    EXPECT_EQ(s.mask.weights, (std::vector<double>{0, -1, 0, -1, 5, -1, 0, -1, 0}));
    EXPECT_EQ(s.border, BorderMode::reflect);
    const auto g = parse_operation("gaussian:sigma=2");
    const auto& gm = std::get<LinearStep>(g.steps[0].action).mask;
    EXPECT_EQ(gm.width, 13);  // radius ceil(3 sigma) = 6
    EXPECT_NEAR(gm.sum(), 1.0, 1e-12);
    const auto d = parse_operation("dilate");
    const auto& m = std::get<MorphStep>(d.steps[0].action);
    EXPECT_EQ(m.element.width, 3);
    EXPECT_FALSE(m.border);
    const auto xf = parse_operation("xf-sharpen");
    EXPECT_NEAR(std::get<LinearStep>(xf.steps[0].action).mask.sum(), 1.0, 1e-12);
}

TEST(Registry, StructuringElementsMatchOpenCVShapes) {
    // cv::getStructuringElement(MORPH_ELLIPSE, (5, 5)) and (7, 5).
    EXPECT_EQ(structuring_element("ellipse:5x5").weights,
              (std::vector<double>{0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0}));
    EXPECT_EQ(structuring_element("ellipse:7x5").weights,
              (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                   0, 0, 0, 1, 0, 0, 0}));
    EXPECT_EQ(structuring_element("cross:3x3").weights, (std::vector<double>{0, 1, 0, 1, 1, 1, 0, 1, 0}));
    EXPECT_EQ(structuring_element("disk:1").weights, (std::vector<double>{0, 1, 0, 1, 1, 1, 0, 1, 0}));
    EXPECT_EQ(structuring_element("rect:4x2").weights.size(), 8u);
}

namespace {

void expect_refused(const std::string& spec, const std::vector<std::string>& fragments) {
    try {
        parse_operation(spec);
        ADD_FAILURE() << "accepted: " << spec;
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
    }
}

} // namespace

TEST(RegistryNegative, EveryKindOfBadSpecIsRefused) {
    expect_refused("blur", {"unknown operation 'blur'"});
    expect_refused("gaussian", {"sigma", "missing"});
    expect_refused("gaussian:sigma=0", {"sigma", "out of range"});
    expect_refused("gaussian:sigma=-1", {"sigma", "out of range"});
    expect_refused("gaussian:sigma=abc", {"sigma", "not a finite number"});
    expect_refused("gaussian:sigma=nan", {"sigma", "not a finite number"});
    expect_refused("gaussian:sigma=1,radius=1.5", {"radius", "not an integer"});
    expect_refused("gaussian:sigma=1,radius=5000", {"radius", "out of range"});
    expect_refused("gaussian:sigma=1,sigma=2", {"given twice"});
    expect_refused("gaussian:sigma=1,colour=red", {"unknown parameter 'colour'", "known:"});
    expect_refused("gaussian:sigma=1,border=bogus", {"border", "unknown border mode 'bogus'"});
    expect_refused("gaussian:sigma", {"not key=value"});
    expect_refused("gaussian:sigma=1,,border=wrap", {"empty parameter"});
    expect_refused("correlate", {"mask", "missing"});
    expect_refused("correlate:mask=/nonexistent.kernel", {"mask", "/nonexistent.kernel", "cannot open"});
    expect_refused("correlate:mask=samples/masks/edge3x3.kernel,normalize=max", {"normalize", "unknown normalisation"});
    expect_refused("separable:row=1:x:1", {"row", "'x'"});
    expect_refused("separable:row=1::2", {"--op separable:row=1::2: row: ", "empty"});
    expect_refused("gaussian:sigma=683", {"--op gaussian:sigma=683: sigma: ", "out of range"});
    expect_refused("dilate:se=disk:3x3", {"--op dilate:se=disk:3x3: se: ", "radius"});
    expect_refused("box:width=0", {"width", "out of range"});
    expect_refused("sobel:dx=0,dy=0", {"dx"});
    expect_refused("sobel:dx=3", {"dx", "out of range"});
    expect_refused("sobel:dx=1,ksize=4", {"ksize", "not one of"});
    expect_refused("scharr:dx=1,dy=1", {"exactly one"});
    expect_refused("laplacian:neighbours=6", {"neighbours"});
    expect_refused("xf-sharpen:alpha=1", {"alpha", "out of range"});
    expect_refused("dilate:se=rect:0x3", {"se", "1.."});
    expect_refused("dilate:se=hexagon:3x3", {"se", "hexagon"});
    expect_refused("dilate:se=rect:3xq", {"se", "WxH"});
    expect_refused("dilate:iterations=0", {"iterations", "out of range"});
    expect_refused("dilate:border=sideways", {"border", "sideways"});
    expect_refused("sharpen:strength=-1", {"strength", "out of range"});
}

TEST(Registry, SplitOperationCutsAsParseOperationDoes) {
    const OperationText op = split_operation("correlate:mask=a/b.kernel,border=wrap,=x,noeq,");
    EXPECT_EQ(op.name, "correlate");
    EXPECT_TRUE(op.has_parameters);
    ASSERT_EQ(op.items.size(), 4u);  // the trailing comma ends the list
    EXPECT_EQ(op.items[0], (std::pair<std::string, std::string>{"mask", "a/b.kernel"}));
    EXPECT_EQ(op.items[1], (std::pair<std::string, std::string>{"border", "wrap"}));
    EXPECT_EQ(op.items[2], (std::pair<std::string, std::string>{"", "=x"}));  // not key=value: kept whole
    EXPECT_EQ(op.items[3], (std::pair<std::string, std::string>{"", "noeq"}));
    EXPECT_EQ(join_operation(op), "correlate:mask=a/b.kernel,border=wrap,=x,noeq");
    EXPECT_EQ(join_operation(split_operation("sharpen")), "sharpen");
    EXPECT_EQ(join_operation(split_operation("dilate:se=rect:5x5")), "dilate:se=rect:5x5");
    EXPECT_TRUE(split_operation("box:").has_parameters);
    EXPECT_TRUE(split_operation("box:").items.empty());
    // parse_operation refuses what split_operation keeps for it.
    EXPECT_THROW(parse_operation("box:width=3,,height=3"), Error);
    EXPECT_THROW(parse_operation("box:=3"), Error);
}

TEST(Registry, NamesFile) {
    EXPECT_TRUE(names_file("mask", "m.kernel"));
    EXPECT_TRUE(names_file("se", "diamond.se"));
    EXPECT_FALSE(names_file("se", "ellipse:5x5"));
    EXPECT_FALSE(names_file("border", "wrap"));
}
