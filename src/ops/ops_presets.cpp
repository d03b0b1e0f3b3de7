// The five filters of the xFilters tool as named presets, so its users get the same weights by name.
#include "ops/registry_parts.hpp"

namespace apron {
namespace {
// The smallest divisor alpha of xf-lowpass and xf-gaussian: a weight 1/alpha of a denormal alpha is inf.
constexpr double min_preset_divisor = 1e-30;
} // namespace

void add_preset_operations(std::vector<OpInfo>& ops) {
    auto with = [](std::vector<ParamSpec> first) {
        for (auto& q : linear_params(false)) first.push_back(q);
        return first;
    };
    ops.push_back({"xf-sharpen", "preset", "xFilters 'Sharpen' with strength alpha",
                   "3x3: off-centre -alpha/(9-9 alpha), centre (9-alpha)/(9-9 alpha); weights sum to 1.",
                   with({{"alpha", ParamKind::number, "0.8", "strength, 0..0.999999 (alpha = 1 would divide by 9 - 9 alpha = 0)", 0, 0.999999}}),
                   [](const OpArgs& a) {
                       const double al = a.number("alpha"), d = 9 - 9 * al, o = -al / d;
                       return linear_program(mask3x3({o, o, o, o, (9 - al) / d, o, o, o, o}), a);
                   },
                   {"xf-sharpen", "xf-sharpen:alpha=0.5"}});
    ops.push_back({"xf-highpass", "preset", "xFilters 'High-pass' (edge detection)",
                   "3x3: [-1 -1 -1; -1 8 -1; -1 -1 -1].", linear_params(false),
                   [](const OpArgs& a) { return linear_program(mask3x3({-1, -1, -1, -1, 8, -1, -1, -1, -1}), a); },
                   {"xf-highpass"}});
    ops.push_back({"xf-lowpass", "preset", "xFilters 'Low-pass' (mean) with divisor alpha",
                   "3x3: every weight 1/alpha (alpha=9: the 3x3 mean).",
                   with({{"alpha", ParamKind::number, "9", "divisor, 1e-30..1e12 (the weights 1/alpha stay well inside the float32 range)",
                          min_preset_divisor, 1e12}}),
                   [](const OpArgs& a) {
                       const double w = 1 / a.number("alpha");
                       return linear_program(mask3x3({w, w, w, w, w, w, w, w, w}), a);
                   },
                   {"xf-lowpass", "xf-lowpass:alpha=10"}});
    ops.push_back({"xf-gaussian", "preset", "xFilters 'Gaussian' 3x3 with divisor alpha",
                   "3x3: [1 2 1; 2 4 2; 1 2 1] / alpha (alpha=16 sums to 1). xFilters' own table reads "
                   "[1 2 1; 2 3 4; 1 2 1], an evident typo; apron uses the binomial weights.",
                   with({{"alpha", ParamKind::number, "16", "divisor, 1e-30..1e12 (the weights 4/alpha stay well inside the float32 range)",
                          min_preset_divisor, 1e12}}),
                   [](const OpArgs& a) {
                       const double d = a.number("alpha");
                       return linear_program(mask3x3({1 / d, 2 / d, 1 / d, 2 / d, 4 / d, 2 / d, 1 / d, 2 / d, 1 / d}), a);
                   },
                   {"xf-gaussian"}});
    ops.push_back({"xf-dgaussian", "preset", "xFilters 'Derivative of Gaussian' (edge detection)",
                   "3x3: [-2 1 -2; 1 4 1; -2 1 -2].", linear_params(false),
                   [](const OpArgs& a) { return linear_program(mask3x3({-2, 1, -2, 1, 4, 1, -2, 1, -2}), a); },
                   {"xf-dgaussian"}});
}

} // namespace apron
