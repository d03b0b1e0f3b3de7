#pragma once
// What a planned run takes in host memory, worked out before anything is allocated: the images apron
// allocates (intermediates held at the same time, the output when apron makes it) and the mask and element
// tables of the plan (each distinct table once: steps share them). The pipeline runner compares it with the
// memory budget (RunOptions::memory_budget) and fails at once, naming the bytes, when it does not fit.
#include <cstdint>
#include <string>

#include "plan/plan.hpp"

namespace apron {

struct MemoryEstimate {
    std::uint64_t images = 0;   // the largest set of host images alive at once
    std::uint64_t tables = 0;   // mask, element and integer weight tables
    std::uint64_t scratch = 0;  // working space of the executor (FFT tiles, row buffers)
    std::uint64_t total() const { return images + tables + scratch; }
    std::string describe() const;  // "images 1.2 GiB, tables 134 MiB, scratch 64 MiB"
};

// `output_allocated`: run() makes the result image (Pipeline::run(input) does; run(input, output) writes
// into the caller's). `rows` > 0: the run of a band of that many rows of the plan's image.
MemoryEstimate estimate_memory(const ExecutionPlan& plan, int threads, bool output_allocated, int rows = 0);

// Index of the last step of `op` that reads each step's result (or the operation's input, at index
// steps.size()); -1 where nothing reads it. The runner frees each intermediate after its last reader.
std::vector<int> last_readers(const OperationPlan& op);

} // namespace apron
