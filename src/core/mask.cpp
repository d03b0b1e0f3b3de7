#include "apron/mask.hpp"

#include <cmath>
#include <numeric>
#include <sstream>

#include "apron/errors.hpp"
#include "core/number_text.hpp"

namespace apron {

Mask::Mask(int w, int h, std::vector<double> values)
    : width(w), height(h), anchor_x(w / 2), anchor_y(h / 2), weights(std::move(values)) {
    if (w < 1 || h < 1 || w > max_mask_side || h > max_mask_side)
        fail("mask", "size " + std::to_string(w) + "x" + std::to_string(h) + " outside 1.." +
                         std::to_string(max_mask_side));
    if (weights.size() != std::size_t(w) * h)
        fail("mask", "expected " + std::to_string(std::size_t(w) * h) + " weights, got " +
                         std::to_string(weights.size()));
    for (double v : weights)
        if (!std::isfinite(v)) fail("mask", "weight is not a finite number");
}

double Mask::sum() const { return std::accumulate(weights.begin(), weights.end(), 0.0); }
double Mask::abs_sum() const {
    double s = 0;
    for (double v : weights) s += std::fabs(v);
    return s;
}

Mask flipped(const Mask& m) {
    Mask f = m;
    for (int j = 0; j < m.height; ++j)
        for (int i = 0; i < m.width; ++i) f.at(m.width - 1 - i, m.height - 1 - j) = m.at(i, j);
    f.anchor_x = m.width - 1 - m.anchor_x;
    f.anchor_y = m.height - 1 - m.anchor_y;
    return f;
}

namespace {

// Splits text into lines that carry content (not blank, not '#' comments), keeping line numbers.
struct Line { int number; std::string text; };
std::vector<Line> content_lines(std::string_view text) {
    std::vector<Line> out;
    int number = 0;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        ++number;
        std::string line(text.substr(pos, end - pos));
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const auto first = line.find_first_not_of(" \t");
        if (first != std::string::npos && line[first] != '#') out.push_back({number, line});
        pos = end + 1;
    }
    return out;
}

std::vector<std::string> tokens(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string t; in >> t;) out.push_back(t);
    return out;
}

// The W x H weights of content lines first .. first + h - 1.
Mask plane_of(const std::vector<Line>& lines, std::size_t first, int w, int h, const std::string& source) {
    std::vector<double> values;
    values.reserve(std::size_t(w) * h);
    for (int j = 0; j < h; ++j) {
        const auto& line = lines[first + std::size_t(j)];
        const auto row = tokens(line.text);
        if (row.size() != std::size_t(w))
            fail(source, "line " + std::to_string(line.number) + ": expected " + std::to_string(w) + " weights, found " +
                             std::to_string(row.size()));
        for (const auto& t : row) {
            const auto v = parse_decimal(t);
            if (!v) fail(source, "line " + std::to_string(line.number) + ": " + decimal_problem(t));
            values.push_back(*v);
        }
    }
    return Mask(w, h, std::move(values));
}

} // namespace

Mask parse_mask_text(std::string_view text, const std::string& source) {
    if (text.find('\0') != std::string_view::npos) fail(source, "mask file contains a NUL byte (not a text file)");
    const auto lines = content_lines(text);
    if (lines.empty()) fail(source, "empty mask file (expected 'W H' then H rows of W weights)");
    // The size: two unsigned integers ("3", not "3.0", "+3" or "3e0").
    const auto header = tokens(lines[0].text);
    if (header.size() != 2 || !all_digits(header[0]) || !all_digits(header[1]))
        fail(source, "line " + std::to_string(lines[0].number) + ": expected the mask size 'W H'");
    bool w_over = false, h_over = false;
    const long long wd = *parse_integer(header[0], max_mask_side, &w_over);
    const long long hd = *parse_integer(header[1], max_mask_side, &h_over);
    if (w_over || h_over || wd < 1 || hd < 1)
        fail(source, "mask size " + header[0] + "x" + header[1] + " outside 1.." + std::to_string(max_mask_side));
    const int w = int(wd), h = int(hd);
    if (lines.size() - 1 != std::size_t(h))
        fail(source, "expected " + std::to_string(h) + " rows of weights, found " + std::to_string(lines.size() - 1));
    return plane_of(lines, 1, w, h, source);
}

