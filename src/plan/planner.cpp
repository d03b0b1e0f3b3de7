// The planner: for each step, the algorithm and the constants a backend needs. This is where apron
// decides what is exact, what is separable or goes through the FFT, and which accumulator is safe;
// backends never decide.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string_view>
#include <tuple>

#include "apron/errors.hpp"
#include "plan/backend_caps.hpp"
#include "plan/cost_model.hpp"
#include "plan/linear_paths.hpp"
#include "plan/morph_decompose.hpp"
#include "plan/plan.hpp"

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

// What the planner derives from a mask's weights, worked out once per distinct table of a plan: the steps of
// a pipeline share their tables (dilate:iterations=1000, ten box:width=4097), and each derived table is
// shared the same way, so neither planning time nor memory grows with the number of steps. Keyed by the
// table's storage and shape, valid while the pipeline being planned holds its masks.
class MaskMemo {
public:
    template <class F>
    auto& get(auto& cache, const Mask& m, F&& make) {
        const Key key{m.weights.data(), m.width, m.height};
        auto it = cache.find(key);
        if (it == cache.end()) it = cache.emplace(key, make()).first;
        return it->second;
    }
    struct Key {
        const void* storage;
        int width, height;
        bool operator<(const Key& o) const { return std::tie(storage, width, height) < std::tie(o.storage, o.width, o.height); }
    };
    std::map<Key, std::optional<IntegerMask>> integer;
    std::map<Key, std::pair<SharedValues<double>, int>> scaled;  // the unit-sized weights and their exponent
    std::map<Key, std::optional<SeparableMask>> separable;
    std::map<Key, bool> full;
};

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

MorphPlan plan_morph(const MorphStep& step, PixelType type, MaskMemo& memo) {
    MorphPlan p;
    p.step = step;
    p.type = type;
    const bool full = memo.get(memo.full, step.element, [&] {
        return std::all_of(step.element.weights.begin(), step.element.weights.end(), [](double w) { return w != 0; });
    });
    decompose_element(p, full);  // rectangle, chords or direct (plan/morph_decompose.cpp: the cost model)
    return p;
}

// The constant border reads as a pixel of the image, so its value must be one the input type can hold
// (an integer sum stays an integer sum; SciPy's cval would be a float on integer images).
void check_border_value(const std::string& spec, std::optional<BorderMode> border, double value, PixelType in) {
    if (border != BorderMode::constant || !is_integer(in)) return;
    if (value != std::floor(value) || value < 0 || value > type_max(in)) {
        char v[32];
        std::snprintf(v, sizeof v, "%g", value);
        fail("--op " + spec, std::string("value: ") + v + " cannot be stored in " + to_string(in) +
                                 " pixels (the constant border reads as a pixel: use an integer 0.." +
                                 std::to_string(int(type_max(in))) + ")");
    }
}

std::string mask_size(const Mask& m) { return std::to_string(m.width) + "x" + std::to_string(m.height); }

const char* algorithm_name(LinearAlgorithm a) {
    switch (a) {
    case LinearAlgorithm::separable: return "separable";
    case LinearAlgorithm::fft: return "fft";
    case LinearAlgorithm::tensor: return "tensor";
    default: return "direct";
    }
}

// "chords(N,L)": N chords of L distinct lengths.
std::string morph_algorithm_name(const MorphPlan& m) {
    if (m.algorithm == MorphAlgorithm::separable_rect) return "separable-rect";
    if (m.algorithm != MorphAlgorithm::chords) return "direct";
    std::vector<int> lengths;
    for (const MorphChord& c : m.chords) lengths.push_back(c.length);
    std::sort(lengths.begin(), lengths.end());
    const auto distinct = std::unique(lengths.begin(), lengths.end()) - lengths.begin();
    return "chords(" + std::to_string(m.chords.size()) + "," + std::to_string(distinct) + ")";
}

