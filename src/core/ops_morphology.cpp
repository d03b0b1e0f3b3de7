// Morphology with flat structuring elements: erode, dilate and OpenCV's morphologyEx family.
#include <cmath>
#include <fstream>

#include "apron/errors.hpp"
#include "core/registry_parts.hpp"

namespace apron {
namespace {

// "WxH" or "N" (square).
std::pair<int, int> parse_size(std::string_view s, std::string_view spec) {
    const std::string text(s);
    const auto x = text.find('x');
    auto num = [&](const std::string& t) {
        if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 5)
            throw Error("structuring element '" + std::string(spec) + "': size must be WxH or N");
        const int v = std::stoi(t);
        if (v < 1 || v > max_mask_side)
            throw Error("structuring element '" + std::string(spec) + "': sides must be 1.." + std::to_string(max_mask_side));
        return v;
    };
    if (x == std::string::npos) return {num(text), num(text)};
    return {num(text.substr(0, x)), num(text.substr(x + 1))};
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

// n times `kind` on the result of the previous step (or the input).
void repeat(std::vector<Step>& steps, MorphKind kind, const OpArgs& a, int input) {
    MorphStep m{a.element("se"), kind, morph_border(a), a.number("value")};
    for (int n = 0; n < a.integer("iterations"); ++n) {
        steps.push_back(Step{m, n == 0 ? input : int(steps.size()) - 1});
    }
}

using Builder = OpProgram (*)(const OpArgs&);

OpProgram build_erode(const OpArgs& a) { OpProgram p; repeat(p.steps, MorphKind::erode, a, op_input); return p; }
OpProgram build_dilate(const OpArgs& a) { OpProgram p; repeat(p.steps, MorphKind::dilate, a, op_input); return p; }
OpProgram build_open(const OpArgs& a) {
    OpProgram p;
    repeat(p.steps, MorphKind::erode, a, op_input);
    repeat(p.steps, MorphKind::dilate, a, int(p.steps.size()) - 1);
    return p;
}
OpProgram build_close(const OpArgs& a) {
    OpProgram p;
    repeat(p.steps, MorphKind::dilate, a, op_input);
    repeat(p.steps, MorphKind::erode, a, int(p.steps.size()) - 1);
    return p;
}
OpProgram build_gradient(const OpArgs& a) {
    OpProgram p;
    repeat(p.steps, MorphKind::dilate, a, op_input);
    const int dilated = int(p.steps.size()) - 1;
    repeat(p.steps, MorphKind::erode, a, op_input);
    p.steps.push_back(Step{CombineStep{1, -1, 0}, dilated, int(p.steps.size()) - 1});
    return p;
}
OpProgram build_tophat(const OpArgs& a) {
    OpProgram p = build_open(a);
    p.steps.push_back(Step{CombineStep{1, -1, 0}, op_input, int(p.steps.size()) - 1});
    return p;
}
OpProgram build_blackhat(const OpArgs& a) {
    OpProgram p = build_close(a);
    p.steps.push_back(Step{CombineStep{1, -1, 0}, int(p.steps.size()) - 1, op_input});
    return p;
}

} // namespace

Mask structuring_element(std::string_view spec) {
    const std::string s(spec);
    const auto colon = s.find(':');
    const std::string shape = s.substr(0, colon);
    if (colon != std::string::npos && (shape == "rect" || shape == "cross" || shape == "ellipse" || shape == "disk")) {
        auto [w, h] = parse_size(std::string_view(s).substr(colon + 1), spec);
        if (shape == "disk" && s.find('x', colon) == std::string::npos) w = h = 2 * w + 1;  // disk:R
        if (shape == "rect") return Mask(w, h, std::vector<double>(std::size_t(w) * h, 1.0));
        if (shape == "cross") {
            Mask m(w, h, std::vector<double>(std::size_t(w) * h, 0.0));
            for (int i = 0; i < w; ++i) m.at(i, h / 2) = 1;
            for (int j = 0; j < h; ++j) m.at(w / 2, j) = 1;
            return m;
        }
        return ellipse(w, h);
    }
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
        {"se", ParamKind::element, "rect:3x3", "structuring element: rect:WxH, cross:WxH, ellipse:WxH, disk:R, or a 0/1 mask file"},
        {"iterations", ParamKind::integer, "1", "times each erosion/dilation is applied", 1, 1000},
        {"border", ParamKind::text, "ignore", "ignore (pixels outside the image do not count) or a border mode"},
        {"value", ParamKind::number, "0", "pixel value outside the image for border=constant"},
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
                           // Validate the border once, up front, for a clear message.
                           morph_border(a);
                           return build(a);
                       },
                       examples(e.name)});
    }
}

} // namespace apron
