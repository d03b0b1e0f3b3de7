// Runs a pipeline: plan once, then execute step by step in the executor's memory (host or device),
// keeping intermediates there; only the input goes up and the result comes back.
#include "apron/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>

#include "apron/errors.hpp"
#include "apron/memory.hpp"
#include "plan/memory_estimate.hpp"
#include "plan/plan.hpp"
#include "plan/step_kind.hpp"
#include "run/plan_runner.hpp"
#include "run/prepared_state.hpp"

namespace apron {
namespace {

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

Backend resolve_backend(Backend asked) {
    if (asked == Backend::automatic) return cuda_available() ? Backend::cuda : Backend::cpu;
    return asked;
}

std::unique_ptr<Executor> make_executor(Backend b, int threads, void* cuda_stream) {
    switch (b) {
    case Backend::reference: return make_reference_executor();
    case Backend::cuda: {
        auto e = make_cuda_executor(cuda_stream);
        if (!e) fail("--backend", "cuda: this build has no CUDA backend (configure with the CUDA toolkit)");
        return e;
    }
    default: return make_cpu_executor(threads);
    }
}

// The last few pipelines prepared by run(), memory_needed() and describe(), so that a warm call of the same
// shape and options plans nothing (the Python package's calls, a batch slot's images of one size, `apron
// filter`'s checks before its run).
struct Pipeline::Cache {
    static constexpr std::size_t kept = 4;
    std::mutex mutex;
    std::vector<PreparedPipeline> recent;  // the most recent last
};

Pipeline::Pipeline() : cache_(std::make_shared<Cache>()) {}

Pipeline::Pipeline(const std::vector<std::string>& specs) : Pipeline() {
    for (const auto& s : specs) add(s);
}

void Pipeline::add(OpProgram op) {
    cache_ = std::make_shared<Cache>();  // copies made before keep theirs
    // Every mask or element of the pipeline so far; an equal one takes its storage. Sizes are compared
    // first, so only tables of one size are ever compared weight by weight.
    std::vector<SharedValues<double>*> known;
    auto tables_of = [](OpProgram& program, const MaskVisitor& visit) {
        for (Step& step : program.steps) visit_tables(step, visit);
    };
    for (OpProgram& earlier : ops_) tables_of(earlier, [&](Mask& m) { known.push_back(&m.weights); });
    tables_of(op, [&](Mask& m) {
        for (SharedValues<double>* k : known)
            if (k->size() == m.weights.size() && *k == m.weights) {
                m.weights.share_storage_of(*k);
                return;
            }
        known.push_back(&m.weights);
    });
    ops_.push_back(std::move(op));
}

namespace {

// The option of `call` that differs from the prepared ones, "" when none.
std::string differing_option(const RunOptions& prepared, const RunOptions& call) {
    if (resolve_backend(call.backend) != resolve_backend(prepared.backend)) return "--backend";
    if (call.out_type != prepared.out_type) return "--out-type";
    if (call.algorithm != prepared.algorithm) return "--algo";
    if (call.threads != prepared.threads) return "--threads";
    if (call.cuda_device != prepared.cuda_device) return "cuda_device";
    return "";
}

} // namespace

PreparedPipeline Pipeline::prepare(const ImageShape& input, const RunOptions& options) const {
    validate_shape(input, "input image");
    const std::shared_ptr<void> device = use_cuda_device(options.cuda_device);  // before planning: the device's tables
    auto state = std::make_shared<PreparedPipeline::State>();
    state->plan = plan_pipeline(ops_, input, options);
    state->options = options;  // the plan's options; what belongs to one call is the caller's
    state->options.timings = nullptr;
    state->options.between_steps = nullptr;
    state->options.cuda_stream = nullptr;
    state->with_result = estimate_memory(state->plan, options.threads, true);
    state->into_output = estimate_memory(state->plan, options.threads, false);
    return PreparedPipeline(std::move(state));
}

PreparedPipeline Pipeline::prepared(const ImageShape& input, const RunOptions& options) const {
    Cache& cache = *cache_;
    {
        std::lock_guard lock(cache.mutex);
        for (auto it = cache.recent.rbegin(); it != cache.recent.rend(); ++it)
            if (it->input() == input && differing_option(it->state().options, options).empty()) return *it;
    }
    PreparedPipeline made = prepare(input, options);  // outside the lock: planning may take a while
    std::lock_guard lock(cache.mutex);
    if (cache.recent.size() == Cache::kept) cache.recent.erase(cache.recent.begin());
    cache.recent.push_back(made);
    return made;
}

std::string Pipeline::describe(const ImageShape& input, const RunOptions& options, bool candidates) const {
    return prepared(input, options).describe(candidates);
}

namespace {

// Whether two views share a byte. Views of one allocation with one pitch are compared as rectangles
// (side-by-side ROIs interleave by rows without overlapping); other cases compare byte ranges.
bool overlaps(ConstImageView a, ConstImageView b) {
    if (a.memory != b.memory) return false;
    if (a.data > b.data) std::swap(a, b);
    const std::byte* a_end = a.data + a.pitch * std::size_t(a.height() - 1) + a.shape.row_bytes();
    if (b.data >= a_end) return false;
    if (a.pitch != b.pitch) return true;
    const auto pitch = std::ptrdiff_t(a.pitch), off = b.data - a.data;
    const std::ptrdiff_t dy = off / pitch, dx = off % pitch;
    const auto aw = std::ptrdiff_t(a.shape.row_bytes()), bw = std::ptrdiff_t(b.shape.row_bytes());
    auto meet = [&](std::ptrdiff_t x, std::ptrdiff_t y) {  // b's rectangle at (x, y) in a's frame
        return x < aw && x + bw > 0 && y < a.height() && y + b.height() > 0;
    };
    return meet(dx, dy) || meet(dx - pitch, dy + 1);
}

} // namespace

ExecutionPlan plan_pipeline(const std::vector<OpProgram>& ops, const ImageShape& input, const RunOptions& options) {
    if (options.threads < 0 || options.threads > max_threads)
        fail("--threads", std::to_string(options.threads) + " is out of range (0 = all cores, at most " +
                              std::to_string(max_threads) + ")");
    ExecutionPlan plan =
        make_plan(ops, input, options.out_type.value_or(input.type), resolve_backend(options.backend), options.algorithm);
    if (plan.operations.empty()) {
        // No operation: the output is the input converted to the output type.
        OperationPlan convert;
        convert.spec = "convert";
        convert.steps.push_back(StepPlan{CombinePlan{CombineStep{1, 0, 0}, input.type, input.type, plan.output.type},
                                         op_input, no_operand, plan.output, "convert"});
        plan.operations.push_back(std::move(convert));
    }
    return plan;
}

std::uint64_t Pipeline::memory_needed(const ImageShape& input, const RunOptions& options, bool result_allocated) const {
    return prepared(input, options).memory(0, result_allocated);
}

ImageShape Pipeline::output_shape(const ImageShape& input, const RunOptions& options) const {
    ImageShape s = input;
    s.type = options.out_type.value_or(input.type);
    return s;
}

Image Pipeline::run(ConstImageView input, const RunOptions& options) const {
    validate_shape(input.shape, "input image");
    return prepared(input.shape, options).run(input, options);
}

void Pipeline::run(ConstImageView input, ImageView output, const RunOptions& options) const {
    validate_shape(input.shape, "input image");
    prepared(input.shape, options).run(input, output, options);
}

const ImageShape& PreparedPipeline::input() const { return state_->plan.input; }
const ImageShape& PreparedPipeline::output() const { return state_->plan.output; }

std::uint64_t PreparedPipeline::memory(int rows, bool result_allocated) const {
    if (rows < 0) fail("rows", std::to_string(rows) + " is negative (0: the whole image)");
    if (rows == 0 || rows == state_->plan.input.height)
        return (result_allocated ? state_->with_result : state_->into_output).total();
    return estimate_memory(state_->plan, state_->options.threads, result_allocated, rows).total();
}

// Each step's reach added: an upper bound of the longest chain through an operation's steps, on either side
// whichever way the executor orients the mask or element.
// On a volume, rows are the tall image's (apron/image.hpp): a step along z reaches its planes' every row, a
// plane step none beyond its plane; on a 2-D image a step along z reads its own row alone. A step spanning
// x, y and z reaches its planes' every row on a volume, and its rows within a plane on a 2-D image.
RowReach PreparedPipeline::reach() const {
    RowReach r;
    const ImageShape& in = state_->plan.input;
    for (const auto& op : state_->plan.operations)
        for (const auto& s : op.steps) {
            const Reach k = reach_of(s);  // the step kind's (an FFT step's: its tile rows)
            int both = 0;
            if (s.axes == Axes::volume) both = in.depth > 1 ? std::max(k.planes_before, k.planes_after) * in.height : std::max(k.top, k.bottom);
            else if ((in.depth > 1) == (s.axes == Axes::depth)) both = std::max(k.top, k.bottom) * (in.depth > 1 ? in.height : 1);
            else continue;
            r.above += both, r.below += both;
            r.wraps = r.wraps || wraps(s);
        }
    return r;
}

std::string PreparedPipeline::describe(bool candidates) const { return state_->plan.describe(candidates); }

Image PreparedPipeline::run(ConstImageView input) const { return run(input, state_->options); }

void PreparedPipeline::run(ConstImageView input, ImageView output) const { run(input, output, state_->options); }

namespace {

std::string shape_text(const ImageShape& s) {
    return std::to_string(s.width) + "x" + std::to_string(s.height) + (s.depth > 1 ? "x" + std::to_string(s.depth) + " (depth)" : "") +
           "x" + std::to_string(s.channels) + " " + to_string(s.type);
}

// What a call may not change: the options the plan was made under, and the input's shape.
void check_call(const PreparedPipeline::State& state, ConstImageView input, const RunOptions& options) {
    if (const std::string o = differing_option(state.options, options); !o.empty())
        fail(o, "differs from the option the pipeline was prepared with (prepare it again for other options)");
    if (!(input.shape == state.plan.input))
        fail("input image", "is " + shape_text(input.shape) + ", the pipeline was prepared for " + shape_text(state.plan.input));
}

} // namespace

Image PreparedPipeline::run(ConstImageView input, const RunOptions& options) const {
    check_call(*state_, input, options);
    // The result's memory counts against the budget too: checked before it is allocated.
    require_memory(state_->with_result.total(), options.memory_budget, "pipeline", state_->with_result.describe());
    Image result(output());
    run(input, result.view(), options);
    return result;
}

void PreparedPipeline::run(ConstImageView input, ImageView output, const RunOptions& options) const {
    const ExecutionPlan& plan = state_->plan;
    check_call(*state_, input, options);
    const std::shared_ptr<void> device = use_cuda_device(options.cuda_device);
    require_memory(state_->into_output.total(), options.memory_budget, "pipeline", state_->into_output.describe());
    const ImageShape& want = plan.output;
    if (!(output.shape == want)) fail("output image", "is " + shape_text(output.shape) + ", the result is " + shape_text(want));
    if (overlaps(input.all_rows(), ConstImageView(output).all_rows()))
        fail("output image", "overlaps the input (apron does not filter in place)");
    auto executor = make_executor(plan.backend, options.threads, options.cuda_stream);
    Executor& ex = *executor;
    for (const ConstImageView v : {input, ConstImageView(output)})
        if (v.memory == Memory::device && ex.memory() != Memory::device)
            fail("--backend", std::string(to_string(plan.backend)) + " works on host images; device memory needs cuda");

    // One step from pinned host memory to pinned host memory: copies overlap with compute.
    if (ex.memory() == Memory::device && input.memory == Memory::host && output.memory == Memory::host &&
        plan.operations.size() == 1 && plan.operations[0].steps.size() == 1 && input.shape.depth == 1 &&
        plan.operations[0].steps[0].axes == Axes::plane) {
        bool done = false;
        timed(options, ex, "host to host [" + plan.operations[0].steps[0].label + ", overlapped]", [&] {
            done = on_kind(plan.operations[0].steps[0],
                           [&](auto kind, const auto& p) { return decltype(kind)::run_overlapped(ex, p, input, output); });
        });
        if (done) {
            ex.synchronize();
            return;
        }
        if (options.timings) options.timings->pop_back();
    }

    run_plan(plan, ex, input, output, options);
}

void run_step(Executor& ex, const StepPlan& step, ConstImageView in, ConstImageView second, ImageView out) {
    run_step_kind(ex, step, in, second, out);
}

namespace {

// Whether `next` applies the very function `step` applied, to `step`'s result (the kind says what is the
// same function: the same erosion or dilation, as `iterations` expands it).
bool repeats(const StepPlan& step, const StepPlan& next, int step_index) {
    return next.input == step_index && next.second == no_operand && apron::repeats(step, next);
}

// The operand of combine step `next` (at k + 1) that is not step k's result, and whether that result is its
// A; nullopt unless `next` combines step k's morphology result, read by nothing else, with another image, in
// the affine form a*A + b*B + c (the only one Executor::morph_combine fuses).
struct FusedOperand {
    int other;
    bool result_is_a;
};
// Whether step k (a linear plane step) and step k + 1 (a linear step along z reading step k's result, which
// nothing else reads) may run as one pass (Executor::linear_volume). Not where z wraps: a streamed volume's
// band runs such a step in two parts (either side of the wrap seam), and the whole run must give its bits.
bool fusable_volume_pair(const OperationPlan& op, std::size_t k, const std::vector<int>& last_reader) {
    if (k + 1 >= op.steps.size() || last_reader[k] != int(k) + 1) return false;
    const StepPlan &step = op.steps[k], &next = op.steps[k + 1];
    return std::holds_alternative<LinearPlan>(step.what) && std::holds_alternative<LinearPlan>(next.what) &&
           step.axes == Axes::plane && next.axes == Axes::depth && next.input == int(k) && next.second == no_operand &&
           step.second == no_operand && std::get<LinearPlan>(next.what).step.border != BorderMode::wrap;
}

std::optional<FusedOperand> fused_operand(const OperationPlan& op, std::size_t k, const std::vector<int>& last_reader) {
    if (k + 1 >= op.steps.size() || last_reader[k] != int(k) + 1) return std::nullopt;
    const StepPlan &step = op.steps[k], &next = op.steps[k + 1];
    if (!std::holds_alternative<MorphPlan>(step.what) || !std::holds_alternative<CombinePlan>(next.what)) return std::nullopt;
    if (std::get<CombinePlan>(next.what).step.form != CombineForm::affine) return std::nullopt;
    const int self = int(k);
    if (next.input == self && next.second != self && next.second != no_operand) return FusedOperand{next.second, true};
    if (next.second == self && next.input != self) return FusedOperand{next.input, false};
    return std::nullopt;
}

// Whether two host images hold the same bytes (NaN included: equal bytes, equal results).
bool same_pixels(ConstImageView a, ConstImageView b) {
    const std::size_t row = a.shape.row_bytes();
    for (int y = 0; y < int(a.shape.rows()); ++y)
        if (std::memcmp(a.row_bytes(y), b.row_bytes(y), row) != 0) return false;
    return true;
}

// A step's operand seen as `axes` run it (for the z view: row r of every plane when `row` >= 0, else every
// plane's pixels in one row per plane, rows being packed).
template <class View>
View z_view(View v, int row) {
    ImageShape s = v.shape.plane();
    s.height = v.shape.depth;
    const std::size_t plane = v.pitch * std::size_t(v.shape.height);
    if (row >= 0) return View{v.data + std::size_t(row) * v.pitch, s, plane, v.memory};
    s.width = v.shape.width * v.shape.height;
    return View{v.data, s, plane, v.memory};
}

bool packed(ConstImageView v) { return v.data == nullptr || v.pitch == v.shape.row_bytes(); }

// One step on a volume, or on an image with a step along z (a volume of one plane), through `runner`: a
// pointwise step on all rows at once; a plane step in one call where the executor runs the planes as a
// batch (the plain runner only: a band runner cuts views by rows), else on each plane; a depth step on the
// z view, in one call where every operand's rows are packed and a plane's pixels fit an int, else once per
// row of the planes; a step spanning x, y and z on the whole volume.
void run_volume_step(const StepRunner& runner, bool plain, Executor& ex, const StepPlan& step, ConstImageView in,
                     ConstImageView second, ImageView out) {
    if (std::holds_alternative<CombinePlan>(step.what)) {
        runner(ex, step, in.all_rows(), second.data ? second.all_rows() : second, out.all_rows());
        return;
    }
    if (step.axes == Axes::volume) {  // the whole volume in one call
        runner(ex, step, in, second, out);
        return;
    }
    if (step.axes == Axes::plane && plain && !second.data && ex.runs_planes(step, in.shape)) {
        runner(ex, step, in, second, out);
        return;
    }
    if (step.axes == Axes::plane) {
        for (int z = 0; z < in.shape.depth; ++z)
            runner(ex, step, in.plane(z), second.data ? second.plane(z) : second, out.plane(z));
        return;
    }
    const bool one_call = packed(in) && packed(second) && packed(as_const(out)) &&
                          std::int64_t(in.shape.width) * in.shape.height <= std::numeric_limits<int>::max() / 4;
    if (one_call) {
        runner(ex, step, z_view(in, -1), second.data ? z_view(second, -1) : second, z_view(out, -1));
        return;
    }
    for (int r = 0; r < in.shape.height; ++r)
        runner(ex, step, z_view(in, r), second.data ? z_view(second, r) : second, z_view(out, r));
}

}  // namespace

void run_plan(const ExecutionPlan& plan, Executor& ex, ConstImageView input, ImageView output, const RunOptions& options,
              const StepRunner& runner, bool whole_unwrapped) {
    // A volume, or a step along z or spanning x, y and z: steps run plane by plane, along z or on the whole
    // volume (run_volume_step); no step fused.
    bool volume = input.shape.depth > 1;
    for (const OperationPlan& op : plan.operations)
        for (const StepPlan& s : op.steps) volume = volume || s.axes != Axes::plane;
    // An erosion or dilation whose result equals its input gives that same result every time it is repeated:
    // the repeats of `iterations` stop there (dilate:se=disk:2048,iterations=1000 saturates after one).
    // Host memory only (the check reads the images), and only with the plain step runner, whose step is a
    // function of its input alone.
    const auto* plain = runner.target<void (*)(Executor&, const StepPlan&, ConstImageView, ConstImageView, ImageView)>();
    const bool skip_fixed_points = ex.memory() == Memory::host && plain && *plain == &run_step;
    std::size_t steps_done = 0, steps = 0;
    for (const OperationPlan& op : plan.operations) steps += op.steps.size();
    Buffer source;
    if (input.memory == ex.memory()) {
        source = Buffer{ImageView{const_cast<std::byte*>(input.data), input.shape, input.pitch, input.memory}, nullptr};
    } else {
        source = ex.allocate(input.shape);
        timed(options, ex, "upload", [&] { ex.upload(input, source.view); });
    }
    const bool write_in_place = output.memory == ex.memory();
    for (std::size_t o = 0; o < plan.operations.size(); ++o) {
        const OperationPlan& op = plan.operations[o];
        // Each intermediate is freed after its last reader (dilate:iterations=1000 holds two images, not
        // a thousand), as estimate_memory assumes.
        const std::vector<int> last_reader = last_readers(op);
        std::vector<Buffer> results;
        results.reserve(op.steps.size());
        auto view_of = [&](int index) -> ConstImageView {
            if (index == no_operand) return {};
            return index == op_input ? source.cview() : results[std::size_t(index)].cview();
        };
        int fixed_point = -2;  // the step whose result equals its input (-2: none)
        auto is_last = [&](std::size_t k) { return o + 1 == plan.operations.size() && k + 1 == op.steps.size(); };
        // Frees what step k was the last to read.
        auto release_after = [&](std::size_t k) {
            for (std::size_t j = 0; j < k; ++j)
                if (last_reader[j] == int(k)) results[j] = Buffer{};
            if (last_reader[op.steps.size()] == int(k) && !is_last(k)) source = Buffer{};
        };
        // Steps k and k + 1 in one pass by `pass` (true where the executor ran it): the first step's result is
        // never written, results hold both steps' (step k's empty). False (nothing done) otherwise.
        auto run_as_one = [&](std::size_t k, auto&& pass) {
            const StepPlan &step = op.steps[k], &next = op.steps[k + 1];
            ImageShape shape = next.out_shape;
            shape.height = input.height();
            shape.depth = input.shape.depth;
            Buffer out = is_last(k + 1) && write_in_place ? Buffer{output, nullptr} : ex.allocate(shape);
            bool done = false;
            timed(options, ex, op.spec + " [" + step.label + " + " + next.label + "]", [&] { done = pass(out.view); });
            if (!done) {
                if (options.timings) options.timings->pop_back();
                return false;
            }
            results.emplace_back();
            results.push_back(std::move(out));
            return true;
        };
        // A morphology step and the combine that alone reads its result, in one pass where the executor can
        // (gradient, top-hat, black-hat). Plain runs only (a band runner may cut steps apart).
        auto run_fused = [&](std::size_t k) {
            const std::optional<FusedOperand> f =
                plain && *plain == &run_step && !volume ? fused_operand(op, k, last_reader) : std::nullopt;
            if (!f) return false;
            const StepPlan &step = op.steps[k], &next = op.steps[k + 1];
            return run_as_one(k, [&](ImageView out) {
                return ex.morph_combine(std::get<MorphPlan>(step.what), std::get<CombinePlan>(next.what), view_of(step.input),
                                        view_of(f->other), f->result_is_a, out);
            });
        };
        // A volume's plane step and its z step in one pass where the executor can (runners of whole steps).
        auto run_fused_volume = [&](std::size_t k) {
            if (!volume || !((plain && *plain == &run_step) || whole_unwrapped) || !fusable_volume_pair(op, k, last_reader))
                return false;
            const LinearPlan &plane = std::get<LinearPlan>(op.steps[k].what), &along_z = std::get<LinearPlan>(op.steps[k + 1].what);
            const ConstImageView in = view_of(op.steps[k].input);
            if (!ex.fuses_linear_volume(plane, along_z, in.shape)) return false;
            return run_as_one(k, [&](ImageView out) { return ex.linear_volume(plane, along_z, in, out); });
        };
        for (std::size_t k = 0; k < op.steps.size(); ++k) {
            const StepPlan& step = op.steps[k];
            const bool last = is_last(k);
            if (options.between_steps) options.between_steps(steps_done, steps);
            ++steps_done;
            if (!(skip_fixed_points && !last && k > 0 && fixed_point == int(k) - 1) && (run_fused(k) || run_fused_volume(k))) {
                release_after(k);
                ++k;  // the combine, done
                if (options.between_steps) options.between_steps(steps_done, steps);
                ++steps_done;
                release_after(k);
                continue;
            }
            // A repeat of the step at its fixed point: its result, handed on (the last step still writes the
            // output). Only its next step reads it, so nothing else sees the move.
            if (skip_fixed_points && !last && k > 0 && fixed_point == int(k) - 1 && last_reader[k - 1] == int(k) &&
                repeats(op.steps[k - 1], step, int(k) - 1)) {
                Buffer same = std::move(results[k - 1]);
                results.push_back(std::move(same));
                fixed_point = int(k);
            } else {
                ImageShape shape = step.out_shape;
                shape.height = input.height();  // a band of the image the plan was made for (a slab of a volume's planes)
                shape.depth = input.shape.depth;
                Buffer out = last && write_in_place ? Buffer{output, nullptr} : ex.allocate(shape);
                timed(options, ex, op.spec + " [" + step.label + "]", [&] {
                    if (volume)
                        run_volume_step(runner, (plain && *plain == &run_step) || whole_unwrapped, ex, step, view_of(step.input),
                                        view_of(step.second), out.view);
                    else runner(ex, step, view_of(step.input), view_of(step.second), out.view);
                });
                // Compared only where a repeat of this step follows.
                if (skip_fixed_points && k + 1 < op.steps.size() && repeats(step, op.steps[k + 1], int(k))) {
                    ex.synchronize();
                    if (same_pixels(view_of(step.input), out.cview())) fixed_point = int(k);
                }
                results.push_back(std::move(out));
            }
            release_after(k);
        }
        source = std::move(results.back());
    }
    if (!write_in_place) timed(options, ex, "download", [&] { ex.download(source.cview(), output); });
    // A device result on the caller's stream is theirs to wait for; everything else is finished here.
    if (!(output.memory == Memory::device && options.cuda_stream)) ex.synchronize();
}

std::vector<std::string> available_backends() {
    std::vector<std::string> b = {"cpu", "reference"};
    if (cuda_available()) b.push_back("cuda");
    return b;
}

} // namespace apron
