#pragma once
// Choosing the path of one linear step: which of direct, separable, low-rank, FFT and tensor cores can
// compute it exactly as SPEC.md asks, and which of those the cost model predicts fastest.
#include <optional>
#include <string>
#include <vector>

#include "core/low_rank.hpp"
#include "plan/cost_model.hpp"
#include "plan/plan.hpp"

namespace apron {

struct LinearChoice {
    LinearPlan plan;                     // algorithm set (low-rank: the plan of the whole step, unexpanded)
    std::optional<LowRankMask> low_rank; // set when the low-rank path was chosen
    std::vector<PathEstimate> estimates;
};

// `table` may be null (no calibration for this backend): the fixed preferences then apply (separable,
// then the CPU's FFT from 25x25, else direct). `spec` names the operation in errors.
class BackendCaps;
// The FFT and tensor paths are offered where `caps` (the chosen backend's) says they can run.
LinearChoice choose_linear_path(LinearPlan plan, const ImageShape& shape, const BackendCaps& caps, Algorithm force,
                                const CostTable* table, const std::string& spec);

// The most terms a low-rank plan may have: past 8, the passes and additions cost more than the FFT.
constexpr int max_low_rank = 8;

} // namespace apron
