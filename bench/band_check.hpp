#pragma once
// A benchmark's output checked once against another backend, on the rows that cost nothing to recompute:
// the top and bottom bands (every column, so the left and right borders too), each recomputed from a view
// of the input that holds the band and enough rows beyond it for every step's mask. Rows inside the image
// see the same pixels in the view as in the whole image, so the band's results must agree:
// bit for bit for exact plans and morphology, else within twice SPEC.md's tolerance (each backend is within
// 1e-5 of sum |m| max |in| of the float64 result, integer types within 1).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

#include "apron/pipeline.hpp"
#include "plan/plan.hpp"
#include "plan/step_kind.hpp"

namespace apron::bench {

struct CheckResult {
    bool ok = true;
    double max_diff = 0, tolerance = 0;
    std::string text() const {
        char s[96];
        std::snprintf(s, sizeof s, "%s (max diff %.3g, tolerance %.3g)", ok ? "ok" : "MISMATCH", max_diff, tolerance);
        return s;
    }
};

inline double sample_at(const ConstImageView& v, int y, std::size_t i) {
    switch (v.type()) {
    case PixelType::u8: return v.row<std::uint8_t>(y)[i];
    case PixelType::u16: return v.row<std::uint16_t>(y)[i];
    default: return v.row<float>(y)[i];
    }
}

// Whether every step of the plan gives the same bits on every backend, and the program's gain (the product of
// its steps' |result| / max |input| bounds), which scales the float tolerance.
inline bool plan_exact(const ExecutionPlan& plan) {
    for (const OperationPlan& op : plan.operations)
        for (const StepPlan& s : op.steps)
            if (!bit_exact(s)) return false;
    return true;
}

inline double program_gain(const OpProgram& program) {
    double gain = 1;
    for (const Step& s : program.steps) gain *= gain_of(s);
    return gain;
}

// Rows of every step's mask or element added up: how far a band's input must reach beyond it.
inline int reach_rows(const OpProgram& program) {
    int rows = 2;
    for (Step s : program.steps) visit_tables(s, [&](Mask& m) { rows += m.height; });
    return rows;
}

// The reference's results on the top and bottom bands (`band` rows each, every column), and max |in| over the
// input rows they read. Computed once per case: the forced paths of one case share them.
struct ReferenceBands {
    int band = 0;
    Image top, bottom;
    double max_in = 0;
};

inline ReferenceBands reference_bands(const OpProgram& program, const Image& input, PixelType out_type,
                                      Backend reference, int band = 32) {
    Pipeline p;
    p.add(program);
    const int h = input.height(), reach = reach_rows(program);
    ReferenceBands r;
    r.band = band = std::min(band, h);
    const int top_rows = std::min(h, band + reach), bottom_y = std::max(0, h - band - reach);
    if (input.type() == PixelType::f32)
        for (int y = 0; y < h; y = (y + 1 == top_rows && bottom_y > y) ? bottom_y : y + 1)
            for (std::size_t i = 0; i < std::size_t(input.width()) * input.channels(); ++i)
                r.max_in = std::max(r.max_in, std::abs(double(input.view().row<float>(y)[i])));
    // input rows [in_y, in_y + in_rows); the band's rows start at row `first` of that run's result
    auto run = [&](int in_y, int in_rows, int first) {
        const ConstImageView in = input.view().roi(0, in_y, input.width(), in_rows);
        Image out(ImageShape{input.width(), in_rows, input.channels(), out_type});
        p.run(in, out.view(), RunOptions{.backend = reference, .out_type = out_type});
        Image rows(ImageShape{input.width(), band, input.channels(), out_type});
        for (int y = 0; y < band; ++y)
            std::memcpy(rows.row<std::byte>(y), std::as_const(out).row<std::byte>(first + y), rows.shape().row_bytes());
        return rows;
    };
    r.top = run(0, top_rows, 0);
    r.bottom = run(bottom_y, h - bottom_y, (h - bottom_y) - band);
    return r;
}

// `result` (host, the whole image) against the reference's bands: bit for bit for exact plans and morphology,
// else within twice SPEC.md's tolerance.
inline CheckResult compare_bands(const ReferenceBands& ref, const OpProgram& program, const ExecutionPlan& plan,
                                 ConstImageView result) {
    const bool exact = plan_exact(plan);
    const PixelType t = result.type();
    CheckResult r;
    r.tolerance = exact ? 0 : t == PixelType::f32 ? 2e-5 * program_gain(program) * std::max(ref.max_in, 1.0) : 1;
    const std::size_t n = std::size_t(result.width()) * result.channels();
    const int h = result.height();
    for (const auto& [band, out_y] : {std::pair<const Image*, int>{&ref.top, 0}, {&ref.bottom, h - ref.band}})
        for (int y = 0; y < ref.band; ++y)
            for (std::size_t i = 0; i < n; ++i) {
                const double d = std::abs(sample_at(band->view(), y, i) - sample_at(result, out_y + y, i));
                if (!(d <= r.max_diff)) r.max_diff = std::isnan(d) ? INFINITY : std::max(r.max_diff, d);
            }
    r.ok = r.max_diff <= r.tolerance;
    return r;
}

inline CheckResult check_bands(const OpProgram& program, const ExecutionPlan& plan, const Image& input,
                               ConstImageView result, Backend reference, int band = 32) {
    return compare_bands(reference_bands(program, input, result.type(), reference, band), program, plan, result);
}

} // namespace apron::bench
