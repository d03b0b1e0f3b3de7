#pragma once
// Plans for tests, made by the real planner (as a run on the CPU backend would), so a test checks the plan
// apron would execute: exactness, accumulator and finish included.
#include <utility>

#include "plan/plan.hpp"

namespace apron::test {

inline StepPlan plan_step(Step step, const ImageShape& shape, PixelType out) {
    OpProgram prog;
    prog.spec = "test";
    prog.steps.push_back(std::move(step));
    ExecutionPlan ep = make_plan({prog}, shape, out, Backend::cpu);
    return ep.operations.at(0).steps.at(0);
}

inline LinearPlan linear_plan(const LinearStep& s, const ImageShape& shape, PixelType out) {
    Step step;
    step.action = s;
    return std::get<LinearPlan>(plan_step(step, shape, out).what);
}

// One correlation step with this mask, border and finish.
inline LinearPlan plan_for(const Mask& m, const ImageShape& shape, PixelType out, BorderMode border = BorderMode::reflect,
                           double border_value = 0, Normalise normalise = Normalise::none, double scale = 1,
                           double delta = 0) {
    LinearStep s;
    s.mask = m;
    s.border = border;
    s.border_value = border_value;
    s.normalise = normalise;
    s.scale = scale;
    s.delta = delta;
    return linear_plan(s, shape, out);
}

} // namespace apron::test
