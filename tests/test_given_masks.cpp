// Masks and structuring elements given as weights (parse_operation with GivenMasks, as the Python bindings
// pass NumPy arrays): they stand for the parameter's text, go through the same checks, and errors name them.
#include <gtest/gtest.h>

#include <variant>

#include "apron/errors.hpp"
#include "apron/ops.hpp"

using namespace apron;

namespace {

const Mask& linear_mask(const OpProgram& p) { return std::get<LinearStep>(p.steps.at(0).action).mask; }

std::string error_of(const char* spec, const GivenMasks& given) {
    try {
        (void)parse_operation(spec, given);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(GivenMasks, CorrelateTakesTheWeightsAndConvolveFlipsThem) {
    const Mask m(3, 2, {1, 2, 3, 4, 5, 6});
    const OpProgram c = parse_operation("correlate:mask=<array 2x3>,border=wrap", {{"mask", m}});
    EXPECT_EQ(linear_mask(c), m);
    EXPECT_EQ(c.spec, "correlate:mask=<array 2x3>,border=wrap");
    EXPECT_EQ(std::get<LinearStep>(c.steps[0].action).border, BorderMode::wrap);
    EXPECT_EQ(linear_mask(parse_operation("convolve:mask=<array 2x3>", {{"mask", m}})), flipped(m));
}

TEST(GivenMasks, ElementsAreCheckedAsElementFilesAre) {
    const Mask cross(3, 3, {0, 1, 0, 1, 1, 1, 0, 1, 0});
    const OpProgram d = parse_operation("dilate:se=<array 3x3>", {{"se", cross}});
    EXPECT_EQ(std::get<MorphStep>(d.steps.at(0).action).element, cross);
    EXPECT_EQ(error_of("dilate:se=<array 1x2>", {{"se", Mask(2, 1, {1, 2})}}),
              "--op dilate:se=<array 1x2>: se: <array 1x2>: structuring element weights must be 0 or 1");
    EXPECT_NE(error_of("erode:se=<array 1x2>", {{"se", Mask(2, 1, {0, 0})}}).find("no cell set to 1"), std::string::npos);
}

TEST(GivenMasks, TextParametersStillValidatedAndUngivenMasksReadAsText) {
    const Mask m(1, 1, {2});
    EXPECT_NE(error_of("correlate:mask=x,border=sideways", {{"mask", m}}).find("unknown border mode"), std::string::npos);
    // A given mask for another parameter does not stand in for this one: the text is a (missing) file.
    EXPECT_NE(error_of("correlate:mask=/nonexistent/m.kernel", {{"se", m}}).find("cannot open"), std::string::npos);
    EXPECT_EQ(linear_mask(parse_operation("correlate:mask=samples/masks/edge3x3.kernel", {})).width, 3);
}
