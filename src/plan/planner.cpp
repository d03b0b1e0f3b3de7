// The planner: walks the operations' steps and hands each to its kind's module (plan/step_kind.hpp), which
// decides its algorithm and the constants a backend needs; then asks the backend for every step's kernel.
// Backends never decide.
#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>
#include <tuple>

#include "apron/errors.hpp"
#include "core/overrides.hpp"
#include "plan/backend_caps.hpp"
#include "plan/cost_model.hpp"
#include "plan/linear_paths.hpp"
#include "plan/plan.hpp"
#include "plan/step_kind.hpp"

namespace apron {

const char* to_string(Backend b) {
    switch (b) {
    case Backend::automatic: return "auto";
    case Backend::cpu: return "cpu";
    case Backend::reference: return "reference";
    case Backend::cuda: return "cuda";
    }
    return "?";
}

std::optional<Backend> parse_backend(std::string_view name) {
    if (name == "auto") return Backend::automatic;
    if (name == "cpu") return Backend::cpu;
    if (name == "reference") return Backend::reference;
    if (name == "cuda") return Backend::cuda;
    return std::nullopt;
}

namespace {

// The image one call of a step's kernel sees (PlanContext::step_image): a 2-D image whole; a volume's plane
// for a plane step, its z view for a depth step (a row per plane: every plane's pixels, width x height) and
// all its rows for a pointwise one; a step spanning x, y and z sees the whole volume.
ImageShape step_image(const ImageShape& image, Axes axes, bool pointwise) {
    if (image.depth == 1 || axes == Axes::volume) return image;
    ImageShape s = image.plane();
    if (pointwise) {
        s.height = int(image.rows());
    } else if (axes == Axes::depth) {
        s.width = int(std::min<std::int64_t>(std::int64_t(image.width) * image.height, std::numeric_limits<int>::max()));
        s.height = image.depth;
    }
    return s;
}

// The kernel of every step, from the backend's capabilities, shown at the end of its label.
void choose_kernels(std::vector<StepPlan>& steps, const ImageShape& shape, const BackendCaps& caps) {
    for (StepPlan& sp : steps) {
        const ImageShape seen = step_image(shape, sp.axes, std::holds_alternative<CombinePlan>(sp.what));
        const KernelChoice& kernel =
            on_kind(sp, [&](auto k, auto& p) -> const KernelChoice& { return decltype(k)::choose_kernel(p, caps, seen, sp.label); });
        sp.label += " kernel=" + kernel.name();
    }
}

// A depth step's mask or element is one column: its rows weigh planes (apron/ops.hpp, Axes).
void check_depth_step(const Step& step, const std::string& spec) {
    const Mask* m = std::visit(
        [](const auto& a) -> const Mask* {
            using A = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<A, LinearStep>) return &a.mask;
            else if constexpr (std::is_same_v<A, MorphStep> || std::is_same_v<A, RankStep>) return &a.element;
            else return nullptr;
        },
        step.action);
    if (m && m->width != 1) fail(spec, "internal: a step along z has a mask " + std::to_string(m->width) + " wide (a column expected)");
}

// A step spans x, y and z (Axes::volume) exactly when it is a rank step whose element has planes.
void check_volume_axes(const Step& step, const std::string& spec) {
    const auto* rank = std::get_if<RankStep>(&step.action);
    const bool planes = rank && rank->depth > 1;
    if (planes != (step.axes == Axes::volume))
        fail(spec, "internal: a step spanning x, y and z must be a rank step with a volume's element, and such a step must span them");
    if (planes && (rank->element.height % rank->depth != 0 || rank->element.anchor_y >= rank->element.height))
        fail(spec, "internal: a volume's rank element is not whole planes");
}

} // namespace

namespace {
std::atomic<std::uint64_t> plans{0};
} // namespace

std::uint64_t plans_made() { return plans.load(); }

