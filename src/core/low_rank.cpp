// Truncated SVD of a mask by one-sided Jacobi rotations (Hestenes): the columns of the taller side are
// rotated in pairs until they are orthogonal; their norms are then the singular values. Masks are at most
// a few hundred wide and the result is computed once per plan, so a method that is short, dependable and
// accurate to a few ulps is worth more than a fast one.
#include "core/low_rank.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <mutex>
#include <numeric>

namespace apron {
namespace {

struct Svd {
    std::vector<double> sigma;               // largest first
    std::vector<std::vector<double>> left;   // left[t]: length rows
    std::vector<std::vector<double>> right;  // right[t]: length cols
};

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (std::size_t k = 0; k < a.size(); ++k) s += a[k] * b[k];
    return s;
}

// cols[c] is column c of a rows x cols matrix with rows >= cols.
Svd jacobi_svd(std::vector<std::vector<double>> cols, int rows) {
    const int n = int(cols.size());
    std::vector<std::vector<double>> v(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(n), 0.0));
    for (int k = 0; k < n; ++k) v[std::size_t(k)][std::size_t(k)] = 1;
    auto rotate = [](std::vector<double>& p, std::vector<double>& q, double c, double s) {
        for (std::size_t r = 0; r < p.size(); ++r) {
            const double a = p[r], b = q[r];
            p[r] = c * a - s * b;
            q[r] = s * a + c * b;
        }
    };
    for (int sweep = 0; sweep < 40; ++sweep) {
        double worst = 0;
        for (int p = 0; p < n; ++p)
            for (int q = p + 1; q < n; ++q) {
                auto &cp = cols[std::size_t(p)], &cq = cols[std::size_t(q)];
                const double alpha = dot(cp, cp), beta = dot(cq, cq), gamma = dot(cp, cq);
                if (gamma == 0 || alpha == 0 || beta == 0) continue;
                const double cosine = std::fabs(gamma) / std::sqrt(alpha * beta);
                if (cosine < 1e-15) continue;
                worst = std::max(worst, cosine);
                const double zeta = (beta - alpha) / (2 * gamma);
                const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
                const double c = 1 / std::sqrt(1 + t * t), s = c * t;
                rotate(cp, cq, c, s);
                rotate(v[std::size_t(p)], v[std::size_t(q)], c, s);
            }
        if (worst < 1e-15) break;
    }
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::vector<double> norm(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) norm[std::size_t(k)] = std::sqrt(dot(cols[std::size_t(k)], cols[std::size_t(k)]));
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return norm[std::size_t(a)] > norm[std::size_t(b)]; });
    Svd out;
    for (int k : order) {
        const double s = norm[std::size_t(k)];
        out.sigma.push_back(s);
        std::vector<double> u = cols[std::size_t(k)];
        if (s > 0)
            for (double& x : u) x /= s;
        out.left.push_back(std::move(u));
        out.right.push_back(v[std::size_t(k)]);  // the rotations applied to the identity: row k of V^T
    }
    (void)rows;
    return out;
}

// The SVD as terms column_t (length H) x row_t (length W), with sigma folded into the column.
struct Terms {
    std::vector<double> sigma;
    std::vector<SeparableMask> terms;
};

Terms mask_terms(const Mask& m) {
    const int W = m.width, H = m.height;
    // One-sided Jacobi orthogonalises columns, so it takes the matrix with no more columns than rows:
    // A (H x W, A[j][i] = m(i, j)) when H >= W, else A^T, and A^T = U S V^T gives A = V S U^T.
    const bool tall = H >= W;
    const int n = tall ? W : H, len = tall ? H : W;
    std::vector<std::vector<double>> cols(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(len)));
    for (int j = 0; j < H; ++j)
        for (int i = 0; i < W; ++i) (tall ? cols[std::size_t(i)][std::size_t(j)] : cols[std::size_t(j)][std::size_t(i)]) = m.at(i, j);
    Svd s = jacobi_svd(std::move(cols), len);
    Terms t;
    for (std::size_t k = 0; k < s.sigma.size(); ++k) {
        SeparableMask term = tall ? SeparableMask{s.right[k], s.left[k]} : SeparableMask{s.left[k], s.right[k]};
        for (double& x : term.column) x *= s.sigma[k];
        t.terms.push_back(std::move(term));
    }
    t.sigma = std::move(s.sigma);
    return t;
}

