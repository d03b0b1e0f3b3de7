// Morphology with flat structuring elements: erode, dilate and OpenCV's morphologyEx family.
#include <algorithm>
#include <array>
#include <optional>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <utility>

#include "apron/errors.hpp"
#include "core/number_text.hpp"
#include "ops/registry_parts.hpp"

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

// Passes of a full rectangle merged into one step: as many as keep each side within 1025 cells. Every
// backend's rectangle kernel is O(1) per pixel at any size (CUDA: the fused tile up to 64, separable passes
// beyond), so one larger step costs about what one pass does; the cap keeps the element's table (W x H
// cells) within 8 MB. 1: no merge.
constexpr int merged_rect_side = 1025;

// n passes of a full W x H rectangle with anchor (ax, ay) equal one pass of the (n(W-1)+1) x (n(H-1)+1)
// rectangle with anchor (n ax, n ay) when outside pixels are ignored. Per axis (the rectangle is a product
// of intervals, so the axes are independent), one pass takes offsets [lo, hi] = [-ax, W-1-ax], and
// lo <= 0 <= hi because the anchor is a cell of the element. Two passes read in(x + i1 + i2) over the i1,
// i2 in [lo, hi] whose intermediate pixel m = x + i2 is inside the image; the merged pass reads in(t) over
// t = x + k inside the image, k in [2lo, 2hi]. Every such t has an m: for k >= 0 take i2 = min(k, hi), so
// i1 = k - i2 = max(0, k - hi) lies in [0, hi] (k <= 2hi), within [lo, hi], and m lies between x and t, both
// inside the image (an interval), so m is inside; k < 0 likewise with lo. Induction gives n passes. With a
// border mode the second pass reads the border of the first pass's result, not of the input (reflect of a
// dilated image is not the dilation of the reflected one near the edges): no merge then.
int passes_per_merged_step(const MorphStep& m, int n) {
    const Mask& e = m.element;
    if (m.border || n < 2 || e.width > merged_rect_side || e.height > merged_rect_side) return 1;
    for (double w : e.weights)
        if (w == 0) return 1;
    int k = n;
    if (e.width > 1) k = std::min(k, (merged_rect_side - 1) / (e.width - 1));
    if (e.height > 1) k = std::min(k, (merged_rect_side - 1) / (e.height - 1));
    return std::max(k, 1);
}

// The full rectangle of `passes` passes of the full rectangle `e`, anchored at passes x e's anchor.
Mask grown_rectangle(const Mask& e, int passes) {
    const int w = passes * (e.width - 1) + 1, h = passes * (e.height - 1) + 1;
    Mask g(w, h, std::vector<double>(std::size_t(w) * h, 1.0));
    g.anchor_x = passes * e.anchor_x;
    g.anchor_y = passes * e.anchor_y;
    return g;
}

// Cells (dx, dy, dz) about the centre of a W x H x D box where `inside` holds, as planes.
template <class Inside>
std::vector<Mask> element_of(int w, int h, int d, Inside inside) {
    std::vector<Mask> planes;
    for (int k = 0; k < d; ++k) {
        Mask m(w, h, std::vector<double>(std::size_t(w) * h, 0.0));
        for (int j = 0; j < h; ++j)
            for (int i = 0; i < w; ++i)
                if (inside(i - w / 2, j - h / 2, k - d / 2)) m.at(i, j) = 1;
        planes.push_back(std::move(m));
    }
    return planes;
}

// "WxHxD": three sides.
std::array<int, 3> parse_volume_size(std::string_view s, std::string_view spec) {
    const char* syntax = "WxHxD (e.g. rect:5x5x3)";
    std::array<int, 3> v{};
    for (int k = 0; k < 3; ++k) {
        const auto x = s.find('x');
        if ((k < 2) == (x == std::string_view::npos)) bad_element(spec, std::string("expected ") + syntax);
        v[std::size_t(k)] = parse_count(s.substr(0, x), spec, 1, k == 2 ? max_element_depth : max_mask_side, syntax, "sides");
        s = k < 2 ? s.substr(x + 1) : std::string_view{};
    }
    return v;
}

