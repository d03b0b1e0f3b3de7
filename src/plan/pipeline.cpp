// Runs a pipeline: plan once, then execute step by step, keeping intermediates in memory.
#include "apron/pipeline.hpp"

#include <chrono>
#include <utility>

#include "apron/errors.hpp"
#include "plan/plan.hpp"

namespace apron {
namespace {

Backend resolve(Backend asked) {
    if (asked == Backend::cuda) fail("--backend", "cuda: this build has no CUDA kernels yet (use cpu)");
    return asked == Backend::automatic ? Backend::cpu : asked;
}

std::unique_ptr<Executor> make_executor(Backend b, int threads) {
    if (b == Backend::reference) return make_reference_executor();
    return make_cpu_executor(threads);
}

} // namespace

Pipeline::Pipeline(const std::vector<std::string>& specs) {
    for (const auto& s : specs) add(s);
}

std::string Pipeline::describe(const ImageShape& input, const RunOptions& options) const {
    const Backend backend = resolve(options.backend);
    return make_plan(ops_, input, options.out_type.value_or(input.type), backend).describe();
}

Image Pipeline::run(ConstImageView input, const RunOptions& options) const {
    if (input.memory != Memory::host) fail("input image", "the CPU backends need an image in host memory");
    if (options.threads < 0) fail("--threads", "must be 0 (all cores) or positive");
    const Backend backend = resolve(options.backend);
    const ExecutionPlan plan = make_plan(ops_, input.shape, options.out_type.value_or(input.type()), backend);
    auto executor = make_executor(backend, options.threads);
    if (plan.operations.empty()) {
        // No operation: the output is the input converted to the output type.
        const CombinePlan convert{CombineStep{1, 0, 0}, input.type(), input.type(), plan.output.type};
        Image out(plan.output);
        executor->combine(convert, input, {}, out.view());
        return out;
    }

    Image current;  // the previous operation's result
    for (const OperationPlan& op : plan.operations) {
        const ConstImageView source = current.empty() ? input : std::as_const(current).view();
        std::vector<Image> results;
        results.reserve(op.steps.size());
        auto view_of = [&](int index) -> ConstImageView {
            if (index == no_operand) return {};
            return index == op_input ? source : std::as_const(results[std::size_t(index)]).view();
        };
        for (const StepPlan& step : op.steps) {
            const auto start = std::chrono::steady_clock::now();
            Image out(step.out_shape);
            if (auto* l = std::get_if<LinearPlan>(&step.what))
                executor->linear(*l, view_of(step.input), out.view());
            else if (auto* m = std::get_if<MorphPlan>(&step.what))
                executor->morph(*m, view_of(step.input), out.view());
            else
                executor->combine(std::get<CombinePlan>(step.what), view_of(step.input),
                                  view_of(step.second), out.view());
            results.push_back(std::move(out));
            if (options.timings) {
                const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
                options.timings->push_back({op.spec + " [" + step.label + "]", ms.count()});
            }
        }
        current = std::move(results.back());
    }
    return current;
}

std::vector<std::string> available_backends() { return {"cpu", "reference"}; }

} // namespace apron
