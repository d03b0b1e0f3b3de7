#pragma once
// Operations. Every operation the CLI, tests, benchmarks and bindings know is declared once in the
// registry (operations()): its name, parameters with defaults and limits, and a builder that turns
// validated arguments into an OpProgram, a short list of steps every backend knows how to execute.
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "apron/border.hpp"
#include "apron/mask.hpp"

namespace apron {

// SPEC.md "Normalisation and scaling": out = scale * normalise(sum) + delta.
enum class Normalise : unsigned char { none, sum, book };
const char* to_string(Normalise n);
std::optional<Normalise> parse_normalise(std::string_view s);

// Weighted sum over the mask (correlation; convolve is a correlation with the flipped mask).
struct LinearStep {
    Mask mask;
    BorderMode border = BorderMode::reflect;
    double border_value = 0;
    Normalise normalise = Normalise::none;
    double scale = 1, delta = 0;
};

// Flat morphology over the non-zero cells of `element` (SPEC.md "Morphology").
enum class MorphKind : unsigned char { erode, dilate };
struct MorphStep {
    Mask element;  // weights 0 or 1
    MorphKind kind = MorphKind::dilate;
    std::optional<BorderMode> border;  // none: pixels outside the image are ignored (OpenCV's default)
    double border_value = 0;
};

// Rank filter over the set cells of a flat element (SPEC.md "Rank"): the rank-th smallest (0-based) of the
// element's n samples, read through the border mode. f32 NaN samples are missing: of the v samples that are
// not NaN the one of rank floor(rank * v / n) is taken, and NaN where v = 0. Median: rank = n / 2.
// A volume's element (SPEC.md "Volumes", Axes::volume) has depth > 1 planes of W x H cells, stacked in
// `element` as one W x (H * depth) table: plane k (z offset k - anchor_z) is its rows k*H .. k*H + H-1, and the
// anchor cell (anchor_x, anchor_y) lies in plane anchor_z = anchor_y / H at row anchor_y % H.
struct RankStep {
    Mask element;  // weights 0 or 1
    int rank = 0;  // 0 .. n-1, n = the element's set cells
    BorderMode border = BorderMode::reflect;
    double border_value = 0;
    int depth = 1;  // the element's planes; > 1 only in a step whose axes are Axes::volume
    int plane_rows() const { return element.height / depth; }
    int anchor_z() const { return element.anchor_y / plane_rows(); }
    int anchor_row() const { return element.anchor_y % plane_rows(); }
};

// What a combine step computes from its samples A and B (SPEC.md "NaN and nodata in linear filters"). A
// sample is missing when it is NaN, or (has_nodata) when it equals nodata in the operand that is the
// operation's input (fill's and valid's A, mark's B). A missing output is NaN in f32 and, in an integer
// output, nodata (with has_nodata) or 0 (NaN stored as an integer, SPEC.md "Types").
//   affine: a*A + b*B + c                                (every program before NaN handling)
//   fill:   c where A is missing, else A                 (nan=ignore: c = 0; nan=fill:V: c = V)
//   valid:  0 where A is missing, else 1                 (the validity image whose weighted sum normalises)
//   ratio:  a*A / B + c where B > b, else missing        (A, B: the weighted sums of fill's and valid's images)
//   mark:   missing where A is NaN or (b != 0) B is missing, else A  (preserve_nan; nodata into NaN and back)
//   max:    the larger of A and B, min: the smaller (b = 1); a NaN sample is missing: the other one, NaN where
//           both are (the union of a 3-D element's parts: SPEC.md "Volumes")
// A second operand B is read exactly when b != 0, whatever the form.
enum class CombineForm : unsigned char { affine, fill, valid, ratio, mark, max, min };
const char* to_string(CombineForm f);

// Pixel-wise a*A + b*B + c, for operations built from others (gradient, top-hat, unsharp), and the pointwise
// forms of NaN- and nodata-aware linear filters.
struct CombineStep {
    double a = 1, b = 0, c = 0;
    CombineForm form = CombineForm::affine;
    bool has_nodata = false;
    double nodata = 0;
};

// One step reads the operation's input (op_input) or an earlier step's result (its index).
// Types: a step that is not the last of its operation writes f32, except morphology and rank filters, which
// keep their input's type (they are exact); the last step writes the operation's output type.
constexpr int op_input = -1;  // a step operand: the operation's input image
constexpr int no_operand = -2;  // a step operand that is not used (CombineStep with b = 0)
// Which axes a step's mask or element spans on a volume (SPEC.md "Volumes"). `plane`: x and y, the step
// applied to each plane alone (every step of a 2-D image). `depth`: z alone; the mask or element is one
// column (width 1) whose rows are planes: row j of it weighs plane z + j - anchor_y. Pointwise steps
// (combine) read the same sample of every operand and ignore it. `volume`: x, y and z at once (a rank step
// whose element has planes, RankStep::depth > 1): the step reads the whole volume, each output voxel the
// window of planes about its own, and a 2-D image is a volume of one plane to it.
enum class Axes : unsigned char { plane, depth, volume };
struct Step {
    std::variant<LinearStep, MorphStep, CombineStep, RankStep> action;
    int input = op_input;
    int second = no_operand;  // CombineStep's B
    Axes axes = Axes::plane;
};

struct OpProgram {
    std::string spec;  // the text it was made from, for messages and --timing
    std::vector<Step> steps;
};

// ---- the registry -------------------------------------------------------------------------------

// A mask or structuring element given as weights rather than as text (the Python bindings' NumPy arrays):
// its planes in order of z, plane k weighing plane z + k - D/2 as in a 'W H D' mask file (SPEC.md "Volumes");
// one plane is a 2-D mask. The planes are checked where they are read (check_mask_planes), as a file's are.
struct GivenMask {
    std::vector<Mask> planes;
    GivenMask(Mask plane) : planes{std::move(plane)} {}
    GivenMask(std::vector<Mask> z_planes) : planes(std::move(z_planes)) {}
};
// Given masks keyed by parameter name. The spec keeps a value for such a parameter only to name it in messages.
using GivenMasks = std::map<std::string, GivenMask>;

enum class ParamKind : unsigned char { number, integer, text, border, normalise, mask, element, vector, choice };

// Numbers that become pixel values or factors of them (value, scale, delta, separable weights) are kept
// within the float32 range: beyond it they turn infinite in float32 arithmetic.
constexpr double max_float32_parameter = 3.4e38;

// A numeric parameter (number, integer) is accepted exactly when min (<) <= value <= max; the builder
// must succeed for every such value (tests/test_registry_limits.cpp walks them all). A vector applies the
// limits to each of its numbers.
struct ParamSpec {
    std::string name;
    ParamKind kind = ParamKind::number;
    std::string default_value;  // empty: required (unless `optional`)
    std::string help;
    double min = -std::numeric_limits<double>::infinity();
    double max = std::numeric_limits<double>::infinity();
    std::vector<std::string> choices;  // for ParamKind::choice
    bool optional = false;             // may be absent with no default (builder checks has())
    bool min_exclusive = false;
};

// Arguments of one operation after validation against its ParamSpecs. It records which parameters the
// builder read, so that an error from inside the building (a mask too large, a bad file) can name them.
class OpArgs {
public:
    OpArgs(std::string op, std::map<std::string, std::string> values, const std::vector<ParamSpec>* specs)
        : op_(std::move(op)), values_(std::move(values)), specs_(specs) {}
    bool has(const std::string& name) const;  // given by the user, or defaulted
    double number(const std::string& name) const;
    int integer(const std::string& name) const;
    std::string text(const std::string& name) const;
    BorderMode border(const std::string& name) const;
    Normalise normalise(const std::string& name) const;
    // Masks and elements: given weights (use_given_masks) where there are some for `name`, else the text.
    Mask mask(const std::string& name) const;     // reads a mask file (2-D)
    std::vector<Mask> mask_planes(const std::string& name) const;  // a mask file's planes (one: a 2-D mask)
    Mask element(const std::string& name) const;  // rect:WxH, cross:WxH, ellipse:WxH, disk:R or a mask file (2-D)
    // A plane's element or a volume's (structuring_element_planes): its planes in order of z (one: 2-D).
    std::vector<Mask> element_planes(const std::string& name) const;
    std::vector<double> vector(const std::string& name) const;  // numbers separated by ':' or ';'
    // "--op <op>: <param>: <problem>"
    [[noreturn]] void fail(const std::string& name, const std::string& problem) const;
    const std::string& op() const { return op_; }
    // The mask and element accessors return these instead of reading the parameter's text (not owned; may
    // be null). mask() and element() take one plane and refuse more, naming the parameter.
    void use_given_masks(const GivenMasks* given) { given_ = given; }
    // The parameters read so far (by any accessor but has()), in the order first read.
    const std::vector<std::string>& parameters_read() const { return read_; }

private:
    const std::string& raw(const std::string& name) const;
    const ParamSpec* spec(const std::string& name) const;
    const GivenMask* given(const std::string& name) const;  // null: none given for `name`
    const Mask& given_plane(const std::string& name, const GivenMask& g) const;
    std::string op_;
    std::map<std::string, std::string> values_;
    const std::vector<ParamSpec>* specs_;
    mutable std::vector<std::string> read_;
    const GivenMasks* given_ = nullptr;
};

struct OpInfo {
    std::string name;
    std::string category;  // "linear", "edge", "morphology", "preset"
    std::string summary;
    std::string details;   // weights and formulas, so users can reproduce the op with correlate
    std::vector<ParamSpec> params;
    std::function<OpProgram(const OpArgs&)> build;
    // Specs that exercise the operation ("gaussian:sigma=1.5,border=wrap"); the tests run every one on
    // every backend, and the docs show them. Mask paths are relative to the source tree.
    std::vector<std::string> examples = {};
};

const std::vector<OpInfo>& operations();
const OpInfo* find_operation(std::string_view name);

// "NAME[:key=value,key=value...]" -> validated program; throws apron::Error naming the op and parameter.
OpProgram parse_operation(std::string_view spec);
// The same, with `given` standing for the mask and element parameters it names (checked as their text
// forms are: element weights 0 or 1 with one set).
OpProgram parse_operation(std::string_view spec, const GivenMasks& given);

// op.build(args), with any apron::Error from inside it (a Mask, a structuring element, a mask file) re-thrown
// as "--op SPEC: <the parameters it had read>: <message>" unless the message already starts "--op SPEC: ".
OpProgram build_operation(const OpInfo& op, const OpArgs& args);

// An OP string cut as parse_operation cuts it, before any validation: the name, then each item between
// commas in order (a trailing comma ends the list). An item that is not key=value keeps an empty key and
// the whole item as its value, for parse_operation to refuse. Tools that rewrite or inspect OP strings
// (pipeline files, batch fingerprints) use this rather than their own splitting.
struct OperationText {
    std::string name;
    bool has_parameters = false;  // a ':' followed the name
    std::vector<std::pair<std::string, std::string>> items;
};
OperationText split_operation(std::string_view spec);
std::string join_operation(const OperationText& op);
// Whether a parameter names a file: mask=FILE, and se=FILE unless the value is a shape (shapes have a ':').
bool names_file(std::string_view key, std::string_view value);

// Structuring elements: "rect:WxH", "cross:WxH", "ellipse:WxH" (OpenCV's getStructuringElement; "N" is
// NxN), "disk:R" (the Euclidean disk x^2 + y^2 <= R^2 on -R..R, scikit-image's morphology.disk) or a file
// of 0/1 weights. Sides 1..max_mask_side, so R <= (max_mask_side - 1) / 2.
Mask structuring_element(std::string_view spec);
// `m` checked as a structuring element (weights 0 or 1, at least one 1); `source` names it in the error.
Mask checked_element(Mask m, const std::string& source);
// A plane's element or a volume's (SPEC.md "Volumes") as planes in order of z, plane k at dz = k - D/2, each
// W x H with 0 where no cell is set: the 2-D forms above (one plane), rect:WxHxD, cross:WxHxD,
// ellipsoid:WxHxD, ball:R, or a 0/1 mask file of 'W H' or 'W H D'. At most max_element_depth planes.
std::vector<Mask> structuring_element_planes(std::string_view spec);
constexpr int max_element_depth = 255;
// Planes checked as a structuring element: check_mask_planes, weights 0 or 1, at least one 1 in all, at most
// max_element_depth planes; `source` names them in the error.
std::vector<Mask> checked_element_planes(std::vector<Mask> planes, const std::string& source);

} // namespace apron
