// The operation registry: op specs ("NAME:key=value,...") are parsed and validated here against each
// operation's declared parameters, so every front end (CLI, tests, benchmarks, bindings) gets the same
// names, defaults, limits and error messages.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "apron/errors.hpp"
#include "apron/ops.hpp"
#include "core/registry_parts.hpp"

namespace apron {

const char* to_string(Normalise n) {
    switch (n) {
    case Normalise::none: return "none";
    case Normalise::sum: return "sum";
    case Normalise::book: return "book";
    }
    return "?";
}

std::optional<Normalise> parse_normalise(std::string_view s) {
    if (s == "none") return Normalise::none;
    if (s == "sum") return Normalise::sum;
    if (s == "book") return Normalise::book;
    return std::nullopt;
}

const std::vector<OpInfo>& operations() {
    static const std::vector<OpInfo> all = [] {
        std::vector<OpInfo> ops;
        add_linear_operations(ops);
        add_edge_operations(ops);
        add_morphology_operations(ops);
        add_preset_operations(ops);
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
    auto it = values_.find(name);
    if (it == values_.end()) fail(name, "missing (required)");
    return it->second;
}

namespace {

bool to_double(const std::string& s, double& v) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    v = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size() && errno != ERANGE && std::isfinite(v);
}

const ParamSpec* spec_of(const std::vector<ParamSpec>& specs, const std::string& name) {
    for (const auto& s : specs)
        if (s.name == name) return &s;
    return nullptr;
}

} // namespace

double OpArgs::number(const std::string& name) const {
    double v = 0;
    if (!to_double(raw(name), v)) fail(name, "'" + raw(name) + "' is not a finite number");
    return v;
}

int OpArgs::integer(const std::string& name) const {
    const double v = number(name);
    if (v != std::floor(v) || std::fabs(v) > 1e9) fail(name, "'" + raw(name) + "' is not an integer");
    return int(v);
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

Mask OpArgs::mask(const std::string& name) const {
    try {
        return read_mask_file(raw(name));
    } catch (const Error& e) {
        fail(name, e.what());
    }
}

Mask OpArgs::element(const std::string& name) const {
    try {
        return structuring_element(raw(name));
    } catch (const Error& e) {
        fail(name, e.what());
    }
}

std::vector<double> OpArgs::vector(const std::string& name) const {
    std::vector<double> out;
    std::string token;
    const std::string& s = raw(name);
    auto flush = [&] {
        if (token.empty()) return;
        double v = 0;
        if (!to_double(token, v)) fail(name, "'" + token + "' is not a finite number");
        out.push_back(v);
        token.clear();
    };
    for (char ch : s) {
        if (ch == ':' || ch == ';' || ch == ' ' || ch == '\t') flush();
        else token += ch;
    }
    flush();
    if (out.empty()) fail(name, "expected numbers separated by ':' (e.g. 1:2:1)");
    if (out.size() > std::size_t(max_mask_side)) fail(name, "more than " + std::to_string(max_mask_side) + " weights");
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

OpProgram parse_operation(std::string_view spec) {
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

    OpArgs args(text, values, &info->params);
    // Generic validation from the declarations: required, numeric ranges, choices.
    for (const auto& p : info->params) {
        if (!args.has(p.name)) {
            if (!p.optional) args.fail(p.name, "missing (required)");
            continue;
        }
        switch (p.kind) {
        case ParamKind::number:
        case ParamKind::integer: {
            const double v = p.kind == ParamKind::integer ? args.integer(p.name) : args.number(p.name);
            const bool below = p.min_exclusive ? v <= p.min : v < p.min;
            if (below || v > p.max) {
                auto fmt = [](double x) {
                    std::string s = std::to_string(x);
                    s.erase(s.find_last_not_of('0') + 1);
                    if (!s.empty() && s.back() == '.') s.pop_back();
                    return s;
                };
                std::string range = std::isinf(p.max)  ? (p.min_exclusive ? "> " : ">= ") + fmt(p.min)
                                    : p.min_exclusive ? "> " + fmt(p.min) + " and <= " + fmt(p.max)
                                                      : fmt(p.min) + ".." + fmt(p.max);
                args.fail(p.name, args.text(p.name) + " is out of range (must be " + range + ")");
            }
            break;
        }
        case ParamKind::border: args.border(p.name); break;
        case ParamKind::normalise: args.normalise(p.name); break;
        case ParamKind::choice:
            if (std::find(p.choices.begin(), p.choices.end(), args.text(p.name)) == p.choices.end()) {
                std::string known;
                for (const auto& c : p.choices) known += (known.empty() ? "" : ", ") + c;
                args.fail(p.name, "'" + args.text(p.name) + "' is not one of " + known);
            }
            break;
        default: break;  // masks, elements and vectors are checked when the builder reads them
        }
    }
    OpProgram program = info->build(args);
    program.spec = text;
    return program;
}

} // namespace apron
