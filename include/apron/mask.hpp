#pragma once
// Masks (filter weights) and what apron learns from them before choosing an algorithm:
// whether the sum can be computed exactly in integers, and whether the mask is separable.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace apron {

// Values shared between copies until one of them is written (copy on write). Masks and structuring elements
// are copied into every step and every plan (dilate:iterations=20 with a 4097x4097 element made 40 copies of
// 134 MB); sharing keeps one table per distinct mask, whatever the number of steps. Reads through a const
// object never copy; writes through a non-const one copy only while the values are shared. Not for
// concurrent writers (plans are read-only while they run).
template <class T>
class SharedValues {
public:
    using value_type = T;
    using const_iterator = typename std::vector<T>::const_iterator;

    SharedValues() = default;
    SharedValues(std::vector<T> values) : values_(std::make_shared<std::vector<T>>(std::move(values))) {}
    SharedValues(std::initializer_list<T> values) : SharedValues(std::vector<T>(values)) {}

    const std::vector<T>& values() const { return values_ ? *values_ : no_values(); }
    operator const std::vector<T>&() const { return values(); }
    std::size_t size() const { return values().size(); }
    bool empty() const { return values().empty(); }
    const T* data() const { return values().data(); }
    const T& operator[](std::size_t k) const { return values()[k]; }
    const_iterator begin() const { return values().begin(); }
    const_iterator end() const { return values().end(); }

    // Writable access: the values become this object's own first.
    std::vector<T>& mutable_values() {
        if (!values_) values_ = std::make_shared<std::vector<T>>();
        else if (values_.use_count() > 1) values_ = std::make_shared<std::vector<T>>(*values_);
        return *values_;
    }
    T& operator[](std::size_t k) { return mutable_values()[k]; }
    T* data() { return mutable_values().data(); }
    typename std::vector<T>::iterator begin() { return mutable_values().begin(); }
    typename std::vector<T>::iterator end() { return mutable_values().end(); }
    void reserve(std::size_t n) { mutable_values().reserve(n); }
    void push_back(const T& v) { mutable_values().push_back(v); }

    // Whether two objects hold the very same storage (then they are equal without comparing).
    bool shares_storage_with(const SharedValues& o) const { return values_ && values_ == o.values_; }
    // Makes this object share `o`'s storage; for equal values only (Pipeline interns its masks so).
    void share_storage_of(const SharedValues& o) { values_ = o.values_; }

    friend bool operator==(const SharedValues& a, const SharedValues& b) {
        return a.shares_storage_with(b) || a.values() == b.values();
    }
    friend bool operator==(const SharedValues& a, const std::vector<T>& b) { return a.values() == b; }

private:
    static const std::vector<T>& no_values() {
        static const std::vector<T> none;
        return none;
    }
    std::shared_ptr<std::vector<T>> values_;
};

// W x H weights, row-major, weight(i, j) at column i, row j. The anchor is the mask cell that lies on
// the output pixel; SPEC.md fixes it at (W/2, H/2) for user masks, and convolve moves it when it flips
// an even-sized mask.
struct Mask {
    int width = 0, height = 0;
    int anchor_x = 0, anchor_y = 0;
    SharedValues<double> weights;  // shared by copies (steps of one pipeline share their masks)

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
// The same for a volume's mask (SPEC.md "Volumes"): "W H D", then D planes of H lines of W numbers (plane 0
// first, its z offset -D/2 from the output's plane); "W H" gives one plane. The planes in order of z.
std::vector<Mask> parse_mask_planes_text(std::string_view text, const std::string& source);
std::vector<Mask> read_mask_planes_file(const std::string& path);
// Planes given as weights (a 3-D array from the Python bindings) checked as parse_mask_planes_text checks a
// file's: at least one plane, every plane of the first one's size and anchor, at most 4097 x 4097 weights in
// all (a plane's own sides and weights are Mask's to check). `source` names them in the error.
void check_mask_planes(const std::vector<Mask>& planes, const std::string& source);

// Weights that are integers over one common divisor: weight = integer / divisor, exactly.
struct IntegerMask {
    SharedValues<std::int64_t> weights;  // same layout as Mask::weights, shared by copies
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
