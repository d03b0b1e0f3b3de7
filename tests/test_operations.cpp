// Every registered operation, through every example in the registry, on the fast CPU backend against
// the reference: types x channels x odd sizes x tiny images x masks larger than the image. Exact plans and
// morphology must match bit for bit; float plans within SPEC.md's tolerance.
#include <gtest/gtest.h>

#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "plan/plan.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

struct Case {
    std::string spec;
    PixelType in, out;
    int width, height, channels;
};

std::string name_of(const Case& c) {
    return c.spec + " " + to_string(c.in) + "->" + to_string(c.out) + " " + std::to_string(c.width) + "x" +
           std::to_string(c.height) + "x" + std::to_string(c.channels);
}

// Whether every step of the plan is exact (integer arithmetic or morphology), and the error bound
// factor sum|m| accumulated over the linear and combine steps otherwise.
std::pair<bool, double> exactness(const OpProgram& op, const ImageShape& shape, PixelType out) {
    const ExecutionPlan plan = make_plan({op}, shape, out, Backend::cpu);
    bool exact = true;
    double gain = 1;
    for (const auto& s : plan.operations[0].steps) {
        if (auto* l = std::get_if<LinearPlan>(&s.what)) {
            exact = exact && l->exact;
            gain *= std::max(1.0, l->step.mask.abs_sum() * std::fabs(l->step.scale));
        } else if (auto* c = std::get_if<CombinePlan>(&s.what)) {
            gain *= std::max(1.0, std::fabs(c->step.a) + std::fabs(c->step.b));
        }
    }
    return {exact, gain};
}

std::vector<Case> all_cases() {
    const std::pair<int, int> sizes[] = {{1, 1}, {1, 7}, {6, 1}, {13, 9}, {37, 23}};
    const std::pair<PixelType, PixelType> types[] = {
        {PixelType::u8, PixelType::u8}, {PixelType::u16, PixelType::u16}, {PixelType::f32, PixelType::f32},
        {PixelType::u8, PixelType::f32}, {PixelType::f32, PixelType::u8}};
    std::vector<Case> cases;
    int k = 0;
    for (const auto& op : operations())
        for (const auto& spec : op.examples)
            for (auto [in, out] : types)
                for (auto [w, h] : sizes) cases.push_back({spec, in, out, w, h, 1 + (k++ % 4)});
    return cases;
}

} // namespace

TEST(Operations, FastCpuMatchesTheReferenceForEveryExample) {
    int compared = 0, exact_cases = 0;
    std::uint32_t seed = 1;
    for (const Case& c : all_cases()) {
        SCOPED_TRACE(name_of(c));
        const Image in = test::random_image(c.width, c.height, c.channels, c.in, seed++);
        const Pipeline pipeline({c.spec});
        const Image ref = pipeline.run(in, {.backend = Backend::reference, .out_type = c.out});
        const Image fast = pipeline.run(in, {.backend = Backend::cpu, .out_type = c.out});
        ASSERT_EQ(fast.shape(), ref.shape());
        const auto [exact, gain] = exactness(pipeline.operations()[0], in.shape(), c.out);
        if (exact) {
            ++exact_cases;
            EXPECT_TRUE(test::identical(fast, ref)) << "max diff " << test::max_abs_diff(fast, ref);
        } else if (c.out == PixelType::f32) {
            const double bound = 1e-5 * gain * std::max(1.0, test::max_abs(in)) + 1e-6;
            EXPECT_LE(test::max_abs_diff(fast, ref), bound);
        } else {
            EXPECT_LE(test::max_abs_diff(fast, ref), 1.0);
        }
        ++compared;
    }
    EXPECT_GT(exact_cases, compared / 4);  // the exact integer path is really exercised
}

TEST(Operations, PipelinesEqualTheirOperationsRunOneByOne) {
    const Image in = test::random_image(29, 17, 3, PixelType::u8, 77);
    const std::vector<std::string> ops = {"gaussian:sigma=1.2", "sobel:dx=1,delta=128", "dilate:se=cross:3x3"};
    for (Backend b : {Backend::reference, Backend::cpu})
        for (PixelType out : {PixelType::u8, PixelType::f32}) {
            const Image all = Pipeline(ops).run(in, {.backend = b, .out_type = out});
            Image step = copy_of(in.view());
            for (const auto& op : ops) step = Pipeline({op}).run(step, {.backend = b, .out_type = out});
            EXPECT_TRUE(test::identical(all, step)) << to_string(b) << " " << to_string(out);
        }
}

TEST(Operations, RegionOfInterestViewsFilterOnlyTheirPixels) {
    // A view into a larger image filters as if it were the whole image (borders at the view's edges).
    const Image big = test::random_image(40, 30, 2, PixelType::u16, 9);
    const ConstImageView roi = big.view().roi(7, 5, 19, 11);
    const Image copy = copy_of(roi);
    for (Backend b : {Backend::reference, Backend::cpu}) {
        const Pipeline p({"box:width=5,height=3,border=mirror"});
        EXPECT_TRUE(test::identical(p.run(roi, {.backend = b}), p.run(copy, {.backend = b}))) << to_string(b);
    }
}
