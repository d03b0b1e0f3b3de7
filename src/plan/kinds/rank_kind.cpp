// The rank step kind: median, percentile and rank filters over a flat element (SPEC.md "Rank").
#include "plan/kinds/rank_kind.hpp"

#include <algorithm>

#include "plan/backend_caps.hpp"
#include "plan/morph_decompose.hpp"

namespace apron {
namespace {

const char* algorithm_name(RankAlgorithm a) {
    switch (a) {
    case RankAlgorithm::network: return "network";
    case RankAlgorithm::histogram: return "histogram";
    case RankAlgorithm::select: return "select";
    }
    return "?";
}

// The value the rank takes, in words: "median", "rank 3/9" (0-based of n).
std::string rank_name(const RankStep& s, int count) {
    if (s.rank == count / 2) return "median";
    return "rank " + std::to_string(s.rank) + "/" + std::to_string(count);
}

} // namespace

int rank_cells(const Mask& element) {
    return int(std::count_if(element.weights.begin(), element.weights.end(), [](double w) { return w != 0; }));
}

// A rank filter keeps its type (it picks one of its input's samples); an operation that must end in
// another type converts once at its end, as morphology does.
//  - network: windows of up to 7 x 7 cells (any type);
//  - histogram: larger windows of u8 and u16 (a histogram's update costs one row of the element's runs a
//    pixel, whatever their length);
//  - select: larger f32 windows.
int RankStepKind::plan(const RankStep& step, PlanContext& context) {
    const PixelType type = context.type_of(context.input);
    check_border_value(context.spec, step.border, step.border_value, type);
    RankPlan p;
    p.step = step;
    p.type = type;
    p.count = rank_cells(step.element);
    if (step.depth > 1)  // a volume's window: histograms of its runs (u8, u16), or its keys' bins resolved (f32)
        p.algorithm = type == PixelType::f32 ? RankAlgorithm::select : RankAlgorithm::histogram;
    else if (p.count <= rank_network_cells && step.element.width <= 7 && step.element.height <= 7)
        p.algorithm = RankAlgorithm::network;
    else if (type != PixelType::f32)
        p.algorithm = RankAlgorithm::histogram;
    else
        p.algorithm = RankAlgorithm::select;
    p.chords = element_chords(step.element);
    StepPlan sp;
    sp.what = std::move(p);
    sp.input = context.input;
    return context.add(std::move(sp), type);
}

int RankStepKind::operands(const RankStep&) { return 1; }

void RankStepKind::tables(RankStep& step, const MaskVisitor& visit) { visit(step.element); }

std::string RankStepKind::parameters(const RankStep& a) {
    return "rank " + std::to_string(a.rank) + " " + mask_text(a.element) + (a.depth > 1 ? " planes " + std::to_string(a.depth) : "") +
           " border " + to_string(a.border) + " " + exact_number(a.border_value);
}

// The reference gathers the window and selects: about 5e7 samples a second on one core (measured 2026-11,
// a shared 2-core x86 machine, 3x3 to 31x31 windows). Only the reference backend's long-run note reads it
// (tools/apron_main.cpp), so it is the reference's rate, not the fast CPU kernels'.
StepWork RankStepKind::work(const RankStep& step) { return {double(rank_cells(step.element)), 5e7}; }

double RankStepKind::gain(const RankStep&) { return 1; }  // one of the input's samples

bool RankStepKind::bit_exact(const RankPlan&) { return true; }  // comparisons only

std::string RankStepKind::label(const RankPlan& r) {
    const RankStep& s = r.step;
    const std::string size =
        s.depth > 1 ? std::to_string(s.element.width) + "x" + std::to_string(s.plane_rows()) + "x" + std::to_string(s.depth)
                    : mask_size(s.element);
    return rank_name(r.step, r.count) + ' ' + size + ' ' + algorithm_name(r.algorithm) + ' ' +
           to_string(r.type) + " border=" + to_string(r.step.border);
}

// A volume's element: rows within a plane, and planes along z.
Reach RankStepKind::reach(const RankPlan& r) {
    const RankStep& s = r.step;
    const Mask& e = s.element;
    if (s.depth > 1)
        return {s.anchor_row(), s.plane_rows() - 1 - s.anchor_row(), s.anchor_z(), s.depth - 1 - s.anchor_z()};
    return {e.anchor_y, e.height - 1 - e.anchor_y};
}

bool RankStepKind::wraps(const RankPlan& r) { return r.step.border == BorderMode::wrap; }

void RankStepKind::tables(const RankPlan& r, const TableVisitor& visit) {
    visit(r.step.element.weights.data(), r.step.element.weights.size() * sizeof(double));
    visit(r.chords.data(), r.chords.size() * sizeof(MorphChord));
}

// Executors build the element's cell offsets or runs while the step runs.
std::uint64_t RankStepKind::executor_table_bytes(const RankPlan& r) { return std::uint64_t(r.step.element.weights.size()) * 16; }

// The fast CPU kernels' rows and histograms, whose rows follow the input's width and channels; the reference
// backend's window of keys is less.
std::uint64_t RankStepKind::host_scratch_per_thread(const RankPlan& r, const ImageShape& input) {
    return rank_cpu_scratch_per_thread(r, input);
}

bool RankStepKind::repeats(const RankPlan& a, const RankPlan& b) {
    return a.type == b.type && a.algorithm == b.algorithm && a.step.rank == b.step.rank && a.step.depth == b.step.depth &&
           a.step.border == b.step.border &&
           a.step.border_value == b.step.border_value && a.step.element == b.step.element;
}

std::optional<RankPlan> RankStepKind::in_band(const RankPlan&, int, int) { return std::nullopt; }

const KernelChoice& RankStepKind::choose_kernel(RankPlan& r, const BackendCaps& caps, const ImageShape& shape, std::string&) {
    return r.kernel = caps.rank_kernel(r, shape);
}

void RankStepKind::run(Executor& ex, const RankPlan& r, ConstImageView in, ConstImageView, ImageView out) { ex.rank(r, in, out); }

bool RankStepKind::run_overlapped(Executor&, const RankPlan&, ConstImageView, ImageView) { return false; }

} // namespace apron
