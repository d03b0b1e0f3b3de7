// The linear step kind: correlation and convolution with a mask. Planning decides what is exact, what is
// separable, low-rank or goes through the FFT, and which accumulator is safe; backends never decide.
#include "plan/kinds/linear_kind.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "plan/backend_caps.hpp"
#include "plan/linear_paths.hpp"
#include "plan/step_kind.hpp"

namespace apron {
namespace {

constexpr double two_pow_24 = 16777216.0;
constexpr double two_pow_53 = 9007199254740992.0;

// The value `book` normalisation adds when the weights sum to zero (mid) or below zero (max).
double book_mid(PixelType t) { return t == PixelType::u8 ? 128.0 : t == PixelType::u16 ? 32768.0 : 0.5; }

// Separable passes cost W + H taps per pixel instead of W * H; worth it once both sides exceed 1.
bool worth_separating(const Mask& m) { return m.width > 1 && m.height > 1; }

void plan_exact(LinearPlan& p, IntegerMask im) {
    const LinearStep& s = p.step;
    std::int64_t weight_sum = 0;
    for (auto w : im.weights) weight_sum += w;
    // A negative divisor is folded into the weights so the finish always divides by a positive number.
    auto negate = [&] {
        for (auto& w : im.weights) w = -w;
        weight_sum = -weight_sum;
    };
    LinearFinish& f = p.finish;
    f.offset = 0;
    f.denominator = im.divisor;
    const bool divide_by_sum = (s.normalise == Normalise::sum && weight_sum != 0) ||
                               (s.normalise == Normalise::book && weight_sum > 0);
    if (divide_by_sum) {
        if (weight_sum < 0) negate();
        f.denominator = weight_sum;  // (isum / D) / (S_int / D)
    } else if (s.normalise == Normalise::book) {
        const double add = weight_sum == 0 ? book_mid(p.in) : type_max(p.in);
        f.offset = std::int64_t(add) * im.divisor;
    }
    f.scale = s.scale;
    f.delta = s.delta;
    const bool integral_delta = s.delta == std::floor(s.delta) && std::fabs(s.delta) < 2147483648.0;
    // A scale of 2^-e (NPP's divisor, box sums) is a larger denominator: n / (D 2^e) rounded once in
    // integers, the correctly rounded value the double form approximates.
    int e = 0;
    if (integral_delta && s.scale > 0 && s.scale < 1 && std::frexp(s.scale, &e) == 0.5 && 1 - e <= 20 &&
        double(f.denominator) * std::ldexp(1.0, 1 - e) < 0x1p40) {
        f.denominator <<= (1 - e);
        f.scale = 1;
    }
    f.inverse_denominator = 1.0 / double(f.denominator);
    f.integer_rounding = f.scale == 1.0 && integral_delta;
    f.delta_int = f.integer_rounding ? std::int64_t(s.delta) : 0;
    // Rounding half to even does not commute with adding an odd delta (2.5 + 1 rounds to 4, rint(2.5) + 1
    // is 3): an odd delta gives one unit of itself to the dividend, n/D + 1 = (n + D)/D, and the even rest
    // is added after rounding.
    if ((f.delta_int & 1) && is_integer(p.out)) {
        f.offset += f.denominator;
        f.delta_int -= 1;
    }
    const double bound = double(im.abs_sum) * type_max(p.in);
    p.accumulator = bound < two_pow_24 ? Accumulator::f32 : Accumulator::f64;
    f.fits_int32 = f.integer_rounding && p.accumulator == Accumulator::f32 && std::llabs(f.offset) < (1ll << 30) &&
                   f.denominator < (1ll << 30) && std::llabs(f.delta_int) < (1ll << 30);
    f.power_of_two = f.fits_int32 && (f.denominator & (f.denominator - 1)) == 0 &&
                     bound + double(std::llabs(f.offset)) < two_pow_24;
    if (worth_separating(s.mask)) {
        p.integer_separable = integer_separable_form(im, s.mask.width, s.mask.height);
        if (p.integer_separable) p.algorithm = LinearAlgorithm::separable;
    }
    p.integer_mask = std::move(im);
}

// A float plan's mask, scaled by 2^-e so that its largest |weight| lies in [0.5, 1): exact (a power of
// two), and from then on no sum, sum of weights, spectrum, separable factor or SVD overflows or sinks into
// subnormals, whatever the user's weights (1e38, 1e308, 1e-320). The finish multiplies by 2^e again.
// Returns e (0 for an all-zero mask).
int scale_to_unit(Mask& m) {
    double largest = 0;
    for (double w : m.weights) largest = std::max(largest, std::fabs(w));
    if (largest == 0) return 0;
    int e = 0;
    std::frexp(largest, &e);
    for (double& w : m.weights) w = std::ldexp(w, -e);
    return e;
}

// A finite double as mantissa x 2^exponent (frexp), so that products and quotients of such values never
// overflow or underflow before the one ldexp that ends them.
struct Split {
    double mantissa;
    long exponent;
    double value() const { return std::ldexp(mantissa, int(std::clamp(exponent, -4000l, 4000l))); }
};
Split split(double v) {
    int e = 0;
    const double m = std::frexp(v, &e);
    return {m, e};
}

// A linear plan, and where its finish cannot be the one float multiply-add every kernel fuses into its
// stores (value = sum * mul + add: a multiplier past float's range, such as 2^665 for weights of 1e200
// without normalisation, or below it, or an offset past it), the combine step that applies it in double
// to the plan's raw sums (f32, of the unit-sized mask: far from float's limits).
struct PlannedLinear {
    LinearPlan plan;
    std::optional<CombineStep> finish_after;
};

void plan_float(PlannedLinear& planned, MaskMemo& memo) {
    LinearPlan& p = planned.plan;
    const LinearStep& s = p.step;
    const auto& [scaled, e] = memo.get(memo.scaled, p.step.mask, [&] {
        Mask m = p.step.mask;
        const int exponent = scale_to_unit(m);
        return std::pair{m.weights, exponent};
    });
    p.step.mask.weights = scaled;
    const double S = s.mask.sum();  // of the scaled weights: the user's sum is S 2^e
    const Split scale = split(s.scale);
    Split mul{scale.mantissa, scale.exponent + e};  // sum 2^e x scale
    double add = s.delta;
    if ((s.normalise == Normalise::sum && S != 0) || (s.normalise == Normalise::book && S > 0)) {
        const Split sum = split(S);  // (sum 2^e) / (S 2^e) x scale: the 2^e cancels
        mul = {scale.mantissa / sum.mantissa, scale.exponent - sum.exponent};
    } else if (s.normalise == Normalise::book) {
        add = s.scale * (S == 0 ? book_mid(p.in) : type_max(p.in)) + s.delta;
    }
    // The multiplier as one double: 0 below double's range, and the largest double above it (a nonzero
    // f32 sum, at least 2^-149, times that still lies past every output type, and 0 times it is 0).
    double m = mul.value();
    if (std::isinf(m)) m = std::copysign(DBL_MAX, m);
    LinearFinish& f = p.finish;
    f.scale = s.scale;
    f.delta = s.delta;
    if (m == 0 || (std::fabs(m) >= FLT_MIN && std::fabs(m) <= FLT_MAX && std::fabs(add) <= FLT_MAX)) {
        f.mul = m;
        f.add = add;
    } else {
        f.mul = 1, f.add = 0;
        planned.finish_after = CombineStep{m, 0, add};
        p.out = PixelType::f32;
    }
    p.accumulator = Accumulator::f32;
    if (worth_separating(s.mask)) {
        p.separable = memo.get(memo.separable, s.mask, [&] { return separable_form(s.mask, 1e-9); });
        if (p.separable) p.algorithm = LinearAlgorithm::separable;
    }
}

PlannedLinear plan_linear(const LinearStep& step, PixelType in, PixelType out, MaskMemo& memo) {
    PlannedLinear planned;
    LinearPlan& p = planned.plan;
    p.step = step;
    p.in = in;
    p.out = out;
    std::optional<IntegerMask> im;
    if (is_integer(in)) im = memo.get(memo.integer, step.mask, [&] { return integer_form(step.mask); });
    p.exact = im && double(im->abs_sum) * type_max(in) < two_pow_53;
    if (p.exact)
        plan_exact(p, std::move(*im));
    else
        plan_float(planned, memo);
    return planned;
}

const char* algorithm_name(LinearAlgorithm a) {
    switch (a) {
    case LinearAlgorithm::separable: return "separable";
    case LinearAlgorithm::fft: return "fft";
    case LinearAlgorithm::tensor: return "tensor";
    default: return "direct";
    }
}

// The outer product column x row as a mask with `like`'s size and anchor (what a low-rank term computes:
// executors without a separable kernel for it run this mask directly, to the same sum).
Mask term_mask(const SeparableMask& t, const Mask& like) {
    std::vector<double> w(std::size_t(like.width) * like.height);
    for (int j = 0; j < like.height; ++j)
        for (int i = 0; i < like.width; ++i) w[std::size_t(j) * like.width + i] = t.column[std::size_t(j)] * t.row[std::size_t(i)];
    Mask m(like.width, like.height, std::move(w));
    m.anchor_x = like.anchor_x;
    m.anchor_y = like.anchor_y;
    return m;
}

// A low-rank step as plan steps: r float separable passes to f32 (raw sums of the plan's unit-sized mask,
// the step's border), added in turn, the last addition applying the step's finish (sum * mul + add; the
// planner keeps mul within float's range, so a*A + a*B cannot overflow) and converting to its output type.
// Returns the index of the last step.
int expand_low_rank(const LinearPlan& whole, const LowRankMask& lr, PlanContext& context) {
    const int r = int(lr.terms.size());
    int sum = -1;
    for (int t = 0; t < r; ++t) {
        LinearPlan term;
        term.step = whole.step;
        term.step.mask = term_mask(lr.terms[std::size_t(t)], whole.step.mask);
        term.step.normalise = Normalise::none;
        term.step.scale = 1;
        term.step.delta = 0;
        term.in = whole.in;
        term.out = PixelType::f32;
        term.algorithm = LinearAlgorithm::separable;
        term.separable = lr.terms[std::size_t(t)];
        term.accumulator = Accumulator::f32;
        StepPlan sp;
        sp.what = std::move(term);
        sp.input = context.input;
        const int term_index =
            context.add(std::move(sp), PixelType::f32, " (low-rank term " + std::to_string(t + 1) + "/" + std::to_string(r) + ")");
        if (t == 0) {
            sum = term_index;
            continue;
        }
        const bool last = t + 1 == r;
        const double a = last ? whole.finish.mul : 1, c = last ? whole.finish.add : 0;
        const PixelType out = last ? whole.out : PixelType::f32;
        sum = context.add_combine(CombineStep{a, a, c}, sum, term_index, out, " (low-rank sum)");
    }
    return sum;
}


} // namespace

int LinearStepKind::plan(const LinearStep& step, PlanContext& context) {
    const PixelType in = context.type_of(context.input);
    check_border_value(context.spec, step.border, step.border_value, in);
    const PixelType out = context.last ? context.out_type : PixelType::f32;
    PlannedLinear planned = plan_linear(step, in, out, context.memo);
    // A pass along z is a column of taps over a row per plane: direct (an FFT's tiles or a separable split of
    // one column have nothing to gain), whatever --algo forces on the planes' steps.
    const Algorithm algorithm = context.axes == Axes::depth ? Algorithm::direct : context.algorithm;
    LinearChoice choice = choose_linear_path(std::move(planned.plan), context.step_image, context.caps, algorithm,
                                             context.table, context.spec);
    int result;
    if (choice.low_rank) {
        const std::size_t first = context.steps.size();
        result = expand_low_rank(choice.plan, *choice.low_rank, context);
        context.steps[first].estimates = std::move(choice.estimates);
    } else {
        const PixelType linear_out = choice.plan.out;
        StepPlan sp;
        sp.what = std::move(choice.plan);
        sp.input = context.input;
        sp.estimates = std::move(choice.estimates);
        result = context.add(std::move(sp), linear_out);
    }
    if (planned.finish_after)
        result = context.add_combine(*planned.finish_after, result, no_operand, out, " (finish beyond float's range)");
    return result;
}

int LinearStepKind::operands(const LinearStep&) { return 1; }

void LinearStepKind::tables(LinearStep& step, const MaskVisitor& visit) { visit(step.mask); }

std::string LinearStepKind::parameters(const LinearStep& a) {
    return "linear " + mask_text(a.mask) + " border " + to_string(a.border) + " " + exact_number(a.border_value) +
           " normalise " + to_string(a.normalise) + " scale " + exact_number(a.scale) + " delta " + exact_number(a.delta);
}

// The reference backend's taps a second on one core, measured (2026-11, a shared 2-core x86 machine, u8/f32,
// 1 and 3 channels): masks up to 127x127 about 2e8, masks of 1025x1025 to 4097x4097 about 1.2e8 (their rows
// no longer stay in cache); taken rounded down, so a warning errs long, never short.
StepWork LinearStepKind::work(const LinearStep& step) {
    const double taps = double(step.mask.width) * step.mask.height;
    return {taps, taps > 128.0 * 128.0 ? 1e8 : 1.8e8};
}

// sum |w| |scale|, over |sum w| where the step normalises by the sum.
double LinearStepKind::gain(const LinearStep& step) {
    double g = step.mask.abs_sum() * std::abs(step.scale);
    const double sum = step.mask.sum();
    if (step.normalise == Normalise::sum && sum != 0) g /= std::abs(sum);
    return std::max(g, 1.0);
}

// Exact plans (integer sums) give every backend's bits; float plans agree within SPEC.md's tolerance.
bool LinearStepKind::bit_exact(const LinearPlan& l) { return l.exact; }

std::string LinearStepKind::label(const LinearPlan& l) {
    std::ostringstream o;
    o << "linear " << mask_size(l.step.mask) << ' ' << algorithm_name(l.algorithm) << ' '
      << (l.exact ? "exact " : "float ") << (l.accumulator == Accumulator::f32 ? "f32-acc" : "f64-acc") << ' '
      << to_string(l.in) << "->" << to_string(l.out) << " border=" << to_string(l.step.border);
    return o.str();
}

// An FFT step's outputs read their whole tile of the whole image's grid (plan/plan.hpp's FftGrid), not only
// their window: a tile's rows lie within tile_rows - 1 of each of its outputs, and where a tile crosses the
// image's edge its border rule reads rows within tile_rows of that edge, which a band keeping an output that
// close holds when its halo is tile_rows.
Reach LinearStepKind::reach(const LinearPlan& l) {
    const Mask& m = l.step.mask;
    const Reach mask{m.anchor_y, m.height - 1 - m.anchor_y};
    if (l.algorithm != LinearAlgorithm::fft) return mask;
    return {std::max(mask.top, l.fft.tile_rows), std::max(mask.bottom, l.fft.tile_rows)};
}

bool LinearStepKind::wraps(const LinearPlan& l) { return l.step.border == BorderMode::wrap; }

void LinearStepKind::tables(const LinearPlan& l, const TableVisitor& visit) {
    visit(l.step.mask.weights.data(), l.step.mask.weights.size() * sizeof(double));
    visit(l.integer_mask.weights.data(), l.integer_mask.weights.size() * sizeof(std::int64_t));
}

// Executors build tap tables from a direct step's weights while it runs (tap offsets and weights in the
// accumulator's type, about 32 bytes a tap on the CPU).
std::uint64_t LinearStepKind::executor_table_bytes(const LinearPlan& l) {
    const bool taps = l.algorithm == LinearAlgorithm::direct || l.algorithm == LinearAlgorithm::tensor;
    return taps ? std::uint64_t(l.step.mask.weights.size()) * 32 : 0;
}

// A 1024^2 complex tile and its gathers per thread on the CPU's FFT path.
std::uint64_t LinearStepKind::host_scratch_per_thread(const LinearPlan& l, const ImageShape&) {
    return l.algorithm == LinearAlgorithm::fft ? std::uint64_t(24) << 20 : 0;
}

bool LinearStepKind::repeats(const LinearPlan&, const LinearPlan&) { return false; }

// An FFT step runs the whole image's tile grid: a band tells it where its rows lie (under `wrap`, rows
// continue modulo the image's height).
std::optional<LinearPlan> LinearStepKind::in_band(const LinearPlan& l, int first_row, int image_height) {
    if (l.algorithm != LinearAlgorithm::fft || l.fft.image_height != image_height) return std::nullopt;
    LinearPlan placed = l;
    placed.fft.band = true;
    placed.fft.first_row =
        l.step.border == BorderMode::wrap ? first_row : ((first_row % image_height) + image_height) % image_height;
    return placed;
}

const KernelChoice& LinearStepKind::choose_kernel(LinearPlan& l, const BackendCaps& caps, const ImageShape& shape, std::string&) {
    if (l.algorithm == LinearAlgorithm::fft) l.fft = FftGrid{shape.height, caps.fft_tile_rows(l, shape)};
    return l.kernel = caps.linear_kernel(l, shape);
}

void LinearStepKind::run(Executor& ex, const LinearPlan& l, ConstImageView in, ConstImageView, ImageView out) { ex.linear(l, in, out); }

bool LinearStepKind::run_overlapped(Executor& ex, const LinearPlan& l, ConstImageView host_in, ImageView host_out) {
    return ex.linear_overlapped(l, host_in, host_out);
}

} // namespace apron
