// Operation parameters against their declared limits: every numeric parameter of every operation builds
// at its advertised minimum and maximum and between them (with finite weights), and is refused just
// outside with a message naming the operation and the parameter; numbers, vectors and element sizes
// follow one strict syntax; an error from inside the building names the op and the parameters read.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "apron/errors.hpp"
#include "apron/ops.hpp"

using namespace apron;

namespace {

std::string decimal(double v) {
    char b[40];
    std::snprintf(b, sizeof b, "%.17g", v);
    return b;
}

// `base` (an op spec) with `key` set to `value`, replacing the key's item if it has one.
std::string with_param(const std::string& base, const std::string& key, const std::string& value) {
    OperationText op = split_operation(base);
    op.has_parameters = true;
    bool replaced = false;
    for (auto& item : op.items)
        if (item.first == key) item.second = value, replaced = true;
    if (!replaced) op.items.push_back({key, value});
    return join_operation(op);
}

bool in_range(const ParamSpec& p, double v) { return (p.min_exclusive ? v > p.min : v >= p.min) && v <= p.max; }

// Texts of values inside p's declared range: its ends, points between them, and tiny magnitudes.
std::vector<std::string> values_inside(const ParamSpec& p) {
    std::vector<std::string> out;
    auto add = [&](const std::string& text, double v) {
        if (in_range(p, v) && std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
    };
    if (p.kind == ParamKind::integer) {
        const long long lo = (long long)p.min, hi = (long long)p.max;
        for (long long v : {lo, lo + 1, lo + (hi - lo) / 2, hi - 1, hi}) add(std::to_string(v), double(v));
        return out;
    }
    const double lo = p.min_exclusive ? std::nextafter(p.min, p.max) : p.min, hi = p.max;
    for (double v : {lo, hi, lo + (hi - lo) * 1e-9, lo + (hi - lo) * 0.25, lo / 2 + hi / 2, hi - (hi - lo) * 1e-9, 0.0, 1.0})
        add(decimal(v), v);
    // Tiny magnitudes, also as a user would type them (denormals included).
    for (const char* t : {"1e-300", "1e-320", "5e-324", "-1e-300", "-1e-320", "2.2250738585072014e-308"}) add(t, std::strtod(t, nullptr));
    return out;
}

// Texts of values just outside p's declared range (empty sides are unbounded: the test below refuses that).
std::vector<std::string> values_outside(const ParamSpec& p) {
    std::vector<std::string> out;
    if (p.kind == ParamKind::integer) {
        out.push_back(std::to_string((long long)p.min - 1));
        out.push_back(std::to_string((long long)p.max + 1));
        return out;
    }
    out.push_back(decimal(p.min_exclusive ? p.min : std::nextafter(p.min, -INFINITY)));
    if (p.min_exclusive && p.min == 0) out.push_back("-5e-324");
    out.push_back(decimal(std::nextafter(p.max, INFINITY)));
    return out;
}

void expect_finite(const Mask& m, const std::string& spec) {
    ASSERT_GE(m.width, 1) << spec;
    ASSERT_GE(m.height, 1) << spec;
    ASSERT_EQ(m.weights.size(), std::size_t(m.width) * m.height) << spec;
    std::size_t bad = 0;
    for (double w : m.weights) bad += !std::isfinite(w);
    EXPECT_EQ(bad, 0u) << spec;
}

void expect_valid(const OpProgram& p, const std::string& spec) {
    ASSERT_FALSE(p.steps.empty()) << spec;
    for (const auto& step : p.steps) {
        if (const auto* l = std::get_if<LinearStep>(&step.action)) {
            expect_finite(l->mask, spec);
            EXPECT_TRUE(std::isfinite(l->scale) && std::isfinite(l->delta) && std::isfinite(l->border_value)) << spec;
        } else if (const auto* m = std::get_if<MorphStep>(&step.action)) {
            expect_finite(m->element, spec);
            EXPECT_TRUE(std::isfinite(m->border_value)) << spec;
        } else if (const auto* r = std::get_if<RankStep>(&step.action)) {
            expect_finite(r->element, spec);
            EXPECT_TRUE(std::isfinite(r->border_value)) << spec;
            EXPECT_GE(r->rank, 0) << spec;
            EXPECT_LT(std::size_t(r->rank), r->element.weights.size()) << spec;
        } else {
            const auto& c = std::get<CombineStep>(step.action);
            EXPECT_TRUE(std::isfinite(c.a) && std::isfinite(c.b) && std::isfinite(c.c)) << spec;
        }
    }
}

// Refusals that depend on two parameters together (each value alone is in range): the walk meets them
// when it sets one parameter in an example that fixes the other.
const std::map<std::string, std::vector<std::string>> combination_rules = {
    {"sobel", {"dx + dy must be at least 1", "must exceed dx and dy", "dx + dy + dz must be at least 1", "must exceed dx, dy and dz"}},
    {"scharr", {"exactly one of dx=1, dy=1"}},
    {"prewitt", {"exactly one of dx=1, dy=1"}},
    {"gaussian", {"radius_z: needs sigma_z"}},  // the examples without sigma_z
    {"unsharp", {"radius_z: needs sigma_z"}},
    {"rank", {"(the element has"}},  // r within -n..n-1 of the element's n cells
};
bool is_combination_refusal(const std::string& op, const std::string& message) {
    auto it = combination_rules.find(op);
    if (it == combination_rules.end()) return false;
    for (const auto& rule : it->second)
        if (message.find(rule) != std::string::npos) return true;
    return false;
}

void expect_refused(const std::string& spec, const std::string& param, const std::string& fragment = "") {
    try {
        parse_operation(spec);
        ADD_FAILURE() << "accepted: " << spec;
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(msg.rfind("--op " + spec + ": " + param + ": ", 0), 0u) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        EXPECT_NE(msg.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << msg;
    }
}

// Vectors: each number at the ends of the range and tiny; elements: every shape at extreme sizes.
std::vector<std::string> texts_inside(const ParamSpec& p) {
    if (p.kind == ParamKind::vector) {
        const std::string lo = decimal(p.min), hi = decimal(p.max);
        return {lo, hi, lo + ":" + hi, "1e-320:" + hi + ":5e-324", "1;" + lo + ";-1e-300"};
    }
    if (p.kind == ParamKind::element)
        return {"rect:1x1", "rect:4097x1", "cross:1x4097", "ellipse:4097x3", "ellipse:2x3", "cross:4", "disk:0", "disk:512"};
    return values_inside(p);
}

} // namespace

TEST(RegistryLimits, EveryNumericParameterBuildsAcrossItsAdvertisedRange) {
    int checked = 0;
    for (const auto& op : operations()) {
        for (const auto& p : op.params) {
            if (p.kind != ParamKind::number && p.kind != ParamKind::integer && p.kind != ParamKind::vector &&
                p.kind != ParamKind::element)
                continue;
            // Every numeric parameter is bounded on both sides (`apron ops` shows the range).
            if (p.kind != ParamKind::element) EXPECT_TRUE(std::isfinite(p.min) && std::isfinite(p.max)) << op.name << ":" << p.name;
            if (p.kind != ParamKind::element && (!std::isfinite(p.min) || !std::isfinite(p.max))) continue;
            for (const auto& value : texts_inside(p)) {
                int built = 0, combined = 0;  // combined: refused for another parameter's value (the rule's message)
                for (const auto& example : op.examples) {
                    const std::string spec = with_param(example, p.name, value);
                    try {
                        expect_valid(parse_operation(spec), spec);
                        ++built;
                    } catch (const Error& e) {
                        EXPECT_TRUE(is_combination_refusal(op.name, e.what())) << spec << " -> " << e.what();
                        ++combined;
                        EXPECT_EQ(std::string(e.what()).rfind("--op " + spec + ": ", 0), 0u) << e.what();
                    }
                    ++checked;
                }
                // rank:r at +-4097^2 needs a 4097x4097 window, which no example has: refused by the combination
                // rule in every example, and built by LimitsAreWhereTheBuildersNeedThem.
                EXPECT_GT(built + (op.name == "rank" ? combined : 0), 0) << op.name << ":" << p.name << "=" << value << " built in no example";
            }
        }
    }
    EXPECT_GT(checked, 500);
}

TEST(RegistryLimits, ValuesJustOutsideTheRangeAreRefusedNamingOpAndParameter) {
    for (const auto& op : operations())
        for (const auto& p : op.params) {
            if (p.kind != ParamKind::number && p.kind != ParamKind::integer) continue;
            for (const auto& value : values_outside(p))
                expect_refused(with_param(op.examples.front(), p.name, value), p.name, "out of range");
        }
}

TEST(RegistryLimits, LimitsAreWhereTheBuildersNeedThem) {
    // gaussian: the default radius ceil(3 sigma) of the largest sigma still fits a 4097 mask.
    const auto g = parse_operation("gaussian:sigma=682");
    EXPECT_EQ(std::get<LinearStep>(g.steps[0].action).mask.width, 2 * 2046 + 1);
    expect_refused("gaussian:sigma=683", "sigma", "683 is out of range (must be > 0 and <= 682)");
    expect_refused("unsharp:sigma=1000", "sigma", "out of range");
    expect_refused("gaussian:sigma=1,radius=2049", "radius", "must be 0..2048");
    EXPECT_EQ(std::get<LinearStep>(parse_operation("gaussian:sigma=682,radius=2048").steps[0].action).mask.width, 4097);
    expect_refused("xf-lowpass:alpha=1e-320", "alpha", "must be 1e-30..1e+12");
    expect_refused("box:scale=1e39", "scale", "-3.4e+38..3.4e+38");
    expect_refused("unsharp:sigma=1,amount=1000,scale=1e308", "scale", "out of range");
    expect_refused("separable:row=1e200,column=1e200", "row", "1e200 is out of range");
    expect_refused("dilate:border=constant,value=-1e39", "value", "out of range");
    // rank: r within -n..n-1 of the window's n cells.
    EXPECT_EQ(std::get<RankStep>(parse_operation("rank:r=-1,se=rect:5x3").steps[0].action).rank, 14);
    EXPECT_EQ(std::get<RankStep>(parse_operation("rank:r=-15,se=rect:5x3").steps[0].action).rank, 0);
    expect_refused("rank:r=15,se=rect:5x3", "r", "15 is outside -15..14 (the element has 15 cells)");
    expect_refused("rank:r=-16,se=rect:5x3", "r", "outside");
    EXPECT_EQ(std::get<RankStep>(parse_operation("percentile:p=100,se=rect:4x1").steps[0].action).rank, 3);
    EXPECT_EQ(std::get<RankStep>(parse_operation("percentile:p=50,se=rect:4x1").steps[0].action).rank, 2);
    EXPECT_EQ(std::get<RankStep>(parse_operation("median:se=disk:1").steps[0].action).rank, 2);
}

TEST(RegistryLimits, TinySigmaGivesTheUnitImpulse) {
    // The Gaussian's limit as sigma -> 0; sigma^2 underflows to 0 here, so a formula with x^2 / sigma^2
    // gives 0/0 at the centre.
    for (const char* sigma : {"1e-300", "1e-320", "5e-324", "0.01"}) {
        const std::string spec = std::string("gaussian:sigma=") + sigma;
        const Mask m = std::get<LinearStep>(parse_operation(spec).steps[0].action).mask;
        EXPECT_EQ(m.weights, (std::vector<double>{0, 0, 0, 0, 1, 0, 0, 0, 0})) << spec;
    }
    const Mask wide = std::get<LinearStep>(parse_operation("gaussian:sigma=1e-300,radius=5,sigma_y=1e-320").steps[0].action).mask;
    EXPECT_EQ(wide.width, 11);
    EXPECT_EQ(wide.sum(), 1.0);
    EXPECT_EQ(wide.at(5, wide.height / 2), 1.0);
    const auto u = parse_operation("unsharp:sigma=1e-320,amount=1000");
    expect_valid(u, "unsharp");
}

TEST(RegistryLimits, NumbersFollowOneStrictSyntax) {
    for (const char* ok : {"2", "-0.5", ".5", "2.", "1e-3", "1E+3", "0.25e1"})
        EXPECT_NO_THROW(parse_operation(std::string("box:delta=") + ok)) << ok;
    for (const char* bad : {"+1", " 1", "1 ", "0x10", "0x1p3", "nan", "NaN", "inf", "-inf", "infinity", "1e999",
                            "-1e999", "1e", "e3", ".", "-", "1.2.3", "1_0", "１"})
        expect_refused(std::string("box:delta=") + bad, "delta", "not a finite number");
    expect_refused("box:delta=", "delta", "empty value");
    // Integers: digits only.
    EXPECT_NO_THROW(parse_operation("box:width=007"));
    for (const char* bad : {"3.0", "3.", "1e1", "+3", " 3", "3 ", "0x3", "3e0", "three"})
        expect_refused(std::string("box:width=") + bad, "width", "is not an integer");
    expect_refused("box:width=", "width", "empty value");
    expect_refused("box:width=99999999999999999999", "width", "out of range (must be 1..4097)");
    expect_refused("gaussian:sigma=1,radius=-99999999999", "radius", "out of range");
}

TEST(RegistryLimits, VectorsHaveNoEmptyOrLooseFields) {
    EXPECT_EQ(std::get<LinearStep>(parse_operation("separable:row=1:2:1").steps[0].action).mask.weights.size(), 3u);
    EXPECT_EQ(std::get<LinearStep>(parse_operation("separable:row=1;2;1,column=-1:0:1").steps[0].action).mask.weights.size(), 9u);
    EXPECT_EQ(std::get<LinearStep>(parse_operation("separable:row=-3.5e-320").steps[0].action).mask.weights.size(), 1u);
    for (const char* bad : {"1::2", ":1", "1:", "1;;2", ";1", "1;", ":", "1:;2"})
        expect_refused(std::string("separable:row=") + bad, "row", "is empty");
    for (const char* bad : {"1 2 1", "1: 2", " 1:2", "1:2 ", "+1:2", "0x1:2", "nan:1", "1:inf", "1e999:1"})
        expect_refused(std::string("separable:row=1,column=") + bad, "column", "");
    expect_refused("separable:row=", "row", "empty value");
    std::string many = "1";
    for (int k = 0; k < 4097; ++k) many += ":1";
    expect_refused("separable:row=" + many, "row", "more than 4097 numbers");
}

TEST(RegistryLimits, StructuringElementSizesAreStrictAndBounded) {
    for (const char* shape : {"rect", "cross", "ellipse"}) {
        const std::string s = shape;
        for (const auto& [size, w, h] : std::vector<std::tuple<std::string, int, int>>{
                 {"1x1", 1, 1}, {"4097x1", 4097, 1}, {"1x4097", 1, 4097}, {"5", 5, 5}, {"1", 1, 1}, {"07x3", 7, 3}}) {
            const Mask m = structuring_element(s + ":" + size);
            EXPECT_EQ(m.width, w) << s << ":" << size;
            EXPECT_EQ(m.height, h) << s << ":" << size;
        }
        for (const char* bad : {"3x", "x3", "+3x3", "3x+3", " 3x3", "3x3 ", "3 x3", "3X3", "-3x3", "3.0x3", "", "x", "1e1x3"})
            expect_refused("dilate:se=" + s + ":" + bad, "se", s + ":" + bad);
        // Three sides are a volume's element (rect, cross; ellipsoid, not ellipse), checked as such.
        if (s == "ellipse") expect_refused("dilate:se=ellipse:3x3x3", "se", "ellipse:3x3x3");
        else (void)parse_operation("dilate:se=" + s + ":3x3x3");
        for (const char* bad : {"3x3x0", "3x3x256", "4098x1x1", "3x3x3x3", "3xx3", "3x3x"})
            expect_refused("dilate:se=" + s + (s == "ellipse" ? "oid" : "") + ":" + bad, "se");
        for (const char* bad : {"0x3", "3x0", "4098x1", "1x4098", "0", "99999999999x3"})
            expect_refused("dilate:se=" + s + ":" + bad, "se", "sides must be 1..4097");
    }
    EXPECT_EQ(structuring_element("rect:4097x4097").weights.size(), 4097u * 4097u);
    EXPECT_EQ(structuring_element("disk:0").weights, std::vector<double>{1});
    EXPECT_EQ(structuring_element("disk:2048").width, 4097);
    for (const char* bad : {"disk:2049", "disk:99999999999"}) expect_refused(std::string("dilate:se=") + bad, "se", "the radius must be 0..2048");
    for (const char* bad : {"disk:3x3", "disk:-1", "disk:+2", "disk:", "disk: 2", "disk:2.0", "disk:1e1"})
        expect_refused(std::string("dilate:se=") + bad, "se", "expected a radius R");
    for (const char* bad : {"ball:128", "ball:99999999999"}) expect_refused(std::string("dilate:se=") + bad, "se", "the radius must be 0..127");
    for (const char* bad : {"ball:3x3", "ball:-1", "ball:", "ball:2.0"}) expect_refused(std::string("dilate:se=") + bad, "se", "expected a radius R");
    (void)parse_operation("dilate:se=ball:127");
}

TEST(RegistryLimits, DiskIsTheEuclideanDisk) {
    // scikit-image's morphology.disk(2), and x^2 + y^2 <= R^2 for every R up to 20.
    EXPECT_EQ(structuring_element("disk:2").weights, (std::vector<double>{0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1,
                                                                         0, 1, 1, 1, 0, 0, 0, 1, 0, 0}));
    for (int r = 0; r <= 20; ++r) {
        const Mask m = structuring_element("disk:" + std::to_string(r));
        ASSERT_EQ(m.width, 2 * r + 1);
        ASSERT_EQ(m.height, 2 * r + 1);
        EXPECT_EQ(m.anchor_x, r);
        EXPECT_EQ(m.anchor_y, r);
        for (int y = -r; y <= r; ++y)
            for (int x = -r; x <= r; ++x)
                EXPECT_EQ(m.at(x + r, y + r), x * x + y * y <= r * r ? 1.0 : 0.0) << "R=" << r << " x=" << x << " y=" << y;
    }
}

TEST(RegistryLimits, MorphologyPassesShareOneElement) {
    // 1000 passes of a 4097x4097 element: one 134 MB table, not 134 GB of copies.
    const OpProgram p = parse_operation("erode:se=disk:2048,iterations=1000");
    ASSERT_EQ(p.steps.size(), 1000u);
    const auto& first = std::get<MorphStep>(p.steps[0].action).element.weights;
    for (const Step& s : p.steps) EXPECT_TRUE(std::get<MorphStep>(s.action).element.weights.shares_storage_with(first));
    const OpProgram open = parse_operation("open:se=ellipse:4097x4097,iterations=3");
    ASSERT_EQ(open.steps.size(), 6u);
    EXPECT_TRUE(std::get<MorphStep>(open.steps[5].action).element.weights.shares_storage_with(
        std::get<MorphStep>(open.steps[0].action).element.weights));
    // (a cross: passes of a full rectangle merge into larger rectangles, test_morph_decompose.cpp)
    EXPECT_EQ(parse_operation("gradient:se=cross:3x3,iterations=1000").steps.size(), 2001u);
}

TEST(RegistryLimits, ErrorsFromInsideABuilderNameTheOpAndTheParametersRead) {
    const std::vector<ParamSpec> params = {{"n", ParamKind::integer, "3", "a size", 1, 9}, {"k", ParamKind::number, "1", "unused", 0, 1}};
    auto fake = [&](std::function<OpProgram(const OpArgs&)> build) {
        return OpInfo{"fake", "linear", "s", "d", params, std::move(build)};
    };
    const std::map<std::string, std::string> values = {{"n", "3"}, {"k", "1"}};
    auto message = [&](const OpInfo& op) {
        try {
            build_operation(op, OpArgs("fake:n=3", values, &params));
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    // A Mask that refuses its size: the op spec and the parameter the builder read are named.
    EXPECT_EQ(message(fake([](const OpArgs& a) {
                  return OpProgram{{}, {Step{LinearStep{Mask(a.integer("n") * 5000, 1, {})}}}};
              })),
              "--op fake:n=3: n: mask: size 15000x1 outside 1..4097");
    // Several parameters read, in order; has() does not count as a read.
    EXPECT_EQ(message(fake([](const OpArgs& a) -> OpProgram {
                  (void)a.has("k");
                  (void)a.integer("n");
                  (void)a.number("k");
                  throw Error("mask: weight is not a finite number");
              })),
              "--op fake:n=3: n, k: mask: weight is not a finite number");
    // Messages that already name the op, or start with a parameter read, are not prefixed twice.
    EXPECT_EQ(message(fake([](const OpArgs& a) -> OpProgram { a.fail("n", "too big"); })), "--op fake:n=3: n: too big");
    EXPECT_EQ(message(fake([](const OpArgs& a) -> OpProgram {
                  (void)a.integer("n");
                  throw Error("n: gives a 15000x1 mask");
              })),
              "--op fake:n=3: n: gives a 15000x1 mask");
    EXPECT_EQ(message(fake([](const OpArgs&) -> OpProgram { throw Error("samples/x.kernel: cannot open"); })),
              "--op fake:n=3: samples/x.kernel: cannot open");
    // A real op: a mask file that is not one names the op, the parameter and the file.
    expect_refused("correlate:mask=samples/masks", "mask", "samples/masks: is a directory");
    expect_refused("dilate:se=/nonexistent/e.se", "se", "/nonexistent/e.se");
}
