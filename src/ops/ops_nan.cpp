// Missing samples in linear filters (SPEC.md "NaN and nodata in linear filters"): the parameters nan,
// preserve_nan and nodata, added to every operation of the linear, edge and preset categories in one place
// (the registry calls add_missing_sample_parameters), and the rewriting of an operation's program they ask
// for.
// The handling is program steps, pointwise combine forms (apron/ops.hpp's CombineForm) around the op's own
// linear steps, so every backend, the band engine and batches run it as they run any program, and the
// planner picks direct, separable or FFT for each linear step as usual.
//
// gaussian:sigma=2,nan=ignore,preserve_nan=1 on an image I becomes
//   0  F = fill(I, 0)                      missing samples (NaN, nodata) read as 0
//   1  S = gaussian(F)                     the op's linear step, its delta moved to the ratio
//   2  V = valid(I)                        1 where I is not missing, 0 where it is
//   3  W = gaussian(V), normalize=sum      the fraction of the weights on valid samples
//   4  R = ratio(S, W): S / W + delta where W > min_valid_fraction * sum|w| / |sum w|, else missing
//   5  mark(R, I)                          missing where R is NaN or I is missing (preserve_nan)
#include <cmath>
#include <cstdio>
#include <optional>
#include <variant>
#include <string>
#include <vector>

#include "core/number_text.hpp"
#include "ops/registry_parts.hpp"

namespace apron {
namespace {

// nan=ignore: an output is missing where the weights on its valid samples are at most this fraction of the
// mask's sum |w| (taken with the sign of the mask's sum). An output whose window holds no valid sample has
// 0 there, which the FFT path computes to within its rounding (SPEC.md: 1e-5 of sum |w| for the 0/1 validity
// image, in practice below 1e-6): the margin keeps such outputs missing on every path.
constexpr double min_valid_fraction = 1e-4;
// nan=ignore divides by the valid weights' sum, relative to the mask's: where |sum w| is a small part of
// sum |w| the rounding of every sum is magnified by sum |w| / |sum w|, and the threshold above (relative to
// sum |w|) would reach the all-valid windows. Masks below this fraction are refused like those that sum to 0
// (below zero_sum_fraction: float rounding of weights meant to cancel, 0.1 + 0.2 - 0.3).
constexpr double min_sum_fraction = 1e-3;
constexpr double zero_sum_fraction = 1e-9;

enum class NanMode { propagate, ignore, fill };

struct NanOptions {
    NanMode mode = NanMode::propagate;
    double fill = 0;
    bool preserve = false;
    std::optional<double> nodata;
};

NanOptions read_options(const OpArgs& a) {
    NanOptions o;
    const std::string text = a.text("nan");
    if (text == "ignore") {
        o.mode = NanMode::ignore;
    } else if (text.rfind("fill:", 0) == 0) {
        o.mode = NanMode::fill;
        const std::string value = text.substr(5);
        const auto v = parse_decimal(value);
        if (!v) a.fail("nan", "fill value: " + decimal_problem(value));
        if (std::fabs(*v) > max_float32_parameter)
            a.fail("nan", "fill value " + value + " is out of range (must be -3.4e+38..3.4e+38, the float32 range)");
        o.fill = *v;
    } else if (text != "propagate") {
        a.fail("nan", "'" + text + "' is not propagate, ignore or fill:V (V a number)");
    }
    o.preserve = a.text("preserve_nan") == "1";
    if (a.has("nodata")) o.nodata = a.number("nodata");
    return o;
}

// Builds the rewritten program step by step, mapping the old steps' results to the new ones'.
class Rewriter {
public:
    Rewriter(const NanOptions& o, const OpArgs& a) : o_(o), args_(a) {}