ExecutionPlan make_plan(const std::vector<OpProgram>& pipeline, const ImageShape& input, PixelType out_type,
                        const BackendCaps& caps, Algorithm algorithm) {
    plans.fetch_add(1, std::memory_order_relaxed);
    validate_shape(input, "input image");
    const Backend backend = caps.backend();
    ExecutionPlan plan;
    plan.backend = backend;
    plan.input = input;
    plan.output = input;
    plan.output.type = out_type;
    const CostTable* table =
        backend == Backend::cuda || backend == Backend::cpu ? cost_table_for(backend, caps.cost_arch(), caps.cost_device()) : nullptr;
    if (table) plan.cost_source = table->source + (table->device.empty() ? "" : " (" + table->device + ")");
    plan.overrides = overrides().describe();  // read once (core/overrides.hpp)
    PixelType op_in = input.type;
    MaskMemo memo;
    for (const OpProgram& op : pipeline) {
        OperationPlan oplan;
        oplan.spec = op.spec;
        std::vector<PixelType> produced;  // per plan step
        std::vector<int> index_of;        // program step -> the plan step holding its result
        PlanContext context{input, out_type, caps, algorithm, table, op.spec, memo, oplan.steps, produced, op_in};
        auto plan_index = [&](int operand) { return operand < 0 ? operand : index_of.at(std::size_t(operand)); };
        for (std::size_t k = 0; k < op.steps.size(); ++k) {
            const Step& step = op.steps[k];
            auto valid = [&](int operand, bool optional) {
                return operand == op_input || (optional && operand == no_operand) || (operand >= 0 && operand < int(k));
            };
            if (!valid(step.input, false) || !valid(step.second, operands_of(step) < 2))
                fail(op.spec, "internal: a step reads an operand that does not exist yet");
            context.input = plan_index(step.input);
            context.second = plan_index(step.second);
            context.last = k + 1 == op.steps.size();
            context.axes = step.axes;
            context.step_image = step_image(input, step.axes, std::holds_alternative<CombineStep>(step.action));
            if (step.axes == Axes::depth) check_depth_step(step, op.spec);
            check_volume_axes(step, op.spec);
            index_of.push_back(on_kind(step, [&](auto kind, const auto& action) { return decltype(kind)::plan(action, context); }));
        }
        // Morphology keeps its type; if the op must end in another type, convert once at the end.
        if (produced.empty() || produced.back() != out_type) {
            StepPlan conv;
            conv.input = produced.empty() ? op_input : int(produced.size()) - 1;
            conv.second = no_operand;
            const PixelType from = context.type_of(conv.input);
            conv.what = CombinePlan{CombineStep{1, 0, 0}, from, from, out_type};
            context.add(std::move(conv), out_type);
            oplan.steps.back().label = "convert " + oplan.steps.back().label;
        }
        choose_kernels(oplan.steps, input, caps);
        plan.operations.push_back(std::move(oplan));
        op_in = out_type;
    }
    return plan;
}

std::string ExecutionPlan::describe(bool with_estimates) const {
    std::ostringstream o;
    o << "backend " << to_string(backend) << ", input " << input.width << 'x' << input.height << 'x'
      << input.channels << ' ' << to_string(input.type);
    if (input.depth > 1) o << " volume of " << input.depth << " planes";
    o << ", output " << to_string(output.type) << '\n';
    if (with_estimates)
        o << "cost model: " << (cost_source.empty() ? "none for this backend (fixed preferences)" : cost_source) << '\n';
    if (!overrides.empty()) o << "overrides: " << overrides << '\n';
    for (const auto& op : operations) {
        o << op.spec << '\n';
        for (std::size_t k = 0; k < op.steps.size(); ++k) {
            o << "  step " << k << ": " << (op.steps[k].axes == Axes::depth ? "along z: " : op.steps[k].axes == Axes::volume ? "x, y and z: " : "") << op.steps[k].label << '\n';
            if (!with_estimates) continue;
            for (const PathEstimate& e : op.steps[k].estimates) {
                char line[96];
                if (!e.unavailable.empty())
                    std::snprintf(line, sizeof line, "      %-10s      -     ", to_string(e.path));
                else if (std::isnan(e.seconds))
                    std::snprintf(line, sizeof line, "    %s %-10s  (no estimate)", e.chosen ? "*" : " ", to_string(e.path));
                else
                    std::snprintf(line, sizeof line, "    %s %-10s %9.3f ms", e.chosen ? "*" : " ", to_string(e.path), e.seconds * 1e3);
                o << line << (e.unavailable.empty() ? "" : "  " + e.unavailable) << '\n';
            }
        }
    }
    return o.str();
}

} // namespace apron