double l1(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += std::fabs(x);
    return s;
}

} // namespace

std::vector<double> mask_singular_values(const Mask& m) { return mask_terms(m).sigma; }

namespace {
std::optional<LowRankMask> compute_low_rank_form(const Mask& m, int max_rank, double budget);
} // namespace

// Memoised: every plan of a float mask asks (each image of a batch is planned again), and the SVD of a
// 129x129 mask costs ~40 ms. The last few masks are kept.
std::optional<LowRankMask> low_rank_form(const Mask& m, int max_rank, double budget) {
    struct Entry {
        int width, height, max_rank;
        double budget;
        std::vector<double> weights;
        std::optional<LowRankMask> form;
    };
    static std::mutex mutex;
    static std::deque<Entry> recent;
    {
        std::lock_guard lock(mutex);
        for (const Entry& e : recent)
            if (e.width == m.width && e.height == m.height && e.max_rank == max_rank && e.budget == budget &&
                e.weights == m.weights)
                return e.form;
    }
    auto form = compute_low_rank_form(m, max_rank, budget);
    std::lock_guard lock(mutex);
    recent.push_front({m.width, m.height, max_rank, budget, m.weights, form});
    if (recent.size() > 8) recent.pop_back();
    return form;
}

namespace {

std::optional<LowRankMask> truncated_svd_form(const Mask& m, int max_rank, double budget);

// The mask is scaled by a power of two to max |w| in [0.5, 1) first: exact, so the SVD and the decision
// are those of the mask itself, but its dot products neither overflow (weights of 1e200: squares past
// the largest double) nor sink into subnormals (1e-170); the terms are scaled back.
std::optional<LowRankMask> compute_low_rank_form(const Mask& m, int max_rank, double budget) {
    double largest = 0;
    for (double w : m.weights) largest = std::max(largest, std::fabs(w));
    if (largest == 0 || max_rank < 1) return std::nullopt;
    int e = 0;
    std::frexp(largest, &e);
    if (e == 0) return truncated_svd_form(m, max_rank, budget);
    Mask unit = m;
    for (double& w : unit.weights) w = std::ldexp(w, -e);
    auto form = truncated_svd_form(unit, max_rank, budget);
    if (!form) return form;
    for (SeparableMask& t : form->terms)
        for (double& x : t.column) {
            x = std::ldexp(x, e);
            if (!std::isfinite(x)) return std::nullopt;  // a term of this mask is past the largest double
        }
    form->residual_l1 = std::ldexp(form->residual_l1, e);
    form->term_l1 = std::ldexp(form->term_l1, e);
    return form;
}

std::optional<LowRankMask> truncated_svd_form(const Mask& m, int max_rank, double budget) {
    const double total = m.abs_sum();
    if (total == 0 || max_rank < 1) return std::nullopt;
    Terms t = mask_terms(m);
    const int W = m.width, H = m.height;
    std::vector<double> approx(m.weights.size(), 0.0);
    LowRankMask out;
    for (int r = 1; r <= std::min<int>(max_rank, int(t.terms.size())); ++r) {
        const SeparableMask& term = t.terms[std::size_t(r - 1)];
        for (int j = 0; j < H; ++j)
            for (int i = 0; i < W; ++i) approx[std::size_t(j) * W + i] += term.column[std::size_t(j)] * term.row[std::size_t(i)];
        out.terms.push_back(term);
        out.term_l1 += l1(term.column) * l1(term.row);
        double residual = 0;
        for (std::size_t k = 0; k < approx.size(); ++k) residual += std::fabs(m.weights[k] - approx[k]);
        out.residual_l1 = residual;
        // Each float32 pass rounds its partial sums (unit 2^-24, growing about as the square root of the
        // taps, as rounding errors of both signs mostly cancel), on sums bounded by the terms' L1 norms; each
        // addition of a term rounds once more. The tests hold every path to SPEC.md's 1e-5 on real runs.
        const double rounding = 0x1p-24 * (std::sqrt(double(W + H)) + r) * out.term_l1;
        if (residual + rounding <= budget * total) return out;
    }
    return std::nullopt;
}

} // namespace

} // namespace apron