std::string label_of(const StepPlan& s) {
    std::ostringstream o;
    if (auto* l = std::get_if<LinearPlan>(&s.what)) {
        o << "linear " << mask_size(l->step.mask) << ' '
          << algorithm_name(l->algorithm) << ' '
          << (l->exact ? "exact " : "float ") << (l->accumulator == Accumulator::f32 ? "f32-acc" : "f64-acc") << ' '
          << to_string(l->in) << "->" << to_string(l->out) << " border=" << to_string(l->step.border);
    } else if (auto* m = std::get_if<MorphPlan>(&s.what)) {
        o << (m->step.kind == MorphKind::dilate ? "dilate " : "erode ") << mask_size(m->step.element) << ' '
          << morph_algorithm_name(*m) << ' ' << to_string(m->type)
          << " border=" << (m->step.border ? to_string(*m->step.border) : "ignore");
    } else {
        const auto& c = std::get<CombinePlan>(s.what);
        o << "combine " << c.step.a << "*A + " << c.step.b << "*B + " << c.step.c << ' ' << to_string(c.a_type) << ','
          << to_string(c.b_type) << "->" << to_string(c.out);
    }
    return o.str();
}

} // namespace

const char* to_string(Backend b) {
    switch (b) {
    case Backend::automatic: return "auto";
    case Backend::cpu: return "cpu";
    case Backend::reference: return "reference";
    case Backend::cuda: return "cuda";
    }
    return "?";
}

std::optional<Backend> parse_backend(std::string_view name) {
    if (name == "auto") return Backend::automatic;
    if (name == "cpu") return Backend::cpu;
    if (name == "reference") return Backend::reference;
    if (name == "cuda") return Backend::cuda;
    return std::nullopt;
}

namespace {

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

// Appends a combine step a*A + b*B + c of two f32 results; returns its index.
int add_combine(CombineStep c, int a, int b, PixelType out, const ImageShape& shape, const char* note,
                std::vector<StepPlan>& steps, std::vector<PixelType>& produced) {
    StepPlan add;
    add.what = CombinePlan{c, PixelType::f32, PixelType::f32, out};
    add.input = a;
    add.second = b;
    add.out_shape = shape;
    add.out_shape.type = out;
    add.label = label_of(add) + note;
    steps.push_back(std::move(add));
    produced.push_back(out);
    return int(steps.size()) - 1;
}

// A low-rank step as plan steps: r float separable passes to f32 (raw sums of the plan's unit-sized mask,
// the step's border), added in turn, the last addition applying the step's finish (sum * mul + add; the
// planner keeps mul within float's range, so a*A + a*B cannot overflow) and converting to its output type.
// Returns the index of the last step.
int expand_low_rank(const LinearPlan& whole, const LowRankMask& lr, int input, const ImageShape& shape,
                    std::vector<StepPlan>& steps, std::vector<PixelType>& produced) {
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
        sp.input = input;
        sp.out_shape = shape;
        sp.out_shape.type = PixelType::f32;
        sp.label = label_of(sp) + " (low-rank term " + std::to_string(t + 1) + "/" + std::to_string(r) + ")";
        steps.push_back(std::move(sp));
        produced.push_back(PixelType::f32);
        const int term_index = int(steps.size()) - 1;
        if (t == 0) {
            sum = term_index;
            continue;
        }
        const bool last = t + 1 == r;
        const double a = last ? whole.finish.mul : 1, c = last ? whole.finish.add : 0;
        const PixelType out = last ? whole.out : PixelType::f32;
        sum = add_combine(CombineStep{a, a, c}, sum, term_index, out, shape, " (low-rank sum)", steps, produced);
    }
    return sum;
}

