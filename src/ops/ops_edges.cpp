// Derivative filters: Sobel (any order up to 2, sizes 3/5/7), Scharr and Prewitt. Each is a separable
// integer mask, so on integer images apron computes it exactly.
#include <numeric>
#include <optional>

#include "ops/registry_parts.hpp"

namespace apron {
namespace {

// Polynomial product of two coefficient vectors.
std::vector<double> poly_mul(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> c(a.size() + b.size() - 1, 0.0);
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < b.size(); ++j) c[i + j] += a[i] * b[j];
    return c;
}

// Length-`size` kernel of derivative `order`: (1+z)^(size-1-order) (z-1)^order, the binomial family
// OpenCV's getDerivKernels uses (size 3, order 1: [-1 0 1]; order 0: [1 2 1]).
std::vector<double> derivative_kernel(int size, int order) {
    std::vector<double> k{1.0};
    for (int n = 0; n < size - 1 - order; ++n) k = poly_mul(k, {1, 1});
    for (int n = 0; n < order; ++n) k = poly_mul(k, {-1, 1});
    return k;
}

std::vector<ParamSpec> derivative_params(bool with_size, int max_order) {
    std::vector<ParamSpec> p = {
        {"dx", ParamKind::integer, "1", "order of the x derivative", 0, double(max_order)},
        {"dy", ParamKind::integer, "0", "order of the y derivative", 0, double(max_order)},
        {"dz", ParamKind::integer, "", "order of the z derivative on a volume (absent: each plane alone; 0: smoothing "
                                       "along z as across the other derivatives)", 0, double(max_order), {}, true},
    };
    if (with_size) p.push_back({"ksize", ParamKind::choice, "3", "mask size 3, 5 or 7", 0, 0, {"3", "5", "7"}});
    for (auto& q : linear_params(false)) p.push_back(q);
    return p;
}

// dz given: the order along z (its kernel the pass along z), else none (each plane alone).
std::optional<int> z_order(const OpArgs& a) { return a.has("dz") ? std::optional<int>(a.integer("dz")) : std::nullopt; }

// Smoothing across the derivative, derivative along it: dx picks the row vector, dy the column vector, dz
// the vector along z (a volume's: SciPy's sobel along axis 0 of (Z, Y, X)).
OpProgram derivative(const OpArgs& a, const std::vector<double>& smooth, const std::vector<double>& diff) {
    const int dx = a.integer("dx"), dy = a.integer("dy");
    const std::optional<int> dz = z_order(a);
    if (dx + dy + dz.value_or(0) != 1)
        a.fail("dx", dz ? "this filter needs exactly one of dx=1, dy=1, dz=1" : "this filter needs exactly one of dx=1, dy=1");
    const Mask plane = dx ? outer_mask(smooth, diff) : dy ? outer_mask(diff, smooth) : outer_mask(smooth, smooth);
    return volume_program(plane, dz ? (*dz ? diff : smooth) : std::vector<double>{}, a);
}

} // namespace

void add_edge_operations(std::vector<OpInfo>& ops) {
    ops.push_back({"sobel", "edge", "Sobel derivative (OpenCV cv::Sobel weights)",
                   "Separable: row = derivative kernel of order dx, column = of order dy, binomial family of size ksize; "
                   "ksize=3 dx=1: [-1 0 1] x [1 2 1]^T. Negative results saturate on u8/u16: use --out-type f32.",
                   derivative_params(true, 2), [](const OpArgs& a) {
                       const int dx = a.integer("dx"), dy = a.integer("dy"), k = std::stoi(a.text("ksize"));
                       const std::optional<int> dz = z_order(a);
                       if (dx + dy + dz.value_or(0) < 1) a.fail("dx", dz ? "dx + dy + dz must be at least 1" : "dx + dy must be at least 1");
                       if (dx >= k || dy >= k || dz.value_or(0) >= k) a.fail("ksize", dz ? "must exceed dx, dy and dz" : "must exceed dx and dy");
                       const Mask plane = outer_mask(derivative_kernel(k, dy), derivative_kernel(k, dx));
                       return volume_program(plane, dz ? derivative_kernel(k, *dz) : std::vector<double>{}, a);
                   },
                   {"sobel:dx=1", "sobel:dx=0,dz=1", "sobel:dx=0,dy=1,border=nearest", "sobel:dx=1,dy=1,ksize=5,scale=0.25,delta=128", "sobel:dx=2,ksize=7,border=wrap", "sobel:dx=1,nan=fill:0,nodata=0,preserve_nan=1"}});
    ops.push_back({"scharr", "edge", "Scharr derivative (dx=1 or dy=1)",
                   "dx=1: [-1 0 1] along x times [3 10 3] along y.", derivative_params(false, 1),
                   [](const OpArgs& a) { return derivative(a, {3, 10, 3}, {-1, 0, 1}); },
                   {"scharr:dx=1", "scharr:dx=0,dy=1,delta=128", "scharr:dx=0,dz=1"}});
    ops.push_back({"prewitt", "edge", "Prewitt derivative (dx=1 or dy=1)",
                   "dx=1: [-1 0 1] along x times [1 1 1] along y.", derivative_params(false, 1),
                   [](const OpArgs& a) { return derivative(a, {1, 1, 1}, {-1, 0, 1}); },
                   {"prewitt:dx=1,delta=128", "prewitt:dx=0,dy=1", "prewitt:dx=0,dz=1"}});
}

} // namespace apron