// A volume's element from its text: rect:WxHxD, cross:WxHxD (the three axes' lines through the centre),
// ellipsoid:WxHxD, ball:R (scikit-image's morphology.ball: x^2 + y^2 + z^2 <= R^2); nullopt for a plane's.
std::optional<std::vector<Mask>> volume_shape(std::string_view spec) {
    const std::string s(spec);
    const auto colon = s.find(':');
    if (colon == std::string::npos) return std::nullopt;
    const std::string shape = s.substr(0, colon);
    const std::string_view rest = std::string_view(s).substr(colon + 1);
    if (shape == "ball") {
        const int r = parse_count(rest, spec, 0, (max_element_depth - 1) / 2, "a radius R (ball:R)", "the radius",
                                  " (the ball is (2R+1)^3, at most 255 planes deep)");
        const std::int64_t r2 = std::int64_t(r) * r;
        return element_of(2 * r + 1, 2 * r + 1, 2 * r + 1, [r2](std::int64_t x, std::int64_t y, std::int64_t z) {
            return x * x + y * y + z * z <= r2;
        });
    }
    if ((shape != "rect" && shape != "cross" && shape != "ellipsoid") || std::count(rest.begin(), rest.end(), 'x') != 2)
        return std::nullopt;
    const auto [w, h, d] = parse_volume_size(rest, spec);
    if (shape == "rect") return element_of(w, h, d, [](int, int, int) { return true; });
    if (shape == "cross")
        return element_of(w, h, d, [](int x, int y, int z) { return (x == 0) + (y == 0) + (z == 0) >= 2; });
    // Semi-axes (side - 1) / 2 about the centre (a side of 1: that axis's offset 0 alone).
    const double a = (w - 1) / 2.0, b = (h - 1) / 2.0, c = (d - 1) / 2.0;
    auto term = [](int v, double semi) { return semi > 0 ? (v / semi) * (v / semi) : (v == 0 ? 0.0 : 2.0); };
    return element_of(w, h, d, [=](int x, int y, int z) { return term(x, a) + term(y, b) + term(z, c) <= 1.0 + 1e-12; });
}

// The element within the box of its set cells, its anchor kept on the same cell (ball:R's planes are
// (2R+1)^2 masks holding smaller disks: each part then reads no more than its own disk).
Mask cropped(const Mask& m) {
    int x0 = m.width, y0 = m.height, x1 = -1, y1 = -1;
    for (int j = 0; j < m.height; ++j)
        for (int i = 0; i < m.width; ++i)
            if (m.at(i, j) != 0) x0 = std::min(x0, i), x1 = std::max(x1, i), y0 = std::min(y0, j), y1 = std::max(y1, j);
    std::vector<double> w;
    for (int j = y0; j <= y1; ++j)
        for (int i = x0; i <= x1; ++i) w.push_back(m.at(i, j));
    Mask c(x1 - x0 + 1, y1 - y0 + 1, std::move(w));
    c.anchor_x = m.anchor_x - x0;
    c.anchor_y = m.anchor_y - y0;
    return c;
}

bool same_mask(const Mask& p, const Mask& q) {
    return p.width == q.width && p.height == q.height && p.anchor_x == q.anchor_x && p.anchor_y == q.anchor_y &&
           p.weights == q.weights;
}

// One erosion or dilation by a volume's element, as steps (SPEC.md "Volumes"): the planes with the same
// element form a part; each part is that element on every plane, then along z the column of its planes'
// offsets (skipped where it is a single point at the centre), and the parts' results meet in a max (dilate)
// or min (erode). A rect:WxHxD is one part: a plane rectangle and a column of D. Returns the result's index.
int append_volume_morph(std::vector<Step>& steps, MorphStep m, const VolumeElement& e, int input) {
    const int d = int(e.planes.size());
    std::vector<std::pair<Mask, std::vector<int>>> parts;  // a plane element, the planes (k) that have it
    for (int k = 0; k < d; ++k) {
        if (e.planes[std::size_t(k)].weights.empty()) continue;
        const Mask plane = cropped(e.planes[std::size_t(k)]);
        auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& part) { return same_mask(part.first, plane); });
        if (it == parts.end()) parts.push_back({plane, {k}});
        else it->second.push_back(k);
    }
    int result = -1;
    for (const auto& [plane, ks] : parts) {
        int at = input;
        if (!(plane.width == 1 && plane.height == 1 && plane.anchor_x == 0 && plane.anchor_y == 0)) {  // the cell itself
            MorphStep s = m;
            s.element = plane;
            steps.push_back(Step{s, at});
            at = int(steps.size()) - 1;
        }
        if (!(ks.size() == 1 && ks[0] == e.anchor_z)) {
            std::vector<double> column(std::size_t(d), 0.0);
            for (const int k : ks) column[std::size_t(k)] = 1;
            MorphStep s = m;
            s.element = Mask(1, d, std::move(column));
            s.element.anchor_y = e.anchor_z;
            steps.push_back(Step{s, at, no_operand, Axes::depth});
            at = int(steps.size()) - 1;
        }
        if (at == input) {  // the element is the centre alone: the input as it is
            steps.push_back(Step{CombineStep{1, 0, 0}, input});
            at = int(steps.size()) - 1;
        }
        if (result >= 0) {
            CombineStep meet{1, 1, 0, m.kind == MorphKind::dilate ? CombineForm::max : CombineForm::min};
            steps.push_back(Step{meet, result, at});
            at = int(steps.size()) - 1;
        }
        result = at;
    }
    return result;
}

