// Rank filters over flat structuring elements: median, percentile and rank (SPEC.md "Rank").
#include <algorithm>
#include <cmath>
#include <string>

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

} // namespace

void add_rank_operations(std::vector<OpInfo>& ops) {
    const ParamSpec se{"se", ParamKind::element, "rect:3x3",
                       "window: the set cells of rect:WxH, cross:WxH, ellipse:WxH (sides 1..4097), disk:R (0..2048), or a 0/1 mask file"};
    const ParamSpec border{"border", ParamKind::border, "reflect", "border mode (constant, nearest, reflect, mirror, wrap)"};
    const ParamSpec value{"value", ParamKind::number, "0", "pixel value outside the image for border=constant (within the float32 range)",
                          -max_float32_parameter, max_float32_parameter};
    const ParamSpec p{"p", ParamKind::number, "", "percentile, 0..100: the sample of rank floor(n * p / 100) of the window's n (n - 1 at 100)", 0, 100};
    const ParamSpec r{"r", ParamKind::integer, "",
                      "rank, 0-based: 0 is the minimum, n-1 the maximum of the window's n samples; -1 .. -n count from the maximum",
                      -double(max_mask_side) * max_mask_side, double(max_mask_side) * max_mask_side};
    const std::string nan_rule =
        " f32 NaN is a missing sample: of the v samples that are not NaN the one of rank floor(rank * v / n) is taken, NaN "
        "where there are none. Samples are ordered with -0 before +0, so the result is one sample's exact bits.";
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
          "median:se=cross:5x5,border=constant,value=7", "median:se=samples/masks/diamond5x5.se,border=mirror"}},
        {"percentile", "percentile over the window",
         "out(x,y) = the sample of rank floor(n p / 100) of the window's n samples, n-1 for p = 100 (scipy.ndimage.percentile_filter)." +
             nan_rule,
         {p, se, border, value}, percentile_rank,
         {"percentile:p=25", "percentile:p=90,se=ellipse:7x5,border=nearest", "percentile:p=100,se=rect:2x3"}},
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
                           s.element = a.element("se");
                           s.rank = rank_of(a, set_cells(s.element));
                           OpProgram program;
                           program.steps.push_back(Step{s, op_input});
                           return program;
                       },
                       e.examples});
    }
}

} // namespace apron