    OpProgram run(const OpProgram& old) {
        std::vector<int> result_of;  // old step -> new step holding its result
        auto operand = [&](int k) { return k < 0 ? k : result_of.at(std::size_t(k)); };
        for (std::size_t k = 0; k < old.steps.size(); ++k) {
            const Step& step = old.steps[k];
            if (std::holds_alternative<LinearStep>(step.action)) {
                // A chain of linear steps, each read by the next alone (a volume's plane pass and its pass
                // along z), is one linear filter: its missing samples are handled once, over the whole chain.
                std::vector<Step> chain = {step};
                while (k + 1 < old.steps.size() && std::holds_alternative<LinearStep>(old.steps[k + 1].action) &&
                       old.steps[k + 1].input == int(k) && read_once(old, k)) {
                    chain.push_back(old.steps[++k]);
                    result_of.push_back(-3);  // inside the chain: read by its next step alone
                }
                result_of.push_back(add_linear(chain, operand(step.input)));
                continue;
            }
            Step s = step;
            s.input = step.input == op_input ? input_for_pointwise() : operand(step.input);
            if (step.second != no_operand) s.second = step.second == op_input ? input_for_pointwise() : operand(step.second);
            result_of.push_back(push(std::move(s)));
        }
        // The last result: where it may hold missing outputs as NaN in f32 that an integer output must show
        // as nodata (a sum that propagated NaN, an affine combine of the input), or where preserve_nan asks for
        // the input's missing samples, a mark writes them as the output's missing value.
        const auto* tail = std::get_if<CombineStep>(&program_.steps.back().action);
        const bool ends_in_ratio = tail && tail->form == CombineForm::ratio;
        if (o_.preserve || (o_.nodata && o_.mode != NanMode::fill && !ends_in_ratio))
            push(Step{pointwise(CombineForm::mark, 1, o_.preserve ? 1 : 0, 0), last(), o_.preserve ? op_input : no_operand});
        return std::move(program_);
    }

private:
    CombineStep pointwise(CombineForm form, double a, double b, double c) const {
        CombineStep s{a, b, c, form};
        if (o_.nodata) s.has_nodata = true, s.nodata = *o_.nodata;
        return s;
    }
    // The same with the nodata test only where `source` is the operation's input (intermediates mark missing
    // samples as NaN); the value stays for the output.
    CombineStep reading(CombineForm form, double c, int source) const {
        CombineStep s = pointwise(form, 1, 0, c);
        if (source != op_input) s.has_nodata = false;
        return s;
    }

    int push(Step s) {
        program_.steps.push_back(std::move(s));
        return last();
    }
    int last() const { return int(program_.steps.size()) - 1; }

    // The input as pointwise steps read it: with nan=fill the filled image; otherwise the input with its
    // nodata samples turned into NaN (f32), so that arithmetic on them gives missing outputs.
    int input_for_pointwise() {
        if (o_.mode == NanMode::fill) return filled(op_input);
        if (!o_.nodata) return op_input;
        if (as_nan_ < 0) as_nan_ = push(Step{pointwise(CombineForm::mark, 1, 1, 0), op_input, op_input});
        return as_nan_;
    }

    // fill(source, value): one per source.
    int filled(int source) {
        if (source == op_input && filled_input_ >= 0) return filled_input_;
        const double value = o_.mode == NanMode::fill ? o_.fill : 0;
        const int f = push(Step{reading(CombineForm::fill, value, source), source});
        if (source == op_input) filled_input_ = f;
        return f;
    }
    int validity(int source) {
        if (source == op_input && valid_input_ >= 0) return valid_input_;
        const int v = push(Step{reading(CombineForm::valid, 0, source), source});
        if (source == op_input) valid_input_ = v;
        return v;
    }

    // Whether step k's result is read by one later step at most.
    static bool read_once(const OpProgram& p, std::size_t k) {
        int readers = 0;
        for (const Step& s : p.steps) readers += (s.input == int(k)) + (s.second == int(k));
        return readers <= 1;
    }

