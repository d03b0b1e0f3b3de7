#pragma once
// What each launch ran, named as a plan names kernels (dispatch_table.hpp's names), so a test can hold every
// plan to what runs: the plan's kernel is a prediction made on the executor's own aligned buffers, the
// launchers choose on the real view. Each launcher records its family and form on this thread's list.
#include <vector>

#include "plan/plan.hpp"

namespace apron::cuda {

void record_launch(KernelChoice kernel);
// This thread's launches since the last clear (at most the last 64).
const std::vector<KernelChoice>& launches();
void clear_launches();

} // namespace apron::cuda
