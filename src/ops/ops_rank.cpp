// Rank filters over flat structuring elements: median, percentile and rank (SPEC.md "Rank").
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "apron/errors.hpp"
#include "ops/registry_parts.hpp"

namespace apron {
namespace {

// The rank (0-based, of the element's n set cells) each operation asks for.
using RankOf = int (*)(const OpArgs& args, int n);

// SciPy's median_filter: rank n / 2 (the upper of the two middle samples when n is even).
int median_rank(const OpArgs&, int n) { return n / 2; }

// SciPy's percentile_filter: rank int(n * p / 100), and n - 1 for p = 100.
int percentile_rank(const OpArgs& a, int n) {
    const double p = a.number("p");
    const int r = int(std::floor(double(n) * p / 100.0));
    return r >= n ? n - 1 : r;
}

// SciPy's rank_filter: 0 .. n-1, or -n .. -1 counted from the largest.
int explicit_rank(const OpArgs& a, int n) {
    const int r = a.integer("r");
    if (r < -n || r >= n)
        a.fail("r", std::to_string(r) + " is outside -" + std::to_string(n) + ".." + std::to_string(n - 1) +
                        " (the element has " + std::to_string(n) + " cells)");
    return r < 0 ? n + r : r;
}

int set_cells(const Mask& e) {
    return int(std::count_if(e.weights.begin(), e.weights.end(), [](double w) { return w != 0; }));
}

// A volume's window holds at most as many cells as the largest plane's (16.8 M), as a mask file's planes do.
constexpr double max_volume_cells = double(max_mask_side) * max_mask_side;

// The planes stacked into one W x (H * D) table (RankStep), the anchor on the centre cell of plane anchor_z.
// Built field by field: the stack may be taller than a plane's max_mask_side.
Mask stacked(const VolumeElement& v, const OpArgs& a) {
    int w = 0, h = 0;
    for (const Mask& m : v.planes)
        if (!m.weights.empty()) w = m.width, h = m.height;
    const int d = int(v.planes.size());
    if (double(w) * h * d > max_volume_cells)
        a.fail("se", "a volume's element of " + std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(d) +
                         " cells is more than " + std::to_string(max_mask_side * max_mask_side));
    std::vector<double> cells(std::size_t(w) * h * d, 0.0);
    for (int k = 0; k < d; ++k) {
        const Mask& m = v.planes[std::size_t(k)];
        if (m.weights.empty()) continue;  // a plane with no cell set
        std::copy(m.weights.begin(), m.weights.end(), cells.begin() + std::ptrdiff_t(std::size_t(k) * w * h));
    }
    Mask e;
    e.width = w;
    e.height = h * d;
    e.anchor_x = w / 2;
    e.anchor_y = v.anchor_z * h + h / 2;
    e.weights = std::move(cells);
    return e;
}

} // namespace

void add_rank_operations(std::vector<OpInfo>& ops) {
    const ParamSpec se{"se", ParamKind::element, "rect:3x3",
                       "window: the set cells of rect:WxH, cross:WxH, ellipse:WxH (sides 1..4097), disk:R (0..2048), or a 0/1 mask file; "
                       "on volumes rect:WxHxD, cross:WxHxD, ellipsoid:WxHxD (D 1..255), ball:R (0..127) or a 0/1 mask file of "
                       "W H D planes span x, y and z at once (a plane's element filters each plane alone)"};
    const ParamSpec border{"border", ParamKind::border, "reflect", "border mode (constant, nearest, reflect, mirror, wrap)"};
    const ParamSpec value{"value", ParamKind::number, "0", "pixel value outside the image for border=constant (within the float32 range)",
                          -max_float32_parameter, max_float32_parameter};
    const ParamSpec p{"p", ParamKind::number, "", "percentile, 0..100: the sample of rank floor(n * p / 100) of the window's n (n - 1 at 100)", 0, 100};
    const ParamSpec r{"r", ParamKind::integer, "",
                      "rank, 0-based: 0 is the minimum, n-1 the maximum of the window's n samples; -1 .. -n count from the maximum",
                      -double(max_mask_side) * max_mask_side, double(max_mask_side) * max_mask_side};
    const std::string nan_rule =
        " f32 NaN is a missing sample: of the v samples that are not NaN the one of rank floor(rank * v / n) is taken, NaN "
        "where there are none. Samples are ordered with -0 before +0, so the result is one sample's exact bits. On a volume an "
        "element with planes (rect:WxHxD, ball:R, a W H D file) makes the window 3-D: in(x+i-cx, y+j-cy, z+k-cz), every axis "
        "through the border (scipy.ndimage's N-D filter with that footprint).";
    struct Entry {
        const char* name;
        const char* summary;
        std::string details;
        std::vector<ParamSpec> params;
        RankOf rank;
        std::vector<std::string> examples;
    };
    const Entry entries[] = {
        {"median", "median over the window",
         "out(x,y) = the sample of rank n/2 (0-based) of the n samples in(x+i-cx, y+j-cy) over set cells: the median for odd n, "
         "the upper of the two middle samples for even n (scipy.ndimage.median_filter; cv::medianBlur for odd square windows "
         "with border=nearest)." + nan_rule,
         {se, border, value}, median_rank,
         {"median", "median:se=rect:5x5,border=nearest", "median:se=disk:3", "median:se=rect:4x2,border=wrap",
          "median:se=cross:5x5,border=constant,value=7", "median:se=samples/masks/diamond5x5.se,border=mirror",
          "median:se=ball:1,border=nearest"}},
        {"percentile", "percentile over the window",
         "out(x,y) = the sample of rank floor(n p / 100) of the window's n samples, n-1 for p = 100 (scipy.ndimage.percentile_filter)." +
             nan_rule,
         {p, se, border, value}, percentile_rank,
         {"percentile:p=25", "percentile:p=90,se=ellipse:7x5,border=nearest", "percentile:p=100,se=rect:2x3",
          "percentile:p=75,se=rect:3x3x3,border=wrap"}},
        {"rank", "rank-th sample of the window",
         "out(x,y) = the sample of rank r (0-based; negative r counts from the maximum) of the window's n samples "
         "(scipy.ndimage.rank_filter): r = 0 is erode with this border, r = n-1 dilate." + nan_rule,
         {r, se, border, value}, explicit_rank,
         {"rank:r=0", "rank:r=-1,se=disk:2", "rank:r=3,se=rect:3x2,border=mirror"}},
    };
    for (const Entry& e : entries) {
        const RankOf rank_of = e.rank;
        ops.push_back({e.name, "rank", e.summary, e.details, e.params, [rank_of](const OpArgs& a) {
                           RankStep s;
                           s.border = a.border("border");
                           s.border_value = a.number("value");
                           Axes axes = Axes::plane;
                           // A volume's element (rect:WxHxD, ball:R, a 'W H D' file or 3-D weights) or a
                           // plane's: one plane (rect:WxHx1, ball:0 too) is the plane's element.
                           std::vector<Mask> planes = a.element_planes("se");
                           if (planes.size() > 1) {  // x, y and z at once
                               s.depth = int(planes.size());
                               s.element = stacked(volume_of(std::move(planes)), a);
                               axes = Axes::volume;
                           } else {
                               s.element = std::move(planes[0]);
                           }
                           s.rank = rank_of(a, set_cells(s.element));
                           OpProgram program;
                           program.steps.push_back(Step{s, op_input, no_operand, axes});
                           return program;
                       },
                       e.examples});
    }
}

} // namespace apron
