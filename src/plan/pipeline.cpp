// Runs a pipeline: plan once, then execute step by step in the executor's memory (host or device),
// keeping intermediates there; only the input goes up and the result comes back.
#include "apron/pipeline.hpp"

#include <chrono>
#include <utility>

#include "apron/errors.hpp"
#include "plan/plan.hpp"

namespace apron {
namespace {

Backend resolve(Backend asked) {
    if (asked == Backend::automatic) return cuda_available() ? Backend::cuda : Backend::cpu;
    return asked;
}

std::unique_ptr<Executor> make_executor(Backend b, int threads) {
    switch (b) {
    case Backend::reference: return make_reference_executor();
    case Backend::cuda: {
        auto e = make_cuda_executor();
        if (!e) fail("--backend", "cuda: this build has no CUDA backend (configure with the CUDA toolkit)");
        return e;
    }
    default: return make_cpu_executor(threads);
    }
}

using Clock = std::chrono::steady_clock;

// Times a stage when timings are wanted; waits for asynchronous work so the time is the stage's own.
template <class F>
void timed(const RunOptions& o, Executor& e, const std::string& name, F&& work) {
    if (!o.timings) return work();
    const auto start = Clock::now();
    work();
    e.synchronize();
    o.timings->push_back({name, std::chrono::duration<double, std::milli>(Clock::now() - start).count()});
}

} // namespace

Pipeline::Pipeline(const std::vector<std::string>& specs) {
    for (const auto& s : specs) add(s);
}

std::string Pipeline::describe(const ImageShape& input, const RunOptions& options) const {
    return make_plan(ops_, input, options.out_type.value_or(input.type), resolve(options.backend)).describe();
}

Image Pipeline::run(ConstImageView input, const RunOptions& options) const {
    if (input.memory != Memory::host) fail("input image", "Pipeline::run takes an image in host memory");
    if (options.threads < 0 || options.threads > max_threads)
        fail("--threads", std::to_string(options.threads) + " is out of range (0 = all cores, at most " +
                              std::to_string(max_threads) + ")");
    const Backend backend = resolve(options.backend);
    ExecutionPlan plan = make_plan(ops_, input.shape, options.out_type.value_or(input.type()), backend);
    if (plan.operations.empty()) {
        // No operation: the output is the input converted to the output type.
        OperationPlan convert;
        convert.spec = "convert";
        convert.steps.push_back(StepPlan{CombinePlan{CombineStep{1, 0, 0}, input.type(), input.type(), plan.output.type},
                                         op_input, no_operand, plan.output, "convert"});
        plan.operations.push_back(std::move(convert));
    }
    auto executor = make_executor(backend, options.threads);
    Executor& ex = *executor;

    Buffer source;
    if (ex.memory() == Memory::host) {
        source = Buffer{ImageView{const_cast<std::byte*>(input.data), input.shape, input.pitch, Memory::host}, nullptr};
    } else {
        source = ex.allocate(input.shape);
        timed(options, ex, "upload", [&] { ex.upload(input, source.view); });
    }
    for (const OperationPlan& op : plan.operations) {
        std::vector<Buffer> results;
        results.reserve(op.steps.size());
        auto view_of = [&](int index) -> ConstImageView {
            if (index == no_operand) return {};
            return index == op_input ? source.cview() : results[std::size_t(index)].cview();
        };
        for (const StepPlan& step : op.steps) {
            Buffer out = ex.allocate(step.out_shape);
            timed(options, ex, op.spec + " [" + step.label + "]", [&] {
                if (auto* l = std::get_if<LinearPlan>(&step.what))
                    ex.linear(*l, view_of(step.input), out.view);
                else if (auto* m = std::get_if<MorphPlan>(&step.what))
                    ex.morph(*m, view_of(step.input), out.view);
                else
                    ex.combine(std::get<CombinePlan>(step.what), view_of(step.input), view_of(step.second), out.view);
            });
            results.push_back(std::move(out));
        }
        source = std::move(results.back());
    }
    if (ex.memory() == Memory::host) return std::move(*std::static_pointer_cast<Image>(source.storage));
    Image result(plan.output);
    timed(options, ex, "download", [&] { ex.download(source.cview(), result.view()); });
    ex.synchronize();
    return result;
}

std::vector<std::string> available_backends() {
    std::vector<std::string> b = {"cpu", "reference"};
    if (cuda_available()) b.push_back("cuda");
    return b;
}

} // namespace apron
