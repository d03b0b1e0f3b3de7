// Morphology with flat structuring elements: erode, dilate and OpenCV's morphologyEx family.
#include <cmath>
#include <cstdint>
#include <fstream>

#include "apron/errors.hpp"
#include "core/number_text.hpp"
#include "core/registry_parts.hpp"

namespace apron {
namespace {

[[noreturn]] void bad_element(std::string_view spec, const std::string& problem) {
    throw Error("structuring element '" + std::string(spec) + "': " + problem);
}

// A side or radius: digits only (no sign, blank or exponent), within lo..hi.
int parse_count(std::string_view text, std::string_view spec, int lo, int hi, const char* syntax, const char* what,
                const char* why = "") {
    bool over = false;
    const auto v = all_digits(text) ? parse_integer(text, hi, &over) : std::nullopt;
    if (!v) bad_element(spec, std::string("expected ") + syntax);
    if (over || *v < lo) bad_element(spec, std::string(what) + " must be " + std::to_string(lo) + ".." + std::to_string(hi) + why);
    return int(*v);
}

// "WxH" or "N" (square): one 'x' at most, a number on each side of it.
std::pair<int, int> parse_size(std::string_view s, std::string_view spec) {
    const char* syntax = "WxH or N (e.g. rect:5x3, rect:5)";
    const auto x = s.find('x');
    if (x == std::string_view::npos) {
        const int n = parse_count(s, spec, 1, max_mask_side, syntax, "sides");
        return {n, n};
    }
    return {parse_count(s.substr(0, x), spec, 1, max_mask_side, syntax, "sides"),
            parse_count(s.substr(x + 1), spec, 1, max_mask_side, syntax, "sides")};
}

// The Euclidean disk x^2 + y^2 <= R^2 on -R..R (scikit-image's morphology.disk), in exact integers.
Mask disk(int r) {
    const int side = 2 * r + 1;
    Mask m(side, side, std::vector<double>(std::size_t(side) * side, 0.0));
    for (int j = 0; j < side; ++j)
        for (int i = 0; i < side; ++i) {
            const std::int64_t dx = i - r, dy = j - r;
            if (dx * dx + dy * dy <= std::int64_t(r) * r) m.at(i, j) = 1;
        }
    return m;
}

// OpenCV's getStructuringElement(MORPH_ELLIPSE) rule: row i spans c +- round(c * sqrt(1 - dy^2/r^2)).
Mask ellipse(int w, int h) {
    Mask m(w, h, std::vector<double>(std::size_t(w) * h, 0.0));
    const int r = h / 2, c = w / 2;
    const double inv_r2 = r ? 1.0 / (double(r) * r) : 0.0;
    for (int i = 0; i < h; ++i) {
        const int dy = i - r;
        if (std::abs(dy) > r) continue;
        const int dx = int(std::nearbyint(c * std::sqrt(double(r * r - dy * dy) * inv_r2)));
        const int j1 = std::max(c - dx, 0), j2 = std::min(c + dx + 1, w);
        for (int j = j1; j < j2; ++j) m.at(j, i) = 1;
    }
    return m;
}

std::optional<BorderMode> morph_border(const OpArgs& a) {
    const std::string b = a.text("border");
    if (b == "ignore" || b == "none") return std::nullopt;
    return a.border("border");
}

// n times `m` (with the given kind) on the result of the previous step (or `input`).
void repeat(std::vector<Step>& steps, MorphStep m, MorphKind kind, int n, int input) {
    m.kind = kind;
    for (int k = 0; k < n; ++k) steps.push_back(Step{m, k == 0 ? input : int(steps.size()) - 1});
}

using Builder = OpProgram (*)(const MorphStep&, int iterations);

OpProgram build_erode(const MorphStep& m, int n) { OpProgram p; repeat(p.steps, m, MorphKind::erode, n, op_input); return p; }
OpProgram build_dilate(const MorphStep& m, int n) { OpProgram p; repeat(p.steps, m, MorphKind::dilate, n, op_input); return p; }
OpProgram build_open(const MorphStep& m, int n) {
    OpProgram p;
    repeat(p.steps, m, MorphKind::erode, n, op_input);
    repeat(p.steps, m, MorphKind::dilate, n, int(p.steps.size()) - 1);
    return p;
}
OpProgram build_close(const MorphStep& m, int n) {
    OpProgram p;
    repeat(p.steps, m, MorphKind::dilate, n, op_input);
    repeat(p.steps, m, MorphKind::erode, n, int(p.steps.size()) - 1);
    return p;
}
OpProgram build_gradient(const MorphStep& m, int n) {
    OpProgram p;
    repeat(p.steps, m, MorphKind::dilate, n, op_input);
    const int dilated = int(p.steps.size()) - 1;
    repeat(p.steps, m, MorphKind::erode, n, op_input);
    p.steps.push_back(Step{CombineStep{1, -1, 0}, dilated, int(p.steps.size()) - 1});
    return p;
}
OpProgram build_tophat(const MorphStep& m, int n) {
    OpProgram p = build_open(m, n);
    p.steps.push_back(Step{CombineStep{1, -1, 0}, op_input, int(p.steps.size()) - 1});
    return p;
}
OpProgram build_blackhat(const MorphStep& m, int n) {
    OpProgram p = build_close(m, n);
    p.steps.push_back(Step{CombineStep{1, -1, 0}, int(p.steps.size()) - 1, op_input});
    return p;
}

} // namespace

Mask structuring_element(std::string_view spec) {
    const std::string s(spec);
    const auto colon = s.find(':');
    const std::string shape = s.substr(0, colon);
    if (colon != std::string::npos && (shape == "rect" || shape == "cross" || shape == "ellipse")) {
        const auto [w, h] = parse_size(std::string_view(s).substr(colon + 1), spec);
        if (shape == "rect") return Mask(w, h, std::vector<double>(std::size_t(w) * h, 1.0));
        if (shape == "cross") {
            Mask m(w, h, std::vector<double>(std::size_t(w) * h, 0.0));
            for (int i = 0; i < w; ++i) m.at(i, h / 2) = 1;
            for (int j = 0; j < h; ++j) m.at(w / 2, j) = 1;
            return m;
        }
        return ellipse(w, h);
    }
    if (colon != std::string::npos && shape == "disk")
        return disk(parse_count(std::string_view(s).substr(colon + 1), spec, 0, (max_mask_side - 1) / 2,
                                "a radius R (disk:R; ellipse:WxH for other sizes)", "the radius",
                                " (the disk is (2R+1)x(2R+1), at most 4097x4097)"));
    if (colon != std::string::npos && !std::ifstream(s))
        throw Error("structuring element '" + s + "': unknown shape '" + shape +
                    "' (use rect:WxH, cross:WxH, ellipse:WxH, disk:R or a mask file)");
    Mask m = read_mask_file(s);
    bool any = false;
    for (double& v : m.weights) {
        if (v != 0 && v != 1) throw Error(s + ": structuring element weights must be 0 or 1");
        any = any || v != 0;
    }
    if (!any) throw Error(s + ": structuring element has no cell set to 1");
    return m;
}

void add_morphology_operations(std::vector<OpInfo>& ops) {
    const std::vector<ParamSpec> params = {
        {"se", ParamKind::element, "rect:3x3",
         "structuring element: rect:WxH, cross:WxH, ellipse:WxH (sides 1..4097), disk:R (0..2048), or a 0/1 mask file"},
        {"iterations", ParamKind::integer, "1",
         "times each erosion/dilation is applied (the passes share one element table)", 1, 1000},
        {"border", ParamKind::text, "ignore", "ignore (pixels outside the image do not count) or a border mode"},
        {"value", ParamKind::number, "0", "pixel value outside the image for border=constant (within the float32 range)",
         -max_float32_parameter, max_float32_parameter},
    };
    struct Entry { const char* name; const char* summary; const char* details; Builder build; };
    // Examples per shape class: full rectangle (separable), cross, ellipse, file, border modes, iterations.
    const auto examples = [](const std::string& n) {
        return std::vector<std::string>{n, n + ":se=rect:5x3", n + ":se=cross:5x5,border=nearest", n + ":se=ellipse:7x5",
                                        n + ":se=samples/masks/diamond5x5.se,border=constant,value=9",
                                        n + ":se=rect:4x2,iterations=2,border=reflect", n + ":se=disk:2,border=wrap"};
    };
    const Entry entries[] = {
        {"dilate", "maximum over the structuring element", "out(x,y) = max in(x+i-cx, y+j-cy) over set cells (cv::dilate)", build_dilate},
        {"erode", "minimum over the structuring element", "out(x,y) = min in(x+i-cx, y+j-cy) over set cells (cv::erode)", build_erode},
        {"open", "erode then dilate", "cv::morphologyEx MORPH_OPEN", build_open},
        {"close", "dilate then erode", "cv::morphologyEx MORPH_CLOSE", build_close},
        {"gradient", "dilate minus erode", "cv::morphologyEx MORPH_GRADIENT (saturating on integer types)", build_gradient},
        {"tophat", "input minus its opening", "cv::morphologyEx MORPH_TOPHAT", build_tophat},
        {"blackhat", "closing minus the input", "cv::morphologyEx MORPH_BLACKHAT", build_blackhat},
    };
    for (const auto& e : entries) {
        const Builder build = e.build;
        ops.push_back({e.name, "morphology", e.summary, e.details, params, [build](const OpArgs& a) {
                           MorphStep m;
                           m.border = morph_border(a);  // first, for a clear message
                           m.border_value = a.number("value");
                           m.element = a.element("se");
                           // Every pass shares this element's table (SharedValues), so iterations cost
                           // time, not memory.
                           const int n = a.integer("iterations");
                           return build(m, n);
                       },
                       examples(e.name)});
    }
}

} // namespace apron
