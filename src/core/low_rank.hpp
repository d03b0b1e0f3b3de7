#pragma once
// Low-rank forms of a mask: m = sum over t < r of column_t * row_t^T (an SVD truncated to r terms), so a
// rank-r mask runs as r separable passes whose results are added. Many radial masks (disks, rings,
// Gaussian mixtures, difference of Gaussians) are of low rank, or nearly so, and cost r * (W + H) taps per
// pixel this way instead of W * H.
#include <optional>
#include <vector>

#include "apron/mask.hpp"

namespace apron {

struct LowRankMask {
    std::vector<SeparableMask> terms;  // largest singular value first
    double residual_l1 = 0;            // sum |m - sum of terms|: the largest error over max |in|
    double term_l1 = 0;                // sum over terms of |column|_1 * |row|_1 (bounds each term's partial sums)
};

// The singular values of the mask (H x W matrix), largest first; exposed for tests.
std::vector<double> mask_singular_values(const Mask& m);

// The smallest rank r <= max_rank whose truncated SVD keeps a float32 run within SPEC.md's tolerance
// (1e-5 of sum |m| * max |in|, half of it left for the passes' rounding): residual_l1 plus the passes'
// rounding estimate <= budget * sum |m|. nullopt when no such r exists (or the mask is all zeros).
std::optional<LowRankMask> low_rank_form(const Mask& m, int max_rank, double budget = 5e-6);

} // namespace apron
