// The combine step kind: a*A + b*B + c of one or two images, sample by sample (unsharp masks, top-hats,
// gradients, the sums of low-rank passes, conversions between types), and the pointwise forms of NaN- and
// nodata-aware linear filters (fill, valid, ratio, mark: apron/ops.hpp's CombineForm).
#include "plan/kinds/combine_kind.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "apron/errors.hpp"
#include "plan/backend_caps.hpp"

namespace apron {

const char* to_string(CombineForm f) {
    switch (f) {
    case CombineForm::affine: return "affine";
    case CombineForm::fill: return "fill";
    case CombineForm::valid: return "valid";
    case CombineForm::ratio: return "ratio";
    case CombineForm::mark: return "mark";
    case CombineForm::max: return "max";
    case CombineForm::min: return "min";
    }
    return "?";
}

namespace {

// Whether v is a value of integer type t.
bool holds(PixelType t, double v) { return v == std::floor(v) && v >= 0 && v <= type_max(t); }

std::string number_text(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", v);
    return text;
}

// nodata read from the operation's input (type `in`) and, from the operation's last step, written to its
// output (type `out`): an integer image compares and writes values of its type, so V must be one; f32
// compares float(V) (the value a sample written as V holds).
void check_nodata(const PlanContext& context, CombineStep& c, bool reads_input, bool writes_output) {
    if (!c.has_nodata) return;
    const PixelType in = reads_input ? context.type_of(c.form == CombineForm::mark ? context.second : context.input) : PixelType::f32;
    if (reads_input && is_integer(in) && !holds(in, c.nodata))
        fail("--op " + context.spec, "nodata: " + number_text(c.nodata) + " is not a " + to_string(in) +
                                         " sample value (the input's type): use an integer 0.." + std::to_string(int(type_max(in))));
    const PixelType out = context.out_type;
    if (writes_output && is_integer(out) && !holds(out, c.nodata))
        fail("--op " + context.spec, "nodata: " + number_text(c.nodata) + " cannot be written to " + to_string(out) +
                                         " pixels (missing outputs are written as nodata): use an integer 0.." +
                                         std::to_string(int(type_max(out))) + " or --out-type f32");
    if (reads_input && !is_integer(in)) c.nodata = double(float(c.nodata));
}

} // namespace

int CombineStepKind::plan(const CombineStep& step, PlanContext& context) {
    CombineStep c = step;
    const PixelType in = context.type_of(context.input);
    PixelType out = context.last ? context.out_type : PixelType::f32;
    // The operand that is the operation's input, which the nodata test reads: fill's and valid's A, mark's B.
    const bool reads_input = c.form == CombineForm::fill || c.form == CombineForm::valid ||
                             (c.form == CombineForm::mark && c.b != 0);
    const bool writes_missing = c.form == CombineForm::ratio || c.form == CombineForm::mark;
    check_nodata(context, c, reads_input, context.last && writes_missing);
    // A fill that keeps every sample of an integer image an integer of its type stays in that type, so the
    // linear step after it takes the exact integer path, as on the image with the value written in.
    if (c.form == CombineForm::fill && !context.last && is_integer(in) && holds(in, c.c)) out = in;
    // The larger or smaller of two samples of one type is one of them: exact in that type (the parts of a
    // 3-D element's erosion or dilation stay in the image's type, as morphology does).
    if ((c.form == CombineForm::max || c.form == CombineForm::min) && !context.last &&
        (context.second == no_operand || context.type_of(context.second) == in))
        out = in;
    StepPlan sp;
    sp.what = CombinePlan{c, in, context.second != no_operand ? context.type_of(context.second) : in, out};
    sp.input = context.input;
    sp.second = context.second;
    return context.add(std::move(sp), out);
}

int CombineStepKind::operands(const CombineStep& c) { return c.b != 0 ? 2 : 1; }

void CombineStepKind::tables(CombineStep&, const MaskVisitor&) {}

std::string CombineStepKind::parameters(const CombineStep& a) {
    std::string text = "combine " + exact_number(a.a) + " " + exact_number(a.b) + " " + exact_number(a.c);
    if (a.form != CombineForm::affine) text += std::string(" ") + to_string(a.form);
    if (a.has_nodata) text += " nodata " + exact_number(a.nodata);
    return text;
}

StepWork CombineStepKind::work(const CombineStep&) { return {0, 1}; }

// ratio: a*A / B with B above b > 0 is at most |a| |A| / b; as B is a weighted sum of 0/1 samples normalised
// by the weights' sum, A / B stays within sum |w| / |sum w| of the input's largest magnitude where B is 1,
// and the threshold keeps it finite elsewhere. The gain is for the float tolerances: the ratio's own rounding
// is one double division.
double CombineStepKind::gain(const CombineStep& c) {
    switch (c.form) {
    case CombineForm::affine: return std::max(1.0, std::abs(c.a) + std::abs(c.b));
    case CombineForm::ratio: return std::max(1.0, std::abs(c.a));
    default: return 1.0;
    }
}

// Every backend computes each form in double and rounds once (SPEC.md; core/missing_sample.hpp).
bool CombineStepKind::bit_exact(const CombinePlan&) { return true; }

std::string CombineStepKind::label(const CombinePlan& c) {
    std::ostringstream o;
    const CombineStep& s = c.step;
    const std::string nodata = s.has_nodata ? " nodata=" + number_text(s.nodata) : "";
    switch (s.form) {
    case CombineForm::affine: o << "combine " << s.a << "*A + " << s.b << "*B + " << s.c; break;
    case CombineForm::fill: o << "combine fill missing=" << s.c << nodata; break;
    case CombineForm::valid: o << "combine valid" << nodata; break;
    case CombineForm::ratio: o << "combine ratio " << s.a << "*A/B + " << s.c << " where B > " << s.b << nodata; break;
    case CombineForm::mark: o << "combine mark missing" << (s.b != 0 ? " where A is NaN or B missing" : " where A is NaN") << nodata; break;
    case CombineForm::max: o << "combine max(A, B)"; break;
    case CombineForm::min: o << "combine min(A, B)"; break;
    }
    o << ' ' << to_string(c.a_type) << ',' << to_string(c.b_type) << "->" << to_string(c.out);
    return o.str();
}

Reach CombineStepKind::reach(const CombinePlan&) { return {}; }
bool CombineStepKind::wraps(const CombinePlan&) { return false; }
void CombineStepKind::tables(const CombinePlan&, const TableVisitor&) {}
std::uint64_t CombineStepKind::executor_table_bytes(const CombinePlan&) { return 0; }
std::uint64_t CombineStepKind::host_scratch_per_thread(const CombinePlan&, const ImageShape&) { return 0; }
bool CombineStepKind::repeats(const CombinePlan&, const CombinePlan&) { return false; }
std::optional<CombinePlan> CombineStepKind::in_band(const CombinePlan&, int, int) { return std::nullopt; }

const KernelChoice& CombineStepKind::choose_kernel(CombinePlan& c, const BackendCaps& caps, const ImageShape& shape, std::string&) {
    return c.kernel = caps.combine_kernel(c, shape);
}

void CombineStepKind::run(Executor& ex, const CombinePlan& c, ConstImageView a, ConstImageView b, ImageView out) {
    ex.combine(c, a, b, out);
}

bool CombineStepKind::run_overlapped(Executor&, const CombinePlan&, ConstImageView, ImageView) { return false; }

} // namespace apron
