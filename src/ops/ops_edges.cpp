// Derivative filters: Sobel (any order up to 2, sizes 3/5/7), Scharr and Prewitt. Each is a separable
// integer mask, so on integer images apron computes it exactly.
#include <numeric>

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
    };
    if (with_size) p.push_back({"ksize", ParamKind::choice, "3", "mask size 3, 5 or 7", 0, 0, {"3", "5", "7"}});
    for (auto& q : linear_params(false)) p.push_back(q);
    return p;
}

// Smoothing across the derivative, derivative along it: dx picks the row vector, dy the column vector.
OpProgram derivative(const OpArgs& a, const std::vector<double>& smooth, const std::vector<double>& diff) {
    const int dx = a.integer("dx"), dy = a.integer("dy");
    if (dx + dy != 1) a.fail("dx", "this filter needs exactly one of dx=1, dy=1");
    return linear_program(dx ? outer_mask(smooth, diff) : outer_mask(diff, smooth), a);
}

} // namespace

void add_edge_operations(std::vector<OpInfo>& ops) {
    ops.push_back({"sobel", "edge", "Sobel derivative (OpenCV cv::Sobel weights)",
                   "Separable: row = derivative kernel of order dx, column = of order dy, binomial family of size ksize; "
                   "ksize=3 dx=1: [-1 0 1] x [1 2 1]^T. Negative results saturate on u8/u16: use --out-type f32.",
                   derivative_params(true, 2), [](const OpArgs& a) {
                       const int dx = a.integer("dx"), dy = a.integer("dy"), k = std::stoi(a.text("ksize"));
                       if (dx + dy < 1) a.fail("dx", "dx + dy must be at least 1");
                       if (dx >= k || dy >= k) a.fail("ksize", "must exceed dx and dy");
                       return linear_program(outer_mask(derivative_kernel(k, dy), derivative_kernel(k, dx)), a);
                   },
                   {"sobel:dx=1", "sobel:dx=0,dy=1,border=nearest", "sobel:dx=1,dy=1,ksize=5,scale=0.25,delta=128", "sobel:dx=2,ksize=7,border=wrap", "sobel:dx=1,nan=fill:0,nodata=0,preserve_nan=1"}});
    ops.push_back({"scharr", "edge", "Scharr derivative (dx=1 or dy=1)",
                   "dx=1: [-1 0 1] along x times [3 10 3] along y.", derivative_params(false, 1),
                   [](const OpArgs& a) { return derivative(a, {3, 10, 3}, {-1, 0, 1}); },
                   {"scharr:dx=1", "scharr:dx=0,dy=1,delta=128"}});
    ops.push_back({"prewitt", "edge", "Prewitt derivative (dx=1 or dy=1)",
                   "dx=1: [-1 0 1] along x times [1 1 1] along y.", derivative_params(false, 1),
                   [](const OpArgs& a) { return derivative(a, {1, 1, 1}, {-1, 0, 1}); },
                   {"prewitt:dx=1,delta=128", "prewitt:dx=0,dy=1"}});
}

} // namespace apron
