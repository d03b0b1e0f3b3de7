// The operation registry: op specs ("NAME:key=value,...") are parsed and validated here against each
// operation's declared parameters, so every front end (CLI, tests, benchmarks, bindings) gets the same
// names, defaults, limits and error messages.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "apron/errors.hpp"
#include "apron/ops.hpp"
#include "core/number_text.hpp"
#include "ops/registry_parts.hpp"

namespace apron {

const std::vector<OpInfo>& operations() {
    static const std::vector<OpInfo> all = [] {
        std::vector<OpInfo> ops;
        add_linear_operations(ops);
        add_edge_operations(ops);
        add_morphology_operations(ops);
        add_rank_operations(ops);
        add_preset_operations(ops);
        // Linear filters, whatever their family, read missing samples (NaN, nodata) as one option says.
        for (OpInfo& op : ops)
            if (op.category == "linear" || op.category == "edge" || op.category == "preset") add_missing_sample_parameters(op);
        return ops;
    }();
    return all;
}

const OpInfo* find_operation(std::string_view name) {
    for (const auto& op : operations())
        if (op.name == name) return &op;
    return nullptr;
}

// ---- OpArgs ---------------------------------------------------------------------------------------

void OpArgs::fail(const std::string& name, const std::string& problem) const {
    throw Error("--op " + op_ + ": " + name + ": " + problem);
}

bool OpArgs::has(const std::string& name) const { return values_.count(name) != 0; }

const std::string& OpArgs::raw(const std::string& name) const {
    if (std::find(read_.begin(), read_.end(), name) == read_.end()) read_.push_back(name);
    auto it = values_.find(name);
    if (it == values_.end()) fail(name, "missing (required)");
    return it->second;
}

namespace {

const ParamSpec* spec_of(const std::vector<ParamSpec>& specs, const std::string& name) {
    for (const auto& s : specs)
        if (s.name == name) return &s;
    return nullptr;
}

// The shortest text that reads back as x ("682", "1e-30", "3.4e+38").
std::string shortest(double x) {
    char b[32];
    const auto r = std::to_chars(b, b + sizeof b, x);
    return std::string(b, r.ptr);
}

// "0..4097", "> 0 and <= 682", ">= 1"; empty when unbounded.
std::string range_text(const ParamSpec& p) {
    const bool has_min = std::isfinite(p.min), has_max = std::isfinite(p.max);
    const std::string lower = (p.min_exclusive ? "> " : ">= ") + shortest(p.min);
    if (has_min && has_max) return p.min_exclusive ? lower + " and <= " + shortest(p.max) : shortest(p.min) + ".." + shortest(p.max);
    if (has_min) return lower;
    if (has_max) return "<= " + shortest(p.max);
    return "";
}

bool in_range(const ParamSpec& p, double v) { return (p.min_exclusive ? v > p.min : v >= p.min) && v <= p.max; }

// Integers read as "-?digits"; a magnitude beyond this is out of every declared range.
constexpr long long integer_limit = 1'000'000'000;

} // namespace

const ParamSpec* OpArgs::spec(const std::string& name) const { return specs_ ? spec_of(*specs_, name) : nullptr; }

double OpArgs::number(const std::string& name) const {
    const auto v = parse_decimal(raw(name));
    if (!v) fail(name, decimal_problem(raw(name)));
    return *v;
}

int OpArgs::integer(const std::string& name) const {
    const std::string& s = raw(name);
    bool over = false;
    const auto v = parse_integer(s, integer_limit, &over);
    if (!v) fail(name, s.empty() ? "empty value (expected an integer)" : "'" + s + "' is not an integer");
    if (over) {
        const ParamSpec* p = spec(name);
        const std::string range = p ? range_text(*p) : "";
        fail(name, s + " is out of range (must be " + (range.empty() ? "-1e9..1e9" : range) + ")");
    }
    return int(*v);
}

std::string OpArgs::text(const std::string& name) const { return raw(name); }

BorderMode OpArgs::border(const std::string& name) const {
    auto m = parse_border_mode(raw(name));
    if (!m) fail(name, "unknown border mode '" + raw(name) + "' (use " + border_mode_names() + ")");
    return *m;
}

Normalise OpArgs::normalise(const std::string& name) const {
    auto n = parse_normalise(raw(name));
    if (!n) fail(name, "unknown normalisation '" + raw(name) + "' (use none, sum or book)");
    return *n;
}

const GivenMask* OpArgs::given(const std::string& name) const {
    if (!given_) return nullptr;
    const auto it = given_->find(name);
    return it == given_->end() ? nullptr : &it->second;
}

// The one plane of a given mask or element, for the parameters that take 2-D weights.
const Mask& OpArgs::given_plane(const std::string& name, const GivenMask& g) const {
    if (g.planes.size() != 1)
        fail(name, "takes 2-D weights (rows x columns); these have " + std::to_string(g.planes.size()) + " planes");
    return g.planes[0];
}

Mask OpArgs::mask(const std::string& name) const {
    const std::string& text = raw(name);
    if (const GivenMask* g = given(name)) return given_plane(name, *g);
    try {
        return read_mask_file(text);
    } catch (const Error& e) {
        fail(name, e.what());
    }
}

std::vector<Mask> OpArgs::mask_planes(const std::string& name) const {
    const std::string& text = raw(name);
    try {
        if (const GivenMask* g = given(name)) {
            check_mask_planes(g->planes, text);
            return g->planes;
        }
        return read_mask_planes_file(text);
    } catch (const Error& e) {
        fail(name, e.what());
    }
}

Mask OpArgs::element(const std::string& name) const {
    const std::string& text = raw(name);
    const GivenMask* g = given(name);
    const Mask* plane = g ? &given_plane(name, *g) : nullptr;
    try {
        return plane ? checked_element(*plane, text) : structuring_element(text);
    } catch (const Error& e) {
        fail(name, e.what());
    }
}

std::vector<Mask> OpArgs::element_planes(const std::string& name) const {
    const std::string& text = raw(name);
    try {
        if (const GivenMask* g = given(name)) return checked_element_planes(g->planes, text);
        return structuring_element_planes(text);
    } catch (const Error& e) {
        fail(name, e.what());
    }
}

// Numbers separated by ':' (or ';'), every field a number: "1::2", ":1" and "1:" are refused, not read
// as shorter vectors.
std::vector<double> OpArgs::vector(const std::string& name) const {
    const std::string& s = raw(name);
    const std::string expected = " (expected numbers separated by ':', e.g. 1:2:1)";
    if (s.empty()) fail(name, "empty value" + expected);
    const ParamSpec* p = spec(name);
    std::vector<double> out;
    for (std::size_t start = 0;;) {
        const std::size_t end = s.find_first_of(":;", start);
        const std::string field = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (field.empty())
            fail(name, "number " + std::to_string(out.size() + 1) + " of '" + s + "' is empty" + expected);
        const auto v = parse_decimal(field);
        if (!v) fail(name, decimal_problem(field));
        if (p && !in_range(*p, *v)) fail(name, field + " is out of range (each number must be " + range_text(*p) + ")");
        out.push_back(*v);
        if (out.size() > std::size_t(max_mask_side)) fail(name, "more than " + std::to_string(max_mask_side) + " numbers");
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return out;
}

// ---- parsing "NAME:key=value,..." ------------------------------------------------------------------

OperationText split_operation(std::string_view spec) {
    OperationText op;
    const std::string text(spec);
    const auto colon = text.find(':');
    op.name = text.substr(0, colon);
    if (colon == std::string::npos) return op;
    op.has_parameters = true;
    for (std::size_t pos = colon + 1; pos <= text.size();) {
        std::size_t comma = text.find(',', pos);
        if (comma == std::string::npos) comma = text.size();
        const std::string item = text.substr(pos, comma - pos);
        pos = comma + 1;
        if (item.empty() && comma == text.size()) break;  // "name:" or a trailing comma
        const auto eq = item.find('=');
        if (eq == std::string::npos || eq == 0)
            op.items.push_back({"", item});
        else
            op.items.push_back({item.substr(0, eq), item.substr(eq + 1)});
    }
    return op;
}

std::string join_operation(const OperationText& op) {
    std::string text = op.name;
    if (op.has_parameters) text += ':';
    for (std::size_t i = 0; i < op.items.size(); ++i) {
        const auto& [key, value] = op.items[i];
        if (i) text += ',';
        if (!key.empty()) text.append(key).append(1, '=');
        text += value;
    }
    return text;
}

bool names_file(std::string_view key, std::string_view value) {
    return key == "mask" || (key == "se" && value.find(':') == std::string_view::npos);
}

OpProgram parse_operation(std::string_view spec) { return parse_operation(spec, GivenMasks{}); }

OpProgram parse_operation(std::string_view spec, const GivenMasks& given) {
    const std::string text(spec);
    const OperationText op = split_operation(text);
    const std::string& name = op.name;
    const OpInfo* info = find_operation(name);
    if (!info) throw Error("--op " + text + ": unknown operation '" + name + "' (see `apron ops`)");

    std::map<std::string, std::string> values;
    for (const auto& [key, value] : op.items) {
        if (key.empty() && value.empty()) throw Error("--op " + text + ": empty parameter between commas");
        if (key.empty()) throw Error("--op " + text + ": '" + value + "' is not key=value");
        if (!spec_of(info->params, key)) {
            std::string known;
            for (const auto& p : info->params) known += (known.empty() ? "" : ", ") + p.name;
            throw Error("--op " + text + ": unknown parameter '" + key + "' for " + name +
                        (known.empty() ? " (it takes none)" : " (known: " + known + ")"));
        }
        if (values.count(key)) throw Error("--op " + text + ": parameter '" + key + "' given twice");
        values[key] = value;
    }
    for (const auto& p : info->params)
        if (!values.count(p.name) && !p.default_value.empty()) values[p.name] = p.default_value;

    // Generic validation from the declarations: required, numeric ranges, choices.
    const OpArgs checked(text, values, &info->params);
    for (const auto& p : info->params) {
        if (!checked.has(p.name)) {
            if (!p.optional) checked.fail(p.name, "missing (required)");
            continue;
        }
        switch (p.kind) {
        case ParamKind::number:
        case ParamKind::integer: {
            const double v = p.kind == ParamKind::integer ? checked.integer(p.name) : checked.number(p.name);
            if (!in_range(p, v)) checked.fail(p.name, checked.text(p.name) + " is out of range (must be " + range_text(p) + ")");
            break;
        }
        case ParamKind::border: checked.border(p.name); break;
        case ParamKind::normalise: checked.normalise(p.name); break;
        case ParamKind::choice:
            if (std::find(p.choices.begin(), p.choices.end(), checked.text(p.name)) == p.choices.end()) {
                std::string known;
                for (const auto& c : p.choices) known += (known.empty() ? "" : ", ") + c;
                checked.fail(p.name, "'" + checked.text(p.name) + "' is not one of " + known);
            }
            break;
        default: break;  // masks, elements and vectors are checked when the builder reads them
        }
    }
    OpArgs args(text, values, &info->params);
    args.use_given_masks(&given);
    OpProgram program = build_operation(*info, args);
    program.spec = text;
    return program;
}

OpProgram build_operation(const OpInfo& op, const OpArgs& args) {
    try {
        return op.build(args);
    } catch (const Error& e) {
        const std::string prefix = "--op " + args.op() + ": ";
        const std::string message = e.what();
        if (message.rfind(prefix, 0) == 0) throw;
        // Name the parameters the builder had read, unless the message starts with one of them.
        std::string read;
        for (const auto& name : args.parameters_read()) {
            if (message.rfind(name + ": ", 0) == 0) throw Error(prefix + message);
            read += (read.empty() ? "" : ", ") + name;
        }
        throw Error(prefix + (read.empty() ? "" : read + ": ") + message);
    }
}

} // namespace apron