std::vector<Mask> parse_mask_planes_text(std::string_view text, const std::string& source) {
    if (text.find('\0') != std::string_view::npos) fail(source, "mask file contains a NUL byte (not a text file)");
    const auto lines = content_lines(text);
    if (lines.empty()) fail(source, "empty mask file (expected 'W H' or 'W H D', then the rows of weights)");
    const auto header = tokens(lines[0].text);
    if (header.size() != 3) return {parse_mask_text(text, source)};
    for (const auto& t : header)
        if (!all_digits(t)) fail(source, "line " + std::to_string(lines[0].number) + ": expected the mask size 'W H D'");
    bool over[3] = {};
    long long n[3];
    for (int k = 0; k < 3; ++k) n[k] = *parse_integer(header[std::size_t(k)], max_mask_side, &over[k]);
    if (over[0] || over[1] || over[2] || n[0] < 1 || n[1] < 1 || n[2] < 1)
        fail(source, "mask size " + header[0] + "x" + header[1] + "x" + header[2] + " outside 1.." + std::to_string(max_mask_side));
    const int w = int(n[0]), h = int(n[1]), d = int(n[2]);
    // At most as many weights as the largest plane (16.8 M): a file of the 64 MiB apron reads holds fewer.
    if (double(w) * h * d > double(max_mask_side) * max_mask_side)
        fail(source, "mask size " + header[0] + "x" + header[1] + "x" + header[2] + " has more than " +
                         std::to_string(max_mask_side * max_mask_side) + " weights");
    if (lines.size() - 1 != std::size_t(h) * std::size_t(d))
        fail(source, "expected " + std::to_string(d) + " planes of " + std::to_string(h) + " rows of weights (" +
                         std::to_string(std::size_t(h) * std::size_t(d)) + " rows), found " + std::to_string(lines.size() - 1));
    std::vector<Mask> planes;
    for (int z = 0; z < d; ++z) planes.push_back(plane_of(lines, 1 + std::size_t(z) * h, w, h, source));
    return planes;
}

void check_mask_planes(const std::vector<Mask>& planes, const std::string& source) {
    if (planes.empty()) fail(source, "no planes (a mask has at least one)");
    if (planes.size() > std::size_t(max_mask_side))
        fail(source, std::to_string(planes.size()) + " planes, more than " + std::to_string(max_mask_side));
    const Mask& first = planes[0];
    for (std::size_t z = 1; z < planes.size(); ++z) {
        const Mask& m = planes[z];
        if (m.width != first.width || m.height != first.height)
            fail(source, "plane " + std::to_string(z) + " is " + std::to_string(m.width) + "x" + std::to_string(m.height) +
                             ", plane 0 " + std::to_string(first.width) + "x" + std::to_string(first.height) +
                             " (every plane of a mask has one size)");
        if (m.anchor_x != first.anchor_x || m.anchor_y != first.anchor_y)
            fail(source, "plane " + std::to_string(z) + " has another anchor than plane 0");
    }
    // The limit of a mask file's planes (parse_mask_planes_text): the weights of the largest plane.
    if (double(first.width) * first.height * double(planes.size()) > double(max_mask_side) * max_mask_side)
        fail(source, "mask size " + std::to_string(first.width) + "x" + std::to_string(first.height) + "x" +
                         std::to_string(planes.size()) + " has more than " + std::to_string(max_mask_side * max_mask_side) +
                         " weights");
}