    // The chain's steps in order from `source`, the last one's delta set to `delta` when given; returns the
    // last's index.
    int push_chain(const std::vector<Step>& chain, int source, std::optional<double> delta = std::nullopt) {
        int at = source;
        for (std::size_t j = 0; j < chain.size(); ++j) {
            Step s = chain[j];
            s.input = at;
            if (delta && j + 1 == chain.size()) std::get<LinearStep>(s.action).delta = *delta;
            at = push(std::move(s));
        }
        return at;
    }

    int add_linear(const std::vector<Step>& chain, int source) {
        switch (o_.mode) {
        case NanMode::propagate: return push_chain(chain, source == op_input ? input_for_pointwise() : source);
        case NanMode::fill: return push_chain(chain, filled(source));
        case NanMode::ignore: break;
        }
        // The chain's weights are the product of its masks' (a volume's passes): so are their sums.
        double sum = 1, abs_sum = 1;
        for (const Step& s : chain) {
            const Mask& m = std::get<LinearStep>(s.action).mask;
            sum *= m.sum(), abs_sum *= m.abs_sum();
        }
        const LinearStep& l = std::get<LinearStep>(chain.back().action);
        if (!(std::fabs(sum) >= min_sum_fraction * abs_sum)) {
            const std::string name = args_.op().substr(0, args_.op().find(':'));
            char near[96];
            std::snprintf(near, sizeof near, "'s sum to %.3g, under 1e-3 of the sum of their magnitudes, %.3g", sum, abs_sum);
            args_.fail("nan", "nan=ignore needs weights that do not sum to 0 (" + name +
                                  (std::fabs(sum) > zero_sum_fraction * abs_sum ? std::string(near) : "'s sum to 0") +
                                  "); use nan=fill:V");
        }
        if (l.normalise == Normalise::book && sum < 0)
            args_.fail("nan", "nan=ignore with normalize=book needs weights with a positive sum (use normalize=sum or none)");
        const int weighted = push_chain(chain, filled(source), 0.0);
        std::vector<Step> weight_chain = chain;
        for (Step& s : weight_chain) {
            const LinearStep& data = std::get<LinearStep>(s.action);
            LinearStep weights;
            weights.mask = data.mask;
            weights.border = data.border;
            weights.border_value = 1;  // the constant border is a valid sample
            weights.normalise = Normalise::sum;
            s.action = weights;
        }
        const int valid_weight = push_chain(weight_chain, validity(source));
        CombineStep ratio = pointwise(CombineForm::ratio, 1, min_valid_fraction * abs_sum / std::fabs(sum), l.delta);
        return push(Step{ratio, weighted, valid_weight});
    }

    const NanOptions& o_;
    const OpArgs& args_;
    OpProgram program_;
    int as_nan_ = -1, filled_input_ = -1, valid_input_ = -1;
};

} // namespace

void add_missing_sample_parameters(OpInfo& op) {
    op.params.push_back({"nan", ParamKind::text, "propagate",
                         "missing samples (f32 NaN, and nodata): propagate (as any number), ignore (normalised "
                         "convolution: the sum over the valid samples times sum w over their weights; weights must "
                         "not sum to 0) or fill:V (missing samples read as V)"});
    op.params.push_back({"preserve_nan", ParamKind::choice, "0", "1: an output whose own input sample is missing is missing",
                         0, 0, {"0", "1"}});
    op.params.push_back({"nodata", ParamKind::number, "",
                         "samples equal to V are missing too (u8, u16, f32); missing outputs are V in a u8 or u16 output, "
                         "NaN in f32 (within the float32 range; an integer of the type on integer images)",
                         -max_float32_parameter, max_float32_parameter, {}, true});
    op.build = [build = std::move(op.build)](const OpArgs& a) {
        OpProgram program = build(a);
        const NanOptions o = read_options(a);
        if (o.mode == NanMode::propagate && !o.preserve && !o.nodata) return program;  // today's program, bit for bit
        OpProgram rewritten = Rewriter(o, a).run(program);
        rewritten.spec = program.spec;
        return rewritten;
    };
}

} // namespace apron
