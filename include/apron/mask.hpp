#pragma once
// Masks (filter weights) and what apron learns from them before choosing an algorithm:
// whether the sum can be computed exactly in integers, and whether the mask is separable.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace apron {

// W x H weights, row-major, weight(i, j) at column i, row j. The anchor is the mask cell that lies on
// the output pixel; SPEC.md fixes it at (W/2, H/2) for user masks, and convolve moves it when it flips
// an even-sized mask.
struct Mask {
    int width = 0, height = 0;
    int anchor_x = 0, anchor_y = 0;
    std::vector<double> weights;

    Mask() = default;
    Mask(int w, int h, std::vector<double> values);  // centred anchor; throws apron::Error on bad sizes
    double at(int i, int j) const { return weights[std::size_t(j) * width + i]; }
    double& at(int i, int j) { return weights[std::size_t(j) * width + i]; }
    double sum() const;
    double abs_sum() const;
    bool operator==(const Mask&) const = default;
};

// Largest mask side apron accepts (a 4097 x 4097 mask is 16.8 M weights).
constexpr int max_mask_side = 4097;

// The mask rotated by 180 degrees with its anchor moved to match, so that correlating with it is the
// same as convolving with the original (SPEC.md "convolve"), for odd and even sizes.
Mask flipped(const Mask& m);

// Parses the GenConv mask text format (SPEC.md): "W H", then H lines of W numbers; blank lines and lines
// starting with '#' are ignored. `source` names the file in error messages.
Mask parse_mask_text(std::string_view text, const std::string& source);
Mask read_mask_file(const std::string& path);

// Weights that are integers over one common divisor: weight = integer / divisor, exactly.
struct IntegerMask {
    std::vector<std::int64_t> weights;  // same layout as Mask::weights
    std::int64_t divisor = 1;
    std::int64_t abs_sum = 0;  // sum |weights|, bounds every partial sum over max |pixel|
};
// Divisors tried up to this bound; weights must match integer/divisor to 1e-14 relative (a few ulps).
constexpr std::int64_t max_mask_divisor = 1 << 20;
std::optional<IntegerMask> integer_form(const Mask& m);

// A rank-1 mask: weight(i, j) = column[j] * row[i].
struct SeparableMask {
    std::vector<double> row, column;
};
// Separable form when the mask is rank 1 within `rel_tol` of its largest weight.
std::optional<SeparableMask> separable_form(const Mask& m, double rel_tol = 1e-12);

// Integer rank-1 factors (weights over one divisor), for the exact separable path.
struct IntegerSeparableMask {
    std::vector<std::int64_t> row, column;
    std::int64_t divisor = 1;
};
std::optional<IntegerSeparableMask> integer_separable_form(const IntegerMask& im, int width, int height);

} // namespace apron