// The kernel of every step, from the backend's capabilities, shown at the end of its label. A rectangle
// the backend's fast kernel does not take is planned direct first, so the label says what runs.
struct KernelChooser {
    const BackendCaps& caps;
    const ImageShape& shape;
    StepPlan& sp;
    KernelChoice& operator()(LinearPlan& l) const {
        if (l.algorithm == LinearAlgorithm::fft) l.fft = FftGrid{shape.height, caps.fft_tile_rows(l, shape)};
        return l.kernel = caps.linear_kernel(l, shape);
    }
    KernelChoice& operator()(MorphPlan& m) const {
        if (m.algorithm == MorphAlgorithm::separable_rect && !caps.morph_rect_supported(m, shape)) {
            m.algorithm = MorphAlgorithm::direct;
            sp.label = label_of(sp);
        }
        return m.kernel = caps.morph_kernel(m, shape);
    }
    KernelChoice& operator()(CombinePlan& c) const { return c.kernel = caps.combine_kernel(c, shape); }
};

void choose_kernels(std::vector<StepPlan>& steps, const ImageShape& shape, const BackendCaps& caps) {
    for (StepPlan& sp : steps) {
        const KernelChoice& kernel = std::visit(KernelChooser{caps, shape, sp}, sp.what);
        sp.label += " kernel=" + kernel.name();
    }
}

} // namespace

ExecutionPlan make_plan(const std::vector<OpProgram>& pipeline, const ImageShape& input, PixelType out_type,
                        const BackendCaps& caps, Algorithm algorithm) {
    validate_shape(input, "input image");
    const Backend backend = caps.backend();
    ExecutionPlan plan;
    plan.backend = backend;
    plan.input = input;
    plan.output = input;
    plan.output.type = out_type;
    const CostTable* table =
        backend == Backend::cuda || backend == Backend::cpu ? cost_table_for(backend, caps.cost_arch()) : nullptr;
    if (table) plan.cost_source = table->source + (table->device.empty() ? "" : " (" + table->device + ")");
    // APRON_FFT=0|1 (linear_paths.cpp) steers the planner itself; the rest are the backend's.
    const char* fft = std::getenv("APRON_FFT");
    plan.overrides = fft && *fft ? std::string("APRON_FFT=") + fft : "";
    if (const std::string b = caps.overrides(); !b.empty()) plan.overrides += (plan.overrides.empty() ? "" : " ") + b;
    PixelType op_in = input.type;
    MaskMemo memo;
    for (const OpProgram& op : pipeline) {
        OperationPlan oplan;
        oplan.spec = op.spec;
        std::vector<PixelType> produced;  // per plan step
        std::vector<int> index_of;        // program step -> the plan step holding its result
        auto type_of = [&](int index) { return index == op_input ? op_in : produced.at(std::size_t(index)); };
        auto plan_index = [&](int operand) { return operand < 0 ? operand : index_of.at(std::size_t(operand)); };
        for (std::size_t k = 0; k < op.steps.size(); ++k) {
            const Step& step = op.steps[k];
            auto valid = [&](int operand, bool optional) {
                return operand == op_input || (optional && operand == no_operand) || (operand >= 0 && operand < int(k));
            };
            const bool needs_second = std::holds_alternative<CombineStep>(step.action) && std::get<CombineStep>(step.action).b != 0;
            if (!valid(step.input, false) || !valid(step.second, !needs_second))
                fail(op.spec, "internal: a step reads an operand that does not exist yet");
            const bool last = k + 1 == op.steps.size();
            StepPlan sp;
            sp.input = plan_index(step.input);
            sp.second = plan_index(step.second);
            const PixelType in = type_of(sp.input);
            PixelType out;
            if (auto* l = std::get_if<LinearStep>(&step.action)) {
                check_border_value(op.spec, l->border, l->border_value, in);
                out = last ? out_type : PixelType::f32;
                PlannedLinear planned = plan_linear(*l, in, out, memo);
                LinearChoice choice = choose_linear_path(std::move(planned.plan), input, caps, algorithm, table, op.spec);
                int result;
                if (choice.low_rank) {
                    const std::size_t first = oplan.steps.size();
                    result = expand_low_rank(choice.plan, *choice.low_rank, sp.input, input, oplan.steps, produced);
                    oplan.steps[first].estimates = std::move(choice.estimates);
                } else {
                    const PixelType linear_out = choice.plan.out;
                    sp.what = std::move(choice.plan);
                    sp.estimates = std::move(choice.estimates);
                    sp.out_shape = input;
                    sp.out_shape.type = linear_out;
                    sp.label = label_of(sp);
                    produced.push_back(linear_out);
                    oplan.steps.push_back(std::move(sp));
                    result = int(oplan.steps.size()) - 1;
                }
                if (planned.finish_after)
                    result = add_combine(*planned.finish_after, result, no_operand, out, input, " (finish beyond float's range)",
                                         oplan.steps, produced);
                index_of.push_back(result);
                continue;
            } else if (auto* m = std::get_if<MorphStep>(&step.action)) {
                check_border_value(op.spec, m->border, m->border_value, in);
                out = in;  // a morphology result that is the op's last step is converted by a combine below
                sp.what = plan_morph(*m, in, memo);
            } else {
                const auto& c = std::get<CombineStep>(step.action);
                out = last ? out_type : PixelType::f32;
                sp.what = CombinePlan{c, in, sp.second != no_operand ? type_of(sp.second) : in, out};
            }
            sp.out_shape = input;
            sp.out_shape.type = out;
            sp.label = label_of(sp);
            produced.push_back(out);
            oplan.steps.push_back(std::move(sp));
            index_of.push_back(int(oplan.steps.size()) - 1);
        }
        // Morphology keeps its type; if the op must end in another type, convert once at the end.
        if (produced.empty() || produced.back() != out_type) {
            StepPlan conv;
            conv.input = produced.empty() ? op_input : int(produced.size()) - 1;
            conv.second = no_operand;
            conv.what = CombinePlan{CombineStep{1, 0, 0}, type_of(conv.input), type_of(conv.input), out_type};
            conv.out_shape = input;
            conv.out_shape.type = out_type;
            conv.label = "convert " + label_of(conv);
            oplan.steps.push_back(std::move(conv));
        }
        choose_kernels(oplan.steps, input, caps);
        plan.operations.push_back(std::move(oplan));
        op_in = out_type;
    }
    return plan;
}