std::optional<IntegerMask> integer_form(const Mask& m) {
    // Integer weights stay below 9e15 < 2^53 (any divisor only makes them larger): larger ones, 1e38 say,
    // are integral doubles but no int64 holds them, and their sums could not be exact anyway.
    constexpr double largest = 9.0e15;
    for (double v : m.weights)
        if (!(std::fabs(v) <= largest)) return std::nullopt;
    auto integral = [](double s) {
        return std::fabs(s) <= largest && std::fabs(s - std::nearbyint(s)) <= 1e-14 * std::max(1.0, std::fabs(s));
    };
    // Grow the divisor weight by weight: multiply it by the smallest k that makes this weight integral.
    // A divisor that works for a weight keeps working for it when multiplied, so one pass suffices.
    //
    // The smallest such k: when |k x - p| is below 1 / (2 k) (the tolerance is far below that while
    // |k x| < 2^24), p / k is a convergent of x's continued fraction (Legendre), so only the convergents'
    // denominators need trying, a few dozen instead of up to 2^20 candidates (a scan cost ~5 ms of
    // planning per float mask). Larger products keep the plain scan.
    auto smallest_k = [&](double x, std::int64_t limit) -> std::int64_t {
        if (std::fabs(x) * double(limit) >= 16777216.0) {
            std::int64_t k = 2;
            while (k <= limit && !integral(x * double(k))) ++k;
            return k;
        }
        double rest = std::fabs(x);
        std::int64_t q_prev = 0, q = 1;  // convergent denominators
        for (int step = 0; step < 64; ++step) {
            const double a = std::floor(rest);
            if (step > 0 && !(a * double(q) + double(q_prev) <= double(limit))) break;  // before any int64 cast
            const std::int64_t q_next = std::int64_t(a) * q + q_prev;
            if (step > 0) {
                if (q_next > limit) break;
                q_prev = q, q = q_next;
                if (integral(x * double(q))) return q;
            }
            const double frac = rest - a;
            if (frac <= 0) break;
            rest = 1.0 / frac;
        }
        return limit + 1;
    };
    std::int64_t d = 1;
    for (double v : m.weights) {
        if (integral(v * double(d))) continue;
        const std::int64_t k = smallest_k(v * double(d), max_mask_divisor / d);
        if (k > max_mask_divisor / d) return std::nullopt;
        d *= k;
    }
    IntegerMask im;
    im.divisor = d;
    im.weights.reserve(m.weights.size());
    for (double v : m.weights) {
        const double s = std::nearbyint(v * double(d));
        if (!integral(v * double(d))) return std::nullopt;
        im.weights.push_back(std::int64_t(s));
        im.abs_sum += std::int64_t(std::fabs(s));
        if (im.abs_sum > (std::int64_t(1) << 52)) return std::nullopt;
    }
    // A weight below the tolerance (1e-15 beside 1) rounds to zero, which is harmless where other weights
    // carry the sum; a mask of such weights alone is not the zero mask (its mean is not 0): the float path.
    if (im.abs_sum == 0)
        for (double v : m.weights)
            if (v != 0) return std::nullopt;
    return im;
}

std::optional<SeparableMask> separable_form(const Mask& m, double rel_tol) {
    // Pivot on the largest weight: row = the pivot's row, column = the pivot's column / pivot.
    std::size_t p = 0;
    for (std::size_t k = 1; k < m.weights.size(); ++k)
        if (std::fabs(m.weights[k]) > std::fabs(m.weights[p])) p = k;
    const double pivot = m.weights[p];
    if (pivot == 0.0) return std::nullopt;  // all-zero mask: the direct path handles it trivially
    const int pi = int(p % m.width), pj = int(p / m.width);
    SeparableMask s;
    s.row.resize(m.width);
    s.column.resize(m.height);
    for (int i = 0; i < m.width; ++i) s.row[i] = m.at(i, pj);
    for (int j = 0; j < m.height; ++j) s.column[j] = m.at(pi, j) / pivot;
    const double tol = rel_tol * std::fabs(pivot);
    for (int j = 0; j < m.height; ++j)
        for (int i = 0; i < m.width; ++i)
            if (std::fabs(s.column[j] * s.row[i] - m.at(i, j)) > tol) return std::nullopt;
    return s;
}

std::optional<IntegerSeparableMask> integer_separable_form(const IntegerMask& im, int width, int height) {
    auto at = [&](int i, int j) { return im.weights[std::size_t(j) * width + i]; };
    std::size_t p = 0;
    while (p < im.weights.size() && im.weights[p] == 0) ++p;
    if (p == im.weights.size()) return std::nullopt;
    const int pi = int(p % width), pj = int(p / width);
    // row = the pivot's row divided by its gcd (a primitive vector); then each column factor is integral.
    std::int64_t g = 0;
    for (int i = 0; i < width; ++i) g = std::gcd(g, at(i, pj));
    IntegerSeparableMask s;
    s.divisor = im.divisor;
    s.row.resize(width);
    s.column.resize(height);
    for (int i = 0; i < width; ++i) s.row[i] = at(i, pj) / g;
    for (int j = 0; j < height; ++j) {
        if (at(pi, j) % s.row[pi] != 0) return std::nullopt;
        s.column[j] = at(pi, j) / s.row[pi];
    }
    // In 128 bits: factors of weights up to 2^52 can multiply past 2^63 where the mask is not of rank 1.
    for (int j = 0; j < height; ++j)
        for (int i = 0; i < width; ++i)
            if (__int128(s.column[j]) * s.row[i] != at(i, j)) return std::nullopt;
    return s;
}

} // namespace apron
