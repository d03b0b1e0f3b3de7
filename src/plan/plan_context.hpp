#pragma once
// What the step kind modules (plan/kinds/) share: the planner's state while it plans one step, and the
// small types of the questions every kind answers (plan/step_kind.hpp).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "apron/mask.hpp"
#include "apron/ops.hpp"
#include "plan/plan.hpp"

namespace apron {

class BackendCaps;
struct CostTable;

// Rows a step reads above and below an output row.
struct Reach {
    int top = 0, bottom = 0;
    // A step spanning x, y and z (Axes::volume): the planes it reads before and after its own; top and
    // bottom are then its rows within a plane.
    int planes_before = 0, planes_after = 0;
};

// What one output sample of a step costs in taps, and how many taps a second the reference backend sums
// (one core; `apron filter --backend reference` warns before a long run).
struct StepWork {
    double taps = 0;
    double reference_taps_per_second = 1;
};

// A plan's table: its storage (copies of a mask share one) and its bytes.
using TableVisitor = std::function<void(const void* storage, std::size_t bytes)>;
// A program step's mask or structuring element, which Pipeline::add may point at an equal one's storage.
using MaskVisitor = std::function<void(Mask&)>;

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

// The planner's state while a kind plans one program step of one operation: the kind appends its plan
// steps (one, or several: a low-rank mask's passes and sums) and returns the index holding the result.
struct PlanContext {
    const ImageShape& image;      // every step's output has this shape, in its own type
    PixelType out_type;           // the pipeline's output type, which the operation's last step writes
    const BackendCaps& caps;
    Algorithm algorithm;          // --algo
    const CostTable* table;       // the backend's calibration table (may be null)
    const std::string& spec;      // the operation's text, for errors
    MaskMemo& memo;
    std::vector<StepPlan>& steps; // the operation's plan steps so far
    std::vector<PixelType>& produced;  // their output types
    PixelType op_in;              // the operation's input type
    int input = op_input, second = no_operand;  // this step's operands, as plan step indices
    bool last = false;            // the operation's last program step
    // The image one run of this step's kernel sees: `image` for a 2-D image; on a volume one plane (plane
    // steps) or the volume's z view, a row per plane of every plane's pixels (depth steps).
    ImageShape step_image;
    Axes axes = Axes::plane;      // this step's (Step::axes)

    PixelType type_of(int index) const { return index == op_input ? op_in : produced.at(std::size_t(index)); }
    // Appends a step writing `out` (label: the kind's, with `note`); returns its index.
    int add(StepPlan step, PixelType out, const std::string& note = "");
    // Appends a combine step a*A + b*B + c of two results; returns its index.
    int add_combine(CombineStep c, int a, int b, PixelType out, const std::string& note);
};

// The constant border reads as a pixel of the image, so its value must be one the input type can hold
// (an integer sum stays an integer sum; SciPy's cval would be a float on integer images).
void check_border_value(const std::string& spec, std::optional<BorderMode> border, double value, PixelType in);
// "5x3".
std::string mask_size(const Mask& m);
// Exact text of what a result depends on (the resume fingerprint): doubles with 17 digits, a mask's shape,
// anchor and a hash of its weights' bytes.
std::string exact_number(double v);
std::string mask_text(const Mask& m);

} // namespace apron
