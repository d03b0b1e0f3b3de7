#pragma once
// The rank step kind (plan/kinds/rank_kind.cpp; plan/step_kind.hpp says what each method answers).
#include "core/rank_value.hpp"
#include "plan/kinds/kind_methods.hpp"

namespace apron {

struct RankStepKind {
    using Action = RankStep;
    using Plan = RankPlan;
    APRON_STEP_KIND_METHODS
};

// The largest window (set cells) the `network` algorithm takes: 7 x 7, where every sample of the window
// still fits in registers on the GPU and in SIMD registers on the CPU.
constexpr int rank_network_cells = 49;

// The element's set cells.
int rank_cells(const Mask& element);

// Host scratch of the fast CPU rank kernels for this plan on an input of this shape: an upper bound per
// thread-pool participant, each participant counting the call's own tables too (plan/kinds/rank_scratch.cpp).
std::uint64_t rank_cpu_scratch_per_thread(const RankPlan& plan, const ImageShape& input);

} // namespace apron
