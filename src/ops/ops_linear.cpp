// Linear operations: user masks, separable vectors, Gaussian, box, sharpen, unsharp, emboss, Laplacian.
#include <algorithm>
#include <cmath>

#include "apron/errors.hpp"
#include "ops/registry_parts.hpp"

namespace apron {

std::vector<ParamSpec> linear_params(bool with_normalise, const char* default_border) {
    constexpr double f32 = max_float32_parameter;
    std::vector<ParamSpec> p = {
        {"border", ParamKind::border, default_border, "border mode: " + std::string(border_mode_names())},
        {"value", ParamKind::number, "0", "pixel value outside the image for border=constant (within the float32 range)", -f32, f32},
        {"scale", ParamKind::number, "1", "out = scale * normalise(sum) + delta (within the float32 range)", -f32, f32},
        {"delta", ParamKind::number, "0", "added after scaling (within the float32 range)", -f32, f32},
    };
    if (with_normalise)
        p.insert(p.begin() + 2, ParamSpec{"normalize", ParamKind::normalise, "none",
                                          "none | sum (divide by the sum of weights) | book (8-bit rule of SPEC.md)"});
    return p;
}

OpProgram linear_program(Mask mask, const OpArgs& args) {
    LinearStep s;
    s.mask = std::move(mask);
    s.border = args.border("border");
    s.border_value = args.number("value");
    s.scale = args.number("scale");
    s.delta = args.number("delta");
    if (args.has("normalize")) s.normalise = args.normalise("normalize");
    return OpProgram{{}, {Step{std::move(s)}}};
}

OpProgram volume_program(Mask plane, const std::vector<double>& depth, const OpArgs& args) {
    if (depth.empty()) return linear_program(std::move(plane), args);
    if (args.has("normalize") && args.normalise("normalize") != Normalise::none)
        args.fail("normalize", "a filter along z (a volume's) takes normalize=none; its weights are the plane's times z's");
    const double plane_sum = plane.sum();
    OpProgram p = linear_program(std::move(plane), args);
    LinearStep& first = std::get<LinearStep>(p.steps[0].action);
    LinearStep along_z = first;
    first.scale = 1, first.delta = 0;
    along_z.mask = Mask(1, int(depth.size()), depth);
    along_z.border_value = first.border_value * plane_sum;
    p.steps.push_back(Step{std::move(along_z), 0, no_operand, Axes::depth});
    return p;
}

// A mask file's program: one plane, the 2-D correlation; several (a volume's mask, "W H D"), each plane's
// correlation moved along z to its offset by a one-tap column, then their sum: out(z) = sum over k of
// plane k correlated with plane z + k - cz (cz = D/2; convolve: the planes reversed, each flipped, and the
// anchor with them). normalize=sum divides by the sum of every weight.
OpProgram mask_program(std::vector<Mask> planes, const OpArgs& args, bool convolve) {
    if (planes.size() == 1) return linear_program(convolve ? flipped(planes[0]) : std::move(planes[0]), args);
    const int d = int(planes.size());
    int cz = d / 2;
    if (convolve) {
        std::reverse(planes.begin(), planes.end());
        for (Mask& m : planes) m = flipped(m);
        cz = d - 1 - cz;
    }
    if (args.has("nan") && args.text("nan") == "ignore")
        args.fail("nan", "nan=ignore is not available with a mask of several planes yet (use nan=fill:V or propagate)");
    const Normalise n = args.has("normalize") ? args.normalise("normalize") : Normalise::none;
    if (n == Normalise::book) args.fail("normalize", "normalize=book is for 2-D masks (a mask of several planes takes none or sum)");
    if (n == Normalise::sum) {
        double sum = 0, abs_sum = 0;
        for (const Mask& m : planes) sum += m.sum(), abs_sum += m.abs_sum();
        if (!(std::fabs(sum) > 1e-12 * abs_sum)) args.fail("normalize", "normalize=sum needs weights that do not sum to 0");
        for (Mask& m : planes) {
            std::vector<double> w(m.weights.begin(), m.weights.end());
            for (double& v : w) v /= sum;
            Mask scaled(m.width, m.height, std::move(w));
            scaled.anchor_x = m.anchor_x, scaled.anchor_y = m.anchor_y;
            m = std::move(scaled);
        }
    }
    const BorderMode border = args.border("border");
    const double value = args.number("value");
    OpProgram p;
    int sum = -1;
    for (int k = 0; k < d; ++k) {
        const Mask& m = planes[std::size_t(k)];
        if (m.abs_sum() == 0) continue;  // a plane of zeros adds nothing
        LinearStep plane;
        plane.mask = m;
        plane.border = border;
        plane.border_value = value;
        p.steps.push_back(Step{std::move(plane)});
        LinearStep along_z;
        std::vector<double> column(std::size_t(d), 0.0);
        column[std::size_t(k)] = 1;
        along_z.mask = Mask(1, d, std::move(column));
        along_z.mask.anchor_y = cz;
        along_z.border = border;
        along_z.border_value = value * m.sum();  // a plane outside the volume: the constant's correlation
        p.steps.push_back(Step{std::move(along_z), int(p.steps.size()) - 1, no_operand, Axes::depth});
        const int moved = int(p.steps.size()) - 1;
        if (sum >= 0) p.steps.push_back(Step{CombineStep{1, 1, 0}, sum, moved});
        sum = int(p.steps.size()) - 1;
    }
    if (sum < 0) return linear_program(Mask(planes[0].width, planes[0].height, std::vector<double>(planes[0].weights.size(), 0.0)), args);
    const double scale = args.number("scale"), delta = args.number("delta");
    if (auto* c = std::get_if<CombineStep>(&p.steps.back().action)) {
        c->a = scale, c->b = scale, c->c = delta;
    } else {
        LinearStep& last = std::get<LinearStep>(p.steps.back().action);
        last.scale = scale, last.delta = delta;
    }
    return p;
}

Mask outer_mask(const std::vector<double>& column, const std::vector<double>& row) {
    std::vector<double> w;
    w.reserve(column.size() * row.size());
    for (double c : column)
        for (double r : row) w.push_back(c * r);
    return Mask(int(row.size()), int(column.size()), std::move(w));
}

Mask mask3x3(std::initializer_list<double> w) { return Mask(3, 3, std::vector<double>(w)); }

namespace {

// exp(-x^2 / (2 sigma^2)) on -radius..radius, normalised to sum 1 (SciPy's gaussian_filter kernel). Where
// sigma^2 underflows (sigma below 1e-154), (x / sigma)^2 keeps the limit, the identity, instead of 0 / 0.
std::vector<double> gaussian_kernel(double sigma, int radius) {
    std::vector<double> k(std::size_t(2 * radius + 1));
    const double s2 = sigma * sigma;
    double sum = 0;
    for (int x = -radius; x <= radius; ++x)
        sum += k[std::size_t(x + radius)] = std::exp(s2 > 0 ? -0.5 * x * x / s2 : -0.5 * (x / sigma) * (x / sigma));
    for (double& v : k) v /= sum;
    return k;
}

int radius_for(const OpArgs& a, const char* radius_name, double sigma) {
    return a.has(radius_name) ? a.integer(radius_name) : int(std::ceil(3.0 * sigma));
}

Mask gaussian_mask(const OpArgs& a) {
    const double sx = a.number("sigma");
    const double sy = a.has("sigma_y") ? a.number("sigma_y") : sx;
    const int rx = radius_for(a, "radius", sx);
    const int ry = a.has("radius_y") ? a.integer("radius_y") : a.has("radius") && !a.has("sigma_y") ? rx
                                                                                                      : radius_for(a, "radius_y", sy);
    return outer_mask(gaussian_kernel(sy, ry), gaussian_kernel(sx, rx));
}

// The default radius ceil(3 sigma) must keep the mask within max_mask_side = 4097 = 2 * 2048 + 1 weights:
// sigma <= 2048 / 3, rounded down to 682.
constexpr double max_gaussian_sigma = 682;
constexpr int max_gaussian_radius = (max_mask_side - 1) / 2;
static_assert(3 * max_gaussian_sigma <= max_gaussian_radius);

std::vector<ParamSpec> gaussian_params() {
    const double r = max_gaussian_radius;
    std::vector<ParamSpec> p = {
        {"sigma", ParamKind::number, "", "standard deviation in pixels (x, and y unless sigma_y); at most 682 so that the "
                                         "default radius ceil(3 sigma) keeps the mask within 4097 pixels", 0, max_gaussian_sigma, {}, false, true},
        {"sigma_y", ParamKind::number, "", "standard deviation along y (limit as sigma)", 0, max_gaussian_sigma, {}, true, true},
        {"radius", ParamKind::integer, "", "half-width of the mask; default ceil(3 sigma); at most 2048 (a 4097-wide mask)", 0, r, {}, true},
        {"radius_y", ParamKind::integer, "", "half-height of the mask; default from sigma_y or radius; at most 2048", 0, r, {}, true},
        {"sigma_z", ParamKind::number, "", "standard deviation along z, between a volume's planes (limit as sigma); absent: "
                                           "each plane alone", 0, max_gaussian_sigma, {}, true, true},
        {"radius_z", ParamKind::integer, "", "half-depth of the mask; default ceil(3 sigma_z); at most 2048", 0, r, {}, true},
    };
    for (auto& q : linear_params(false)) p.push_back(q);
    return p;
}

// The weights along z (sigma_z, radius_z), empty without sigma_z.
std::vector<double> gaussian_depth(const OpArgs& a) {
    if (!a.has("sigma_z")) {
        if (a.has("radius_z")) a.fail("radius_z", "needs sigma_z");
        return {};
    }
    const double sz = a.number("sigma_z");
    return gaussian_kernel(sz, radius_for(a, "radius_z", sz));
}

} // namespace

void add_linear_operations(std::vector<OpInfo>& ops) {
    auto with = [](std::vector<ParamSpec> first, bool normalise) {
        for (auto& q : linear_params(normalise)) first.push_back(q);
        return first;
    };
    ops.push_back({"correlate", "linear", "correlation with a mask file: out(x,y) = sum m(i,j) in(x+i-cx, y+j-cy)",
                   "The mask file format: first line 'W H', then H lines of W numbers; '#' comments. "
                   "Centre cx = W/2, cy = H/2 (as SciPy and OpenCV's default anchor). A volume's mask: first line "
                   "'W H D', then D planes of H lines (plane k weighs plane z + k - D/2; nan=ignore and "
                   "normalize=book take 2-D masks only).",
                   with({{"mask", ParamKind::mask, "", "mask file (GenConv format)"}}, true),
                   [](const OpArgs& a) { return mask_program(a.mask_planes("mask"), a, false); },
                   {"correlate:mask=samples/masks/edge3x3.kernel", "correlate:mask=samples/masks/even4x4.kernel,border=wrap,normalize=sum", "correlate:mask=samples/masks/random7x5.kernel,border=constant,value=7", "correlate:mask=samples/masks/binomial5x5.kernel,border=mirror", "correlate:mask=samples/masks/edge3x3.kernel,normalize=book,border=nearest"}});
    ops.push_back({"convolve", "linear", "true convolution with a mask file (the mask flipped), as scipy.ndimage.convolve",
                   "out(x,y) = sum m(i,j) in(x-i+cx, y-j+cy), for odd and even mask sizes.",
                   with({{"mask", ParamKind::mask, "", "mask file (GenConv format)"}}, true),
                   [](const OpArgs& a) { return mask_program(a.mask_planes("mask"), a, true); },
                   {"convolve:mask=samples/masks/even4x4.kernel", "convolve:mask=samples/masks/random7x5.kernel,border=nearest,scale=0.5,delta=3"}});
    ops.push_back({"separable", "linear", "correlation with column (x) row vectors: m(i,j) = column[j] * row[i]",
                   "Vectors are numbers separated by ':' (or ';'), e.g. row=1:2:1,column=-1:0:1; no field may be empty.",
                   with({{"row", ParamKind::vector, "", "horizontal weights, 1 to 4097 numbers each within the float32 range",
                          -max_float32_parameter, max_float32_parameter},
                         {"column", ParamKind::vector, "1", "vertical weights (default 1: a horizontal-only filter), as row",
                          -max_float32_parameter, max_float32_parameter}},
                        true),
                   [](const OpArgs& a) { return linear_program(outer_mask(a.vector("column"), a.vector("row")), a); },
                   {"separable:row=1:2:1,column=-1:0:1", "separable:row=0.25:0.5:0.25:0.125,border=wrap"}});
    ops.push_back({"gaussian", "linear", "Gaussian blur, two separable passes (three on a volume with sigma_z)",
                   "Weights exp(-x^2/(2 sigma^2)) on -radius..radius normalised to sum 1 in each direction "
                   "(scipy.ndimage.gaussian_filter with radius=); sigma_z adds a pass along z on volumes.",
                   gaussian_params(), [](const OpArgs& a) { return volume_program(gaussian_mask(a), gaussian_depth(a), a); },
                   {"gaussian:sigma=1", "gaussian:sigma=2,sigma_z=1", "gaussian:sigma=2.5,border=mirror", "gaussian:sigma=1,sigma_y=3,border=constant,value=100", "gaussian:sigma=0.7,radius=4,border=wrap", "gaussian:sigma=1.5,nan=ignore,preserve_nan=1"}});
    ops.push_back({"box", "linear", "mean over a W x H box (W x H x D on a volume)",
                   "All weights 1/(W*H); exact for integer images (integer weights over one divisor). With depth D: the "
                   "plane's W x H sums, then their sum over D planes times 1/(W*H*D) in float32.",
                   with({{"width", ParamKind::integer, "3", "box width", 1, max_mask_side},
                         {"height", ParamKind::integer, "", "box height (default: width)", 1, max_mask_side, {}, true},
                         {"depth", ParamKind::integer, "1", "box depth along z, between a volume's planes (1: each plane alone)",
                          1, max_mask_side}},
                        false),
                   [](const OpArgs& a) {
                       const int w = a.integer("width"), h = a.has("height") ? a.integer("height") : w;
                       const int d = a.integer("depth");
                       if (d == 1)
                           return linear_program(Mask(w, h, std::vector<double>(std::size_t(w) * h, 1.0 / (double(w) * h))), a);
                       // The plane's sums (exact on integer images), then z's sum times 1 / (W H D).
                       OpProgram p = volume_program(Mask(w, h, std::vector<double>(std::size_t(w) * h, 1.0)),
                                                    std::vector<double>(std::size_t(d), 1.0), a);
                       std::get<LinearStep>(p.steps.back().action).scale *= 1.0 / (double(w) * h * d);
                       return p;
                   },
                   {"box:width=3", "box:width=3,depth=3", "box:width=4,height=2,border=nearest", "box:width=15,border=wrap", "box:width=5,nan=ignore,nodata=0"}});
    ops.push_back({"sharpen", "linear", "sharpen: identity plus strength times the 4-neighbour Laplacian",
                   "3x3 weights [0 -s 0; -s 1+4s -s; 0 -s 0] with s = strength (s=1: the classic [0 -1 0; -1 5 -1; 0 -1 0]).",
                   with({{"strength", ParamKind::number, "1", "s >= 0", 0, 1000}}, false),
                   [](const OpArgs& a) {
                       const double s = a.number("strength");
                       return linear_program(mask3x3({0, -s, 0, -s, 1 + 4 * s, -s, 0, -s, 0}), a);
                   },
                   {"sharpen", "sharpen:strength=0.8,border=nearest"}});
    {
        auto params = gaussian_params();
        params.insert(params.begin() + 1, ParamSpec{"amount", ParamKind::number, "1", "out = in + amount * (in - gaussian(in))", 0, 1000});
        ops.push_back({"unsharp", "linear", "unsharp mask: in + amount * (in - gaussian(in))",
                       "Equivalent to correlate with (1+amount)*delta - amount*G where G is the gaussian op's mask; "
                       "run as a separable blur and a pixel-wise combination.",
                       params, [](const OpArgs& a) {
                           OpProgram blur = volume_program(gaussian_mask(a), gaussian_depth(a), a);
                           auto& s = std::get<LinearStep>(blur.steps.back().action);
                           s.scale = 1;
                           s.delta = 0;
                           const double amount = a.number("amount");
                           Step combine{CombineStep{(1 + amount) * a.number("scale"), -amount * a.number("scale"), a.number("delta")},
                                        op_input, int(blur.steps.size()) - 1};
                           blur.steps.push_back(combine);
                           return blur;
                       },
                   {"unsharp:sigma=1.5,amount=0.7", "unsharp:sigma=1,amount=2,border=wrap", "unsharp:sigma=1,sigma_z=0.8,amount=1"}});
    }
    ops.push_back({"emboss", "linear", "emboss (relief) 3x3",
                   "Weights [-2 -1 0; -1 1 1; 0 1 2], which sum to 1: flat areas keep their value and edges rise or fall "
                   "in relief (scale and delta shift it, e.g. scale=0.5,delta=64 on u8 keeps both sides of an edge).",
                   linear_params(false), [](const OpArgs& a) { return linear_program(mask3x3({-2, -1, 0, -1, 1, 1, 0, 1, 2}), a); },
                   {"emboss", "emboss:scale=0.5,delta=64,border=nearest"}});
    ops.push_back({"laplacian", "linear", "Laplacian, 4- or 8-neighbour",
                   "neighbours=4: [0 1 0; 1 -4 1; 0 1 0] (scipy.ndimage.laplace, OpenCV ksize=1); "
                   "neighbours=8: [1 1 1; 1 -8 1; 1 1 1].",
                   with({{"neighbours", ParamKind::choice, "4", "4 or 8", -1e300, 1e300, {"4", "8"}}}, false),
                   [](const OpArgs& a) {
                       return linear_program(a.text("neighbours") == "8" ? mask3x3({1, 1, 1, 1, -8, 1, 1, 1, 1})
                                                                         : mask3x3({0, 1, 0, 1, -4, 1, 0, 1, 0}),
                                             a);
                   },
                   {"laplacian", "laplacian:neighbours=8,border=mirror,delta=128"}});
}

} // namespace apron
