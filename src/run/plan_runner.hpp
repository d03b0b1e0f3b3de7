#pragma once
// What Pipeline::run does after planning, for callers above the run layer that run one plan many times on
// parts of an image (the streaming engine's bands): the backend's executor, and a plan's steps on a view.
#include <functional>
#include <memory>

#include "apron/pipeline.hpp"
#include "plan/plan.hpp"

namespace apron {

// The backend `automatic` stands for on this machine (CUDA when a device is found, else the CPU).
Backend resolve_backend(Backend asked);
std::unique_ptr<Executor> make_executor(Backend backend, int threads, void* cuda_stream);
// The plan Pipeline::run makes: make_plan with the options' out type, backend and algorithm (a pipeline of no
// operation converts to the out type); checks the thread count.
ExecutionPlan plan_pipeline(const std::vector<OpProgram>& ops, const ImageShape& input, const RunOptions& options);

// How one step is run: by default `Executor::linear`, `morph` or `combine` on the whole views. A caller may
// split a step into parts of the views (the streaming engine runs non-wrapping steps on either side of a
// wrap seam).
using StepRunner = std::function<void(Executor&, const StepPlan&, ConstImageView in, ConstImageView second, ImageView out)>;
void run_step(Executor& ex, const StepPlan& step, ConstImageView in, ConstImageView second, ImageView out);

// The plan's steps on `input`, into `output` (either in host or in the executor's memory; the input is
// uploaded and the result downloaded as needed). Intermediates have the plan's widths, channels and types
// and the input's height, so a plan made for a whole image runs on a band of its rows. Each intermediate is
// freed after its last reader. Waits for the work unless the output is in device memory on the caller's
// stream. `whole_unwrapped`: the runner runs every step on the whole views but steps along z that wrap (the
// streaming engine's volume bands), so a volume's plane and z steps fuse there as in a plain run (the same
// bits whatever the bands).
void run_plan(const ExecutionPlan& plan, Executor& ex, ConstImageView input, ImageView output, const RunOptions& options,
              const StepRunner& runner = run_step, bool whole_unwrapped = false);

}  // namespace apron
