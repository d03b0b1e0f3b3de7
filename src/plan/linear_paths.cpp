// The planner's choice of path for a linear step (see linear_paths.hpp).
#include "core/overrides.hpp"
#include "plan/linear_paths.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "apron/errors.hpp"
#include "plan/backend_caps.hpp"

namespace apron {
namespace {

constexpr Algorithm all_paths[] = {Algorithm::direct, Algorithm::separable, Algorithm::low_rank, Algorithm::fft,
                                   Algorithm::tensor};

// The CPU's fixed FFT threshold when no table says otherwise (measured on 2 cores, 4096^2 f32: direct 97 ms
// at 21x21, 178 at 31x31, 650 at 63x63; the FFT 90-130 whatever the mask).
constexpr int cpu_fft_min_area = 25 * 25;

// Masks whose SVD the planner computes: the one-sided Jacobi costs about min(W,H)^2 max(W,H) per sweep.
constexpr int max_low_rank_side = 160;

// Why `path` cannot compute the plan on this backend and image ("" when it can).
std::string unavailable(Algorithm path, const LinearPlan& p, const ImageShape& shape, const BackendCaps& caps,
                        const std::optional<LowRankMask>& lr) {
    const Mask& m = p.step.mask;
    switch (path) {
    case Algorithm::automatic:
    case Algorithm::direct: return "";
    case Algorithm::separable:
        if (p.exact ? bool(p.integer_separable) : bool(p.separable)) return "";
        return m.width > 1 && m.height > 1 ? "the mask is not of rank 1" : "a 1-row or 1-column mask is direct already";
    case Algorithm::low_rank:
        if (p.exact) return "integer image and weights: the exact sum does not split into rounded float terms";
        if (lr && lr->terms.size() >= 2) return "";
        if (p.separable) return "the mask is of rank 1 (separable)";
        if (lr) return "the mask is of rank 1 (separable)";
        if (m.width == 1 || m.height == 1) return "a 1-row or 1-column mask";
        if (std::min(m.width, m.height) > max_low_rank_side) return "the mask is larger than 160 on both sides";
        return "no rank <= 8 is within SPEC.md's tolerance";
    case Algorithm::fft:
        if (overrides().fft_path == 0) return "APRON_FFT=0";
        return caps.fft_unavailable(p, shape);
    case Algorithm::tensor: return caps.tensor_unavailable(p, shape);
    }
    return "";
}

// The cost model's time for a path (NaN when the table cannot say).
double predict(Algorithm path, const LinearPlan& p, const ImageShape& shape, const CostTable* table,
               const std::optional<LowRankMask>& lr) {
    if (!table) return std::numeric_limits<double>::quiet_NaN();
    const Mask& m = p.step.mask;
    const double samples = double(shape.width) * shape.height * shape.channels;
    const std::string cls = cost_class(p, shape.channels);
    const double square = std::sqrt(double(m.width) * m.height), sides = 0.5 * (m.width + m.height);
    std::optional<double> s;
    switch (path) {
    case Algorithm::automatic:
    case Algorithm::direct: s = table->seconds("direct", cls, square, samples); break;
    case Algorithm::separable: s = table->seconds("separable", cls, sides, samples); break;
    case Algorithm::fft: s = table->seconds("fft", cls, square, samples); break;
    case Algorithm::tensor: s = table->seconds("tensor", cls, square, samples); break;
    case Algorithm::low_rank: {
        // r float separable passes to f32 (the first reads the input's class), r - 1 additions.
        const double r = lr ? double(lr->terms.size()) : 2;
        auto pass = table->seconds("separable", cls.rfind("u8-int", 0) == 0 ? "u8" + cls.substr(6) : cls, sides, samples);
        auto add = table->seconds("combine", "f32", 1, samples);
        if (pass && add) s = r * *pass + (r - 1) * *add;
        break;
    }
    }
    return s ? *s : std::numeric_limits<double>::quiet_NaN();
}

// The fixed preferences, for backends without a table: separable; low-rank where its r (W + H) taps are
// under a quarter of the direct path's and under 128 (two 31-wide terms: on 2 cores a separable f32 pass
// of 31 runs at ~0.33 Gpix/s, the FFT at ~0.14); then the FFT for large masks.
Algorithm fixed_choice(const LinearPlan& p, const std::vector<PathEstimate>& est, const std::optional<LowRankMask>& lr) {
    auto can = [&](Algorithm a) {
        for (const auto& e : est)
            if (e.path == a) return e.unavailable.empty();
        return false;
    };
    if (can(Algorithm::separable)) return Algorithm::separable;
    const Mask& m = p.step.mask;
    if (can(Algorithm::low_rank) && lr) {
        const double taps = double(lr->terms.size()) * (m.width + m.height);
        if (taps * 4 <= double(m.width) * m.height && taps <= 128) return Algorithm::low_rank;
    }
    if (can(Algorithm::fft) && p.step.mask.width * p.step.mask.height >= cpu_fft_min_area) return Algorithm::fft;
    return Algorithm::direct;
}

LinearAlgorithm algorithm_of(Algorithm a) {
    switch (a) {
    case Algorithm::separable: return LinearAlgorithm::separable;
    case Algorithm::fft: return LinearAlgorithm::fft;
    case Algorithm::tensor: return LinearAlgorithm::tensor;
    default: return LinearAlgorithm::direct;
    }
}

} // namespace

LinearChoice choose_linear_path(LinearPlan p, const ImageShape& shape, const BackendCaps& caps, Algorithm force,
                                const CostTable* table, const std::string& spec) {
    const Mask& m = p.step.mask;
    LinearChoice c;
    // A float mask that is not exactly rank 1: its SVD, once (rank 1 within tolerance is a separable plan).
    std::optional<LowRankMask> lr;
    if (!p.exact && !p.separable && m.width > 1 && m.height > 1 && std::min(m.width, m.height) <= max_low_rank_side) {
        lr = low_rank_form(m, max_low_rank);
        if (lr && lr->terms.size() == 1) p.separable = lr->terms[0];
    }
    for (Algorithm a : all_paths) {
        PathEstimate e;
        e.path = a;
        e.unavailable = unavailable(a, p, shape, caps, lr);
        e.seconds = e.unavailable.empty() ? predict(a, p, shape, table, lr) : std::numeric_limits<double>::quiet_NaN();
        c.estimates.push_back(std::move(e));
    }
    Algorithm pick = Algorithm::direct;
    if (force != Algorithm::automatic) {
        for (const auto& e : c.estimates)
            if (e.path == force && !e.unavailable.empty())
                fail("--algo", std::string(to_string(force)) + " cannot run '" + spec + "' (" + std::to_string(m.width) +
                                   "x" + std::to_string(m.height) + " mask, " + to_string(p.in) + "): " + e.unavailable);
        pick = force;
    } else if (overrides().fft_path == 1 && c.estimates[3].unavailable.empty()) {
        pick = Algorithm::fft;  // measure the FFT against the others on the same cases
    } else {
        // The least predicted time among the paths that can run; the fixed preferences where the table
        // is silent on the direct path (no table, or a class it never measured).
        double best = std::numeric_limits<double>::infinity();
        const bool modelled = table && !std::isnan(c.estimates[0].seconds);
        if (modelled) {
            for (const auto& e : c.estimates)
                if (e.unavailable.empty() && !std::isnan(e.seconds) && e.seconds < best) best = e.seconds, pick = e.path;
            // A table without separable points still never prefers W x H taps to W + H.
            if (pick == Algorithm::direct && c.estimates[1].unavailable.empty() && std::isnan(c.estimates[1].seconds))
                pick = Algorithm::separable;
        } else {
            pick = fixed_choice(p, c.estimates, lr);
        }
    }
    for (auto& e : c.estimates) e.chosen = e.path == pick;
    p.algorithm = algorithm_of(pick);
    if (pick == Algorithm::low_rank) c.low_rank = lr;
    c.plan = std::move(p);
    return c;
}

const char* to_string(Algorithm a) {
    switch (a) {
    case Algorithm::automatic: return "auto";
    case Algorithm::direct: return "direct";
    case Algorithm::separable: return "separable";
    case Algorithm::low_rank: return "low-rank";
    case Algorithm::fft: return "fft";
    case Algorithm::tensor: return "tensor";
    }
    return "?";
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
    for (Algorithm a : {Algorithm::automatic, Algorithm::direct, Algorithm::separable, Algorithm::low_rank, Algorithm::fft,
                        Algorithm::tensor})
        if (name == to_string(a)) return a;
    if (name == "low_rank" || name == "lowrank") return Algorithm::low_rank;
    return std::nullopt;
}

} // namespace apron
