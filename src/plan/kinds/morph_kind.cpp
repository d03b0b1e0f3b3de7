// The morphology step kind: erosion and dilation by a structuring element (flat: the set cells).
#include "plan/kinds/morph_kind.hpp"

#include <algorithm>
#include <vector>

#include "plan/backend_caps.hpp"
#include "plan/morph_decompose.hpp"

namespace apron {
namespace {

// "chords(N,L)": N chords of L distinct lengths.
std::string algorithm_name(const MorphPlan& m) {
    if (m.algorithm == MorphAlgorithm::separable_rect) return "separable-rect";
    if (m.algorithm != MorphAlgorithm::chords) return "direct";
    std::vector<int> lengths;
    for (const MorphChord& c : m.chords) lengths.push_back(c.length);
    std::sort(lengths.begin(), lengths.end());
    const auto distinct = std::unique(lengths.begin(), lengths.end()) - lengths.begin();
    return "chords(" + std::to_string(m.chords.size()) + "," + std::to_string(distinct) + ")";
}

} // namespace

// Morphology keeps its type; an operation that must end in another type converts once at its end.
int MorphStepKind::plan(const MorphStep& step, PlanContext& context) {
    const PixelType type = context.type_of(context.input);
    check_border_value(context.spec, step.border, step.border_value, type);
    MorphPlan p;
    p.step = step;
    p.type = type;
    const bool full = context.memo.get(context.memo.full, step.element, [&] {
        return std::all_of(step.element.weights.begin(), step.element.weights.end(), [](double w) { return w != 0; });
    });
    decompose_element(p, full);  // rectangle, chords or direct (plan/morph_decompose.cpp: the cost model)
    StepPlan sp;
    sp.what = std::move(p);
    sp.input = context.input;
    return context.add(std::move(sp), type);
}

int MorphStepKind::operands(const MorphStep&) { return 1; }

void MorphStepKind::tables(MorphStep& step, const MaskVisitor& visit) { visit(step.element); }

std::string MorphStepKind::parameters(const MorphStep& a) {
    return std::string(a.kind == MorphKind::erode ? "erode " : "dilate ") + mask_text(a.element) + " border " +
           (a.border ? to_string(*a.border) : "ignored") + " " + exact_number(a.border_value);
}

// The reference backend compares 2.5e8 to 4.5e8 taps a second on one core (measured 2026-11, a shared
// 2-core x86 machine); the lower rate, so a warning errs long.
StepWork MorphStepKind::work(const MorphStep& step) { return {double(step.element.width) * step.element.height, 2.5e8}; }

double MorphStepKind::gain(const MorphStep&) { return 1; }  // an extremum of the input's samples

bool MorphStepKind::bit_exact(const MorphPlan&) { return true; }  // comparisons only

std::string MorphStepKind::label(const MorphPlan& m) {
    return std::string(m.step.kind == MorphKind::dilate ? "dilate " : "erode ") + mask_size(m.step.element) + ' ' +
           algorithm_name(m) + ' ' + to_string(m.type) + " border=" + (m.step.border ? to_string(*m.step.border) : "ignore");
}

Reach MorphStepKind::reach(const MorphPlan& m) {
    const Mask& e = m.step.element;
    return {e.anchor_y, e.height - 1 - e.anchor_y};
}

bool MorphStepKind::wraps(const MorphPlan& m) { return m.step.border == BorderMode::wrap; }

void MorphStepKind::tables(const MorphPlan& m, const TableVisitor& visit) {
    visit(m.step.element.weights.data(), m.step.element.weights.size() * sizeof(double));
}

// Executors build the element's cell offsets while the step runs.
std::uint64_t MorphStepKind::executor_table_bytes(const MorphPlan& m) { return std::uint64_t(m.step.element.weights.size()) * 16; }

std::uint64_t MorphStepKind::host_scratch_per_thread(const MorphPlan&, const ImageShape&) { return 0; }

// The same erosion or dilation (element, border, type and path), as `iterations` expands it.
bool MorphStepKind::repeats(const MorphPlan& a, const MorphPlan& b) {
    return a.type == b.type && a.algorithm == b.algorithm && a.step.kind == b.step.kind && a.step.border == b.step.border &&
           a.step.border_value == b.step.border_value && a.step.element == b.step.element;  // shared table: no compare
}

std::optional<MorphPlan> MorphStepKind::in_band(const MorphPlan&, int, int) { return std::nullopt; }

// A rectangle the backend's fast kernel does not take is planned direct, so the label says what runs.
const KernelChoice& MorphStepKind::choose_kernel(MorphPlan& m, const BackendCaps& caps, const ImageShape& shape, std::string& label) {
    if (m.algorithm == MorphAlgorithm::separable_rect && !caps.morph_rect_supported(m, shape)) {
        m.algorithm = MorphAlgorithm::direct;
        label = MorphStepKind::label(m);
    }
    return m.kernel = caps.morph_kernel(m, shape);
}

void MorphStepKind::run(Executor& ex, const MorphPlan& m, ConstImageView in, ConstImageView, ImageView out) { ex.morph(m, in, out); }

bool MorphStepKind::run_overlapped(Executor&, const MorphPlan&, ConstImageView, ImageView) { return false; }

} // namespace apron
