// The op registry (include/apron/ops.hpp) as plain Python data: python/apron/_ops.py makes one function per
// operation from it at import time (names, parameters, defaults, limits, docstrings), and
// python/gen_stubs.py writes the type stubs from the same data.
#include <cmath>

#include <nanobind/stl/string.h>

#include "apron/ops.hpp"
#include "bindings.hpp"

namespace apron::python {

namespace {

const char* kind_name(ParamKind k) {
    switch (k) {
    case ParamKind::number: return "number";
    case ParamKind::integer: return "integer";
    case ParamKind::text: return "text";
    case ParamKind::border: return "border";
    case ParamKind::normalise: return "normalise";
    case ParamKind::mask: return "mask";
    case ParamKind::element: return "element";
    case ParamKind::vector: return "vector";
    case ParamKind::choice: return "choice";
    }
    return "?";
}

nb::object bound(double v) { return std::isfinite(v) ? nb::object(nb::float_(v)) : nb::none(); }

nb::dict param_dict(const ParamSpec& p) {
    nb::dict d;
    d["name"] = p.name;
    d["kind"] = kind_name(p.kind);
    d["default"] = p.default_value.empty() ? nb::none() : nb::object(nb::str(p.default_value.c_str()));
    d["help"] = p.help;
    d["min"] = bound(p.min);
    d["max"] = bound(p.max);
    d["min_exclusive"] = p.min_exclusive;
    d["optional"] = p.optional;
    nb::list choices;
    for (const auto& c : p.choices) choices.append(nb::str(c.c_str()));
    d["choices"] = choices;
    return d;
}

} // namespace

void bind_registry(nb::module_& m) {
    m.def("operations", [] {
        nb::list ops;
        for (const OpInfo& op : apron::operations()) {
            nb::dict d;
            d["name"] = op.name;
            d["category"] = op.category;
            d["summary"] = op.summary;
            d["details"] = op.details;
            nb::list params, examples;
            for (const auto& p : op.params) params.append(param_dict(p));
            for (const auto& e : op.examples) examples.append(nb::str(e.c_str()));
            d["params"] = params;
            d["examples"] = examples;
            ops.append(d);
        }
        return ops;
    }, "the op registry: one dict per operation (name, category, summary, details, params, examples)");
}

} // namespace apron::python
