#pragma once
// What a PreparedPipeline holds (apron/pipeline.hpp): the plan, made once, and the options it was made
// under. The streaming engine reads the plan to run it on bands.
#include "apron/pipeline.hpp"
#include "plan/memory_estimate.hpp"
#include "plan/plan.hpp"

namespace apron {

struct PreparedPipeline::State {
    ExecutionPlan plan;
    RunOptions options;  // the plan's: backend, out_type, algorithm, threads, cuda_device, memory_budget (no callbacks)
    // Host memory of a run on the whole image, worked out once: with the result made by run(input), and into
    // the caller's output.
    MemoryEstimate with_result, into_output;
};

}  // namespace apron
