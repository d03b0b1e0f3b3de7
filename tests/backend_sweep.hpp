#pragma once
// The backend sweep: every registered operation, through every example in the registry, on one backend
// against the reference: types x channels x odd sizes x tiny images x masks larger than the image.
#include <gtest/gtest.h>

#include <algorithm>

#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "plan/plan.hpp"
#include "test_support.hpp"

namespace apron::test {

struct Case {
    std::string spec;
    PixelType in, out;
    int width, height, channels;
};

std::string name_of(const Case& c) {
    return c.spec + " " + to_string(c.in) + "->" + to_string(c.out) + " " + std::to_string(c.width) + "x" +
           std::to_string(c.height) + "x" + std::to_string(c.channels);
}

// Whether every step of the plan is exact (integer arithmetic or morphology); otherwise the error bound
// factor sum|m| accumulated over the linear and combine steps, and the largest constant border value
// (it is an input pixel as far as SPEC's tolerance goes).
struct Exactness {
    bool exact = true;
    double gain = 1, border = 0;
};
Exactness exactness(const OpProgram& op, const ImageShape& shape, PixelType out) {
    const ExecutionPlan plan = make_plan({op}, shape, out, Backend::cpu);
    bool exact = true;
    double gain = 1, border = 0;
    for (const auto& s : plan.operations[0].steps) {
        if (auto* l = std::get_if<LinearPlan>(&s.what)) {
            exact = exact && l->exact;
            gain *= std::max(1.0, l->step.mask.abs_sum() * std::fabs(l->step.scale));
            border = std::max(border, std::fabs(l->step.border_value));
        } else if (auto* c = std::get_if<CombinePlan>(&s.what)) {
            gain *= std::max(1.0, std::fabs(c->step.a) + std::fabs(c->step.b));
        }
    }
    return {exact, gain, border};
}

std::vector<Case> all_cases() {
    const std::pair<int, int> sizes[] = {{1, 1}, {1, 7}, {6, 1}, {13, 9}, {37, 23}};
    const std::pair<PixelType, PixelType> types[] = {
        {PixelType::u8, PixelType::u8}, {PixelType::u16, PixelType::u16}, {PixelType::f32, PixelType::f32},
        {PixelType::u8, PixelType::f32}, {PixelType::f32, PixelType::u8}};
    std::vector<Case> cases;
    int k = 0;
    for (const auto& op : operations()) {
        for (const auto& spec : op.examples)
            for (auto [in, out] : types)
                for (auto [w, h] : sizes) cases.push_back({spec, in, out, w, h, 1 + (k++ % 4)});
        // Every border mode on the first example, where the example leaves the border to its default.
        const std::string& first = op.examples.front();
        const bool has_border = std::any_of(op.params.begin(), op.params.end(), [](const ParamSpec& p) { return p.name == "border"; });
        if (!has_border || first.find("border=") != std::string::npos) continue;
        for (const char* mode : {"constant", "nearest", "reflect", "mirror", "wrap"}) {
            const std::string spec = first + (first.find(':') == std::string::npos ? ":" : ",") + "border=" + mode +
                                     (std::string(mode) == "constant" ? ",value=3" : "");
            for (auto [in, out] : {types[0], types[2]})
                for (auto [w, h] : {sizes[0], sizes[3], sizes[4]}) cases.push_back({spec, in, out, w, h, 1 + (k++ % 4)});
        }
    }
    return cases;
}

// Runs every example of every registered operation on `backend` and on the reference: exact plans and
// morphology must match bit for bit, float plans within SPEC.md's tolerance.
inline void expect_backend_matches_reference(Backend backend) {
    int compared = 0, exact_cases = 0;
    std::uint32_t seed = 1;
    for (const Case& c : all_cases()) {
        SCOPED_TRACE(name_of(c));
        const Image in = random_image(c.width, c.height, c.channels, c.in, seed++);
        const Pipeline pipeline({c.spec});
        const Image ref = pipeline.run(in, {.backend = Backend::reference, .out_type = c.out});
        const Image got = pipeline.run(in, {.backend = backend, .out_type = c.out});
        ASSERT_EQ(got.shape(), ref.shape());
        const auto [exact, gain, border] = exactness(pipeline.operations()[0], in.shape(), c.out);
        if (exact) {
            ++exact_cases;
            EXPECT_TRUE(identical(got, ref)) << "max diff " << max_abs_diff(got, ref);
        } else if (c.out == PixelType::f32) {
            const double bound = 1e-5 * gain * std::max({1.0, max_abs(in), border}) + 1e-6;
            EXPECT_LE(max_abs_diff(got, ref), bound);
        } else {
            EXPECT_LE(max_abs_diff(got, ref), 1.0);
        }
        ++compared;
    }
    EXPECT_GT(exact_cases, compared / 4);  // the exact integer path is really exercised
}

} // namespace apron::test
