#pragma once
// The one grammar apron reads numbers in: op parameters, vectors, structuring-element sizes and mask files.
// Plain decimals only ("3", "-0.5", ".5", "2.", "1e-3", "1E+3"); no '+' sign, blanks, hexadecimal, "inf" or
// "nan", so a typo is refused rather than read as something else. A decimal below the smallest double reads
// as the nearest one (a denormal, or 0); one beyond the largest is refused.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace apron {

inline bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// -?(digits[.digits?] | .digits)([eE][+-]?digits)?
inline bool is_decimal_text(std::string_view s) {
    std::size_t k = 0;
    auto digits = [&] {
        const std::size_t start = k;
        while (k < s.size() && s[k] >= '0' && s[k] <= '9') ++k;
        return k - start;
    };
    if (k < s.size() && s[k] == '-') ++k;
    std::size_t mantissa = digits();
    if (k < s.size() && s[k] == '.') {
        ++k;
        mantissa += digits();
    }
    if (mantissa == 0) return false;
    if (k < s.size() && (s[k] == 'e' || s[k] == 'E')) {
        ++k;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (digits() == 0) return false;
    }
    return k == s.size();
}

// The value of a decimal in the grammar above; nullopt when the text is not one, or is beyond the double range.
inline std::optional<double> parse_decimal(std::string_view s) {
    if (!is_decimal_text(s)) return std::nullopt;
    const std::string text(s);
    errno = 0;
    const double v = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(v)) return std::nullopt;  // overflow (underflow keeps the nearest double)
    return v;
}

// Why `s` is not a number parse_decimal reads, for messages ("'0x10' is not a finite number (...)").
inline std::string decimal_problem(std::string_view s) {
    if (s.empty()) return "empty value (expected a number)";
    std::string quoted(1, '\'');  // built by appending: GCC 12 warns (falsely) on "'" + std::string(s)
    quoted.append(s).push_back('\'');
    if (is_decimal_text(s)) return quoted + " is not a finite number (beyond the double range)";
    return quoted + " is not a finite number (write a decimal such as 3, -0.5 or 1e-3)";
}

// "-?digits" as an integer; nullopt when the text is not one. `saturated` is set (and the value clamped to
// +-limit) when the magnitude exceeds `limit`, so callers can say "out of range" rather than "not an integer".
inline std::optional<long long> parse_integer(std::string_view s, long long limit, bool* saturated = nullptr) {
    const bool negative = !s.empty() && s[0] == '-';
    const std::string_view body = negative ? s.substr(1) : s;
    if (!all_digits(body)) return std::nullopt;
    long long v = 0;
    bool over = false;
    for (char c : body) {
        if (v > limit) {
            over = true;
            break;
        }
        v = v * 10 + (c - '0');
    }
    over = over || v > limit;
    if (saturated) *saturated = over;
    if (over) v = limit;
    return negative ? -v : v;
}

} // namespace apron