// n times `m` (with the given kind) on the result of the previous step (or `input`); consecutive passes of a
// full rectangle with ignored borders become fewer, larger rectangles (passes_per_merged_step). With a
// volume's element, each pass is append_volume_morph's steps.
void repeat(std::vector<Step>& steps, MorphStep m, MorphKind kind, int n, int input, const std::optional<VolumeElement>& volume) {
    m.kind = kind;
    if (volume) {
        for (int j = 0; j < n; ++j) input = append_volume_morph(steps, m, *volume, input);
        return;
    }
    const int k = passes_per_merged_step(m, n);
    if (k > 1) {
        MorphStep full = m, rest = m;
        full.element = grown_rectangle(m.element, k);  // shared by every merged step
        if (n % k) rest.element = grown_rectangle(m.element, n % k);
        for (int done = 0; done < n; done += k)
            steps.push_back(Step{n - done >= k ? full : rest, done == 0 ? input : int(steps.size()) - 1});
        return;
    }
    for (int j = 0; j < n; ++j) steps.push_back(Step{m, j == 0 ? input : int(steps.size()) - 1});
}

using Volume = std::optional<VolumeElement>;
using Builder = OpProgram (*)(const MorphStep&, const Volume&, int iterations);

OpProgram build_erode(const MorphStep& m, const Volume& v, int n) { OpProgram p; repeat(p.steps, m, MorphKind::erode, n, op_input, v); return p; }
OpProgram build_dilate(const MorphStep& m, const Volume& v, int n) { OpProgram p; repeat(p.steps, m, MorphKind::dilate, n, op_input, v); return p; }
OpProgram build_open(const MorphStep& m, const Volume& v, int n) {
    OpProgram p;
    repeat(p.steps, m, MorphKind::erode, n, op_input, v);
    repeat(p.steps, m, MorphKind::dilate, n, int(p.steps.size()) - 1, v);
    return p;
}
OpProgram build_close(const MorphStep& m, const Volume& v, int n) {
    OpProgram p;
    repeat(p.steps, m, MorphKind::dilate, n, op_input, v);
    repeat(p.steps, m, MorphKind::erode, n, int(p.steps.size()) - 1, v);
    return p;
}
OpProgram build_gradient(const MorphStep& m, const Volume& v, int n) {
    OpProgram p;
    repeat(p.steps, m, MorphKind::dilate, n, op_input, v);
    const int dilated = int(p.steps.size()) - 1;
    repeat(p.steps, m, MorphKind::erode, n, op_input, v);
    p.steps.push_back(Step{CombineStep{1, -1, 0}, dilated, int(p.steps.size()) - 1});
    return p;
}
OpProgram build_tophat(const MorphStep& m, const Volume& v, int n) {
    OpProgram p = build_open(m, v, n);
    p.steps.push_back(Step{CombineStep{1, -1, 0}, op_input, int(p.steps.size()) - 1});
    return p;
}
OpProgram build_blackhat(const MorphStep& m, const Volume& v, int n) {
    OpProgram p = build_close(m, v, n);
    p.steps.push_back(Step{CombineStep{1, -1, 0}, int(p.steps.size()) - 1, op_input});
    return p;
}

} // namespace

VolumeElement volume_of(std::vector<Mask> planes) {
    VolumeElement e;
    e.anchor_z = int(planes.size()) / 2;
    for (Mask& m : planes) {
        const bool any = std::any_of(m.weights.begin(), m.weights.end(), [](double v) { return v != 0; });
        e.planes.push_back(any ? std::move(m) : Mask());
    }
    return e;
}

namespace {

// The 2-D shapes (rect:WxH, cross:WxH, ellipse:WxH, disk:R); nullopt for other text.
std::optional<Mask> plane_shape(std::string_view spec) {
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
    return std::nullopt;
}

// Text with a ':' that names no shape and no file.
[[noreturn]] void unknown_shape(const std::string& spec, const char* shapes) {
    throw Error("structuring element '" + spec + "': unknown shape '" + spec.substr(0, spec.find(':')) + "' (use " +
                shapes + " or a mask file)");
}

} // namespace

Mask structuring_element(std::string_view spec) {
    if (auto m = plane_shape(spec)) return std::move(*m);
    const std::string s(spec);
    if (s.find(':') != std::string::npos && !std::ifstream(s)) unknown_shape(s, "rect:WxH, cross:WxH, ellipse:WxH, disk:R");
    return checked_element(read_mask_file(s), s);
}

