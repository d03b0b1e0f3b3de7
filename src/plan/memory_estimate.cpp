#include "plan/memory_estimate.hpp"

#include <algorithm>
#include <set>
#include <thread>
#include <utility>

#include "apron/errors.hpp"
#include "apron/memory.hpp"
#include "plan/step_kind.hpp"

namespace apron {

std::string MemoryEstimate::describe() const {
    std::string s = "images " + format_bytes(images) + ", tables " + format_bytes(tables);
    if (scratch) s += ", scratch " + format_bytes(scratch);
    return s;
}

std::vector<int> last_readers(const OperationPlan& op) {
    const std::size_t n = op.steps.size();
    std::vector<int> last(n + 1, -1);
    auto slot = [&](int operand) { return operand == op_input ? n : std::size_t(operand); };
    for (std::size_t k = 0; k < n; ++k)
        for (const int operand : {op.steps[k].input, op.steps[k].second})
            if (operand == op_input || operand >= 0) last[slot(operand)] = int(k);
    return last;
}

namespace {

// The image a step reads: an earlier step's result, or its operation's input.
const ImageShape& input_shape(const StepPlan& s, const OperationPlan& op, const ImageShape& op_input_shape) {
    return s.input >= 0 ? op.steps[std::size_t(s.input)].out_shape : op_input_shape;
}

} // namespace

MemoryEstimate estimate_memory(const ExecutionPlan& plan, int threads, bool output_allocated, int rows) {
    // `rows` of a volume are the tall image's (a slab of whole planes).
    auto image_bytes = [rows](ImageShape s) {
        if (rows > 0 && s.depth > 1) s.depth = int((std::int64_t(rows) + s.height - 1) / s.height);
        else if (rows > 0) s.height = rows;
        return std::uint64_t(s.row_bytes()) * std::uint64_t(s.rows());
    };
    MemoryEstimate e;
    std::set<const void*> seen;
    // Each distinct table once (copies of a mask share their storage). Executors build their own tables from
    // a step's while it runs, one step at a time; host backends' per-thread scratch likewise (sized by the
    // image the step reads: rows of keys follow its width and channels).
    std::uint64_t step_tables = 0, scratch_per_thread = 0;
    ImageShape op_input_shape = plan.input;
    for (const OperationPlan& op : plan.operations) {
        for (const StepPlan& s : op.steps)
            on_kind(s, [&](auto kind, const auto& p) {
                using K = decltype(kind);
                K::tables(p, [&](const void* storage, std::size_t bytes) {
                    if (bytes && seen.insert(storage).second) e.tables += bytes;
                });
                step_tables = std::max(step_tables, K::executor_table_bytes(p));
                const ImageShape& input = input_shape(s, op, op_input_shape);
                scratch_per_thread = std::max(scratch_per_thread, K::host_scratch_per_thread(p, input));
            });
        if (!op.steps.empty()) op_input_shape = op.steps.back().out_shape;
    }
    e.tables += step_tables;

    // Images: the CUDA backend keeps intermediates on the device, the others in host memory. Within an
    // operation, a result lives until its last reader; the operation's result becomes the next one's input.
    const bool host_intermediates = plan.backend != Backend::cuda;
    std::uint64_t peak = 0;
    if (host_intermediates) {
        std::uint64_t source = 0;  // the caller's input: not ours
        for (std::size_t o = 0; o < plan.operations.size(); ++o) {
            const OperationPlan& op = plan.operations[o];
            const std::vector<int> last = last_readers(op);
            std::vector<std::uint64_t> live(op.steps.size(), 0);
            std::uint64_t held = source;
            for (std::size_t k = 0; k < op.steps.size(); ++k) {
                const bool final_step = o + 1 == plan.operations.size() && k + 1 == op.steps.size();
                const std::uint64_t out = final_step && !output_allocated ? 0 : image_bytes(op.steps[k].out_shape);
                held += out;
                live[k] = out;
                peak = std::max(peak, held);
                // Free what step k was the last to read (its inputs), as the runner does.
                for (std::size_t j = 0; j < k; ++j)
                    if (last[j] == int(k)) held -= std::exchange(live[j], 0);
                if (last[op.steps.size()] == int(k)) held -= std::exchange(source, 0);
            }
            source = live.empty() ? source : live.back();
        }
    } else if (output_allocated) {
        peak = image_bytes(plan.output);
    }
    e.images = peak;
    if (scratch_per_thread && host_intermediates) {
        const unsigned cores = threads > 0 ? unsigned(threads) : std::max(1u, std::thread::hardware_concurrency());
        e.scratch = std::uint64_t(cores) * scratch_per_thread;
    }
    return e;
}

} // namespace apron
