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

// Whether every linear step of the plan is exact, and the program's sum |m| gain (the product over its
// linear steps of sum |w| |scale|, over |sum w| where the step normalises by the sum; at least 1 each).
inline bool plan_exact(const ExecutionPlan& plan) {
    for (const OperationPlan& op : plan.operations)
        for (const StepPlan& s : op.steps)
            if (auto* l = std::get_if<LinearPlan>(&s.what); l && !l->exact) return false;
    return true;
}

inline double program_gain(const OpProgram& program) {
    double gain = 1;
    for (const Step& s : program.steps)
        if (auto* l = std::get_if<LinearStep>(&s.action)) {
            double g = l->mask.abs_sum() * std::abs(l->scale);
            const double sum = l->mask.sum();
            if (l->normalise == Normalise::sum && sum != 0) g /= std::abs(sum);
            gain *= std::max(g, 1.0);
        }
    return gain;
}

// Rows of every step's mask or element added up: how far a band's input must reach beyond it.
inline int reach_rows(const OpProgram& program) {
    int rows = 2;
    for (const Step& s : program.steps) {
        if (auto* l = std::get_if<LinearStep>(&s.action)) rows += l->mask.height;
        else if (auto* m = std::get_if<MorphStep>(&s.action)) rows += m->element.height;
    }
    return rows;
}

// `result` (host, the whole image) against `reference` recomputing the bands of `band` rows.
inline CheckResult check_bands(const OpProgram& program, const ExecutionPlan& plan, const Image& input,
                               ConstImageView result, Backend reference, int band = 32) {
    const bool exact = plan_exact(plan);
    const double gain = program_gain(program);
    const PixelType t = result.type();
    Pipeline p;
    p.add(program);
    const int h = input.height(), reach = reach_rows(program);
    band = std::min(band, h);
    struct Band { int in_y, in_rows, out_y, first; };  // input rows [in_y, +in_rows), compare from band row first
    const int top_rows = std::min(h, band + reach), bottom_y = std::max(0, h - band - reach);
    // max |in| over the rows the bands read (the tolerance's scale; f32 float plans only)
    double max_in = 0;
    if (t == PixelType::f32 && !exact)
        for (int y = 0; y < h; y = (y + 1 == top_rows && bottom_y > y) ? bottom_y : y + 1)
            for (std::size_t i = 0; i < std::size_t(input.width()) * input.channels(); ++i)
                max_in = std::max(max_in, std::abs(double(input.view().row<float>(y)[i])));
    CheckResult r;
    r.tolerance = exact ? 0 : t == PixelType::f32 ? 2e-5 * gain * std::max(max_in, 1.0) : 1;
    for (const Band& b : {Band{0, top_rows, 0, 0}, Band{bottom_y, h - bottom_y, h - band, (h - bottom_y) - band}}) {
        const ConstImageView in = input.view().roi(0, b.in_y, input.width(), b.in_rows);
        Image out(ImageShape{input.width(), b.in_rows, result.channels(), t});
        p.run(in, out.view(), RunOptions{.backend = reference});
        const std::size_t n = std::size_t(input.width()) * input.channels();
        for (int y = 0; y < band; ++y)
            for (std::size_t i = 0; i < n; ++i) {
                const double d = std::abs(sample_at(std::as_const(out).view(), b.first + y, i) - sample_at(result, b.out_y + y, i));
                if (!(d <= r.max_diff)) r.max_diff = std::isnan(d) ? INFINITY : std::max(r.max_diff, d);
            }
    }
    r.ok = r.max_diff <= r.tolerance;
    return r;
}

} // namespace apron::bench