std::vector<Mask> structuring_element_planes(std::string_view spec) {
    if (auto planes = volume_shape(spec)) return std::move(*planes);  // first: rect:WxHxD is no rect:WxH
    if (auto m = plane_shape(spec)) return {std::move(*m)};
    const std::string s(spec);
    if (s.find(':') != std::string::npos && !std::ifstream(s))
        unknown_shape(s, "rect:WxH, cross:WxH, ellipse:WxH, disk:R, rect:WxHxD, cross:WxHxD, ellipsoid:WxHxD, ball:R");
    return checked_element_planes(read_mask_planes_file(s), s);
}

Mask checked_element(Mask m, const std::string& source) {
    bool any = false;
    for (const double v : std::as_const(m.weights)) {  // const: no copy of a shared table
        if (v != 0 && v != 1) throw Error(source + ": structuring element weights must be 0 or 1");
        any = any || v != 0;
    }
    if (!any) throw Error(source + ": structuring element has no cell set to 1");
    return m;
}

std::vector<Mask> checked_element_planes(std::vector<Mask> planes, const std::string& source) {
    check_mask_planes(planes, source);
    if (planes.size() > std::size_t(max_element_depth))
        throw Error(source + ": structuring element of " + std::to_string(planes.size()) + " planes (at most " +
                    std::to_string(max_element_depth) + ")");
    bool any = false;
    for (const Mask& m : planes)
        for (const double v : m.weights) {
            if (v != 0 && v != 1) throw Error(source + ": structuring element weights must be 0 or 1");
            any = any || v != 0;
        }
    if (!any) throw Error(source + ": structuring element has no cell set to 1");
    return planes;
}

void add_morphology_operations(std::vector<OpInfo>& ops) {
    const std::vector<ParamSpec> params = {
        {"se", ParamKind::element, "rect:3x3",
         "structuring element: rect:WxH, cross:WxH, ellipse:WxH (sides 1..4097), disk:R (0..2048), or a 0/1 mask file; "
         "on volumes rect:WxHxD, cross:WxHxD, ellipsoid:WxHxD (D 1..255), ball:R (0..127) or a 0/1 'W H D' mask file (D 1..255)"},
        {"iterations", ParamKind::integer, "1",
         "times each erosion/dilation is applied (the passes share one element table; n passes of a full W x H rectangle with border=ignore run as one rectangle of n(W-1)+1 x n(H-1)+1, as OpenCV does)", 1, 1000},
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
        {"dilate", "maximum over the structuring element",
         "out(x,y) = max in(x+i-cx, y+j-cy) over set cells (cv::dilate). f32: NaN is a missing sample, skipped; NaN where "
         "the element covers only NaN (or only ignored outside pixels); -inf and +inf are kept", build_dilate},
        {"erode", "minimum over the structuring element",
         "out(x,y) = min in(x+i-cx, y+j-cy) over set cells (cv::erode). f32: NaN is a missing sample, skipped; NaN where "
         "the element covers only NaN (or only ignored outside pixels); -inf and +inf are kept", build_erode},
        {"open", "erode then dilate", "cv::morphologyEx MORPH_OPEN", build_open},
        {"close", "dilate then erode", "cv::morphologyEx MORPH_CLOSE", build_close},
        {"gradient", "dilate minus erode",
         "cv::morphologyEx MORPH_GRADIENT (saturating on integer types; f32: NaN where the element covers only NaN, and inf - inf is NaN)",
         build_gradient},
        {"tophat", "input minus its opening", "cv::morphologyEx MORPH_TOPHAT (f32: NaN where either is NaN)", build_tophat},
        {"blackhat", "closing minus the input", "cv::morphologyEx MORPH_BLACKHAT (f32: NaN where either is NaN)", build_blackhat},
    };
    for (const auto& e : entries) {
        const Builder build = e.build;
        ops.push_back({e.name, "morphology", e.summary, e.details, params, [build](const OpArgs& a) {
                           MorphStep m;
                           m.border = morph_border(a);  // first, for a clear message
                           m.border_value = a.number("value");
                           // A volume's element (rect:WxHxD, ball:R, a 'W H D' file or 3-D weights) or a
                           // plane's: one plane is the plane's element, whatever its text.
                           std::vector<Mask> planes = a.element_planes("se");
                           std::optional<VolumeElement> volume;
                           if (planes.size() > 1) volume = volume_of(std::move(planes));
                           else m.element = std::move(planes[0]);
                           // Every pass shares this element's table (SharedValues), so iterations cost
                           // time, not memory.
                           const int n = a.integer("iterations");
                           return build(m, volume, n);
                       },
                       examples(e.name)});
    }
}

} // namespace apron
