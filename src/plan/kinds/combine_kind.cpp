// The combine step kind: a*A + b*B + c of one or two images, sample by sample (unsharp masks, top-hats,
// gradients, the sums of low-rank passes, conversions between types).
#include "plan/kinds/combine_kind.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "plan/backend_caps.hpp"

namespace apron {

int CombineStepKind::plan(const CombineStep& c, PlanContext& context) {
    const PixelType in = context.type_of(context.input);
    const PixelType out = context.last ? context.out_type : PixelType::f32;
    StepPlan sp;
    sp.what = CombinePlan{c, in, context.second != no_operand ? context.type_of(context.second) : in, out};
    sp.input = context.input;
    sp.second = context.second;
    return context.add(std::move(sp), out);
}

int CombineStepKind::operands(const CombineStep& c) { return c.b != 0 ? 2 : 1; }

void CombineStepKind::tables(CombineStep&, const MaskVisitor&) {}

std::string CombineStepKind::parameters(const CombineStep& a) {
    return "combine " + exact_number(a.a) + " " + exact_number(a.b) + " " + exact_number(a.c);
}

StepWork CombineStepKind::work(const CombineStep&) { return {0, 1}; }

double CombineStepKind::gain(const CombineStep& c) { return std::max(1.0, std::abs(c.a) + std::abs(c.b)); }

// Every backend computes a*A + b*B + c in double and rounds once (SPEC.md).
bool CombineStepKind::bit_exact(const CombinePlan&) { return true; }

std::string CombineStepKind::label(const CombinePlan& c) {
    std::ostringstream o;
    o << "combine " << c.step.a << "*A + " << c.step.b << "*B + " << c.step.c << ' ' << to_string(c.a_type) << ','
      << to_string(c.b_type) << "->" << to_string(c.out);
    return o.str();
}

Reach CombineStepKind::reach(const CombinePlan&) { return {}; }
bool CombineStepKind::wraps(const CombinePlan&) { return false; }
void CombineStepKind::tables(const CombinePlan&, const TableVisitor&) {}
std::uint64_t CombineStepKind::executor_table_bytes(const CombinePlan&) { return 0; }
std::uint64_t CombineStepKind::host_scratch_per_thread(const CombinePlan&) { return 0; }
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
