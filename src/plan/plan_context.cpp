// The planner's shared pieces for the step kind modules (plan_context.hpp).
#include "plan/plan_context.hpp"

#include <cmath>
#include <cstdio>

#include "apron/errors.hpp"
#include "core/fnv1a.hpp"
#include "plan/step_kind.hpp"

namespace apron {

int PlanContext::add(StepPlan step, PixelType out, const std::string& note) {
    step.out_shape = image;
    step.out_shape.type = out;
    step.axes = axes;
    step.label = label_of(step) + note;
    steps.push_back(std::move(step));
    produced.push_back(out);
    return int(steps.size()) - 1;
}

int PlanContext::add_combine(CombineStep c, int a, int b, PixelType out, const std::string& note) {
    StepPlan sum;
    sum.what = CombinePlan{c, PixelType::f32, PixelType::f32, out};
    sum.input = a;
    sum.second = b;
    return add(std::move(sum), out, note);
}

void check_border_value(const std::string& spec, std::optional<BorderMode> border, double value, PixelType in) {
    if (border != BorderMode::constant || !is_integer(in)) return;
    if (value != std::floor(value) || value < 0 || value > type_max(in)) {
        char v[32];
        std::snprintf(v, sizeof v, "%g", value);
        fail("--op " + spec, std::string("value: ") + v + " cannot be stored in " + to_string(in) +
                                 " pixels (the constant border reads as a pixel: use an integer 0.." +
                                 std::to_string(int(type_max(in))) + ")");
    }
}

std::string mask_size(const Mask& m) { return std::to_string(m.width) + "x" + std::to_string(m.height); }

std::string exact_number(double v) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", v);
    return text;
}

// A hash of the weights' bytes: the same weights give the same bits.
std::string mask_text(const Mask& m) {
    return std::to_string(m.width) + "x" + std::to_string(m.height) + "@" + std::to_string(m.anchor_x) + "," +
           std::to_string(m.anchor_y) + " weights " + hex16(fnv1a_of(m.weights.data(), m.weights.size()));
}

} // namespace apron