std::string ExecutionPlan::describe(bool with_estimates) const {
    std::ostringstream o;
    o << "backend " << to_string(backend) << ", input " << input.width << 'x' << input.height << 'x'
      << input.channels << ' ' << to_string(input.type) << ", output " << to_string(output.type) << '\n';
    if (with_estimates)
        o << "cost model: " << (cost_source.empty() ? "none for this backend (fixed preferences)" : cost_source) << '\n';
    if (!overrides.empty()) o << "overrides: " << overrides << '\n';
    for (const auto& op : operations) {
        o << op.spec << '\n';
        for (std::size_t k = 0; k < op.steps.size(); ++k) {
            o << "  step " << k << ": " << op.steps[k].label << '\n';
            if (!with_estimates) continue;
            for (const PathEstimate& e : op.steps[k].estimates) {
                char line[96];
                if (!e.unavailable.empty())
                    std::snprintf(line, sizeof line, "      %-10s      -     ", to_string(e.path));
                else if (std::isnan(e.seconds))
                    std::snprintf(line, sizeof line, "    %s %-10s  (no estimate)", e.chosen ? "*" : " ", to_string(e.path));
                else
                    std::snprintf(line, sizeof line, "    %s %-10s %9.3f ms", e.chosen ? "*" : " ", to_string(e.path), e.seconds * 1e3);
                o << line << (e.unavailable.empty() ? "" : "  " + e.unavailable) << '\n';
            }
        }
    }
    return o.str();
}

} // namespace apron
