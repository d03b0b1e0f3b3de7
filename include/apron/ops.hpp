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

// Pixel-wise a*A + b*B + c, for operations built from others (gradient, top-hat, unsharp).
struct CombineStep {
    double a = 1, b = 0, c = 0;
};

// One step reads the operation's input (op_input) or an earlier step's result (its index).
// Types: a step that is not the last of its operation writes f32, except morphology, which keeps its
// input's type (it is exact); the last step writes the operation's output type.
constexpr int op_input = -1;  // a step operand: the operation's input image
constexpr int no_operand = -2;  // a step operand that is not used (CombineStep with b = 0)
struct Step {
    std::variant<LinearStep, MorphStep, CombineStep> action;
    int input = op_input;
    int second = no_operand;  // CombineStep's B
};

struct OpProgram {
    std::string spec;  // the text it was made from, for messages and --timing
    std::vector<Step> steps;
};

// ---- the registry -------------------------------------------------------------------------------

enum class ParamKind : unsigned char { number, integer, text, border, normalise, mask, element, vector, choice };

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

// Arguments of one operation after validation against its ParamSpecs.
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
    Mask mask(const std::string& name) const;     // reads a mask file
    Mask element(const std::string& name) const;  // rect:WxH, cross:WxH, ellipse:WxH or a mask file
    std::vector<double> vector(const std::string& name) const;
    // "<op>: <param>: <problem>"
    [[noreturn]] void fail(const std::string& name, const std::string& problem) const;
    const std::string& op() const { return op_; }

private:
    const std::string& raw(const std::string& name) const;
    std::string op_;
    std::map<std::string, std::string> values_;
    const std::vector<ParamSpec>* specs_;
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

// Structuring elements: "rect:WxH", "cross:WxH", "ellipse:WxH" (alias disk) or a mask file path.
Mask structuring_element(std::string_view spec);

} // namespace apron
