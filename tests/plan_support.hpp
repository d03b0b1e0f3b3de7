#pragma once
// Plans for tests, made by the real planner (as a run on the CPU backend would), so a test checks the plan
// apron would execute: exactness, accumulator and finish included.
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "plan/plan.hpp"

namespace apron::test {

// Every border mode, for sweeps.
constexpr BorderMode all_borders[] = {BorderMode::constant, BorderMode::nearest, BorderMode::reflect, BorderMode::mirror,
                                      BorderMode::wrap};

// W x H random weights: integers in -range..range, or floats in [-1, 1).
inline Mask random_mask(int w, int h, bool integer, std::uint32_t seed, int range = 4) {
    std::mt19937 rng(seed);
    std::vector<double> v(static_cast<std::size_t>(w) * h);
    for (double& x : v)
        x = integer ? std::uniform_int_distribution<int>(-range, range)(rng) : std::uniform_real_distribution<double>(-1, 1)(rng);
    return Mask(w, h, v);
}

// One correlation step with this mask, border and finish, as an operation.
inline OpProgram correlation_op(const Mask& m, BorderMode border = BorderMode::reflect, double border_value = 0,
                                Normalise normalise = Normalise::none, double scale = 1, double delta = 0) {
    LinearStep s;
    s.mask = m;
    s.border = border;
    s.border_value = border_value;
    s.normalise = normalise;
    s.scale = scale;
    s.delta = delta;
    Step step;
    step.action = s;
    return OpProgram{"correlate", {step}};
}

inline StepPlan plan_step(Step step, const ImageShape& shape, PixelType out) {
    OpProgram prog;
    prog.spec = "test";
    prog.steps.push_back(std::move(step));
    ExecutionPlan ep = make_plan({prog}, shape, out, Backend::cpu);
    return ep.operations.at(0).steps.at(0);
}

// The plan of one step of kind `Action` (a MorphStep, a RankStep, ...) keeping the image's type, as the CPU
// backend plans it.
template <class Plan, class Action>
Plan kind_plan(const Action& a, const ImageShape& shape) {
    Step step;
    step.action = a;
    return std::get<Plan>(plan_step(step, shape, shape.type).what);
}

// The executors the CPU suites compare: the reference, and the fast CPU executor on 3 participants (more than
// the CI machine's cores, so the pool's scheduling is exercised); one each per test process.
inline Executor& reference_executor() {
    static const auto ex = make_reference_executor();
    return *ex;
}
inline Executor& fast_cpu_executor() {
    static const auto ex = make_cpu_executor(3);
    return *ex;
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
    return std::get<LinearPlan>(
        plan_step(correlation_op(m, border, border_value, normalise, scale, delta).steps.at(0), shape, out).what);
}

} // namespace apron::test
