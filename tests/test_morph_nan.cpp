// NaN in f32 morphology (SPEC.md, Morphology): a NaN sample is missing; dilate and erode take the max and
// min over the element's samples that are not NaN, and an output whose element covers no such sample is
// NaN. -inf and +inf are samples and come out as they are. The derived operations are OpenCV's
// morphologyEx built on those, with plain float arithmetic (NaN - x is NaN, inf - inf is NaN).
//
// The expected images come from a brute-force restatement of that rule written here, with its own
// elements and border indexing, and are compared with the reference and the fast CPU backends.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "apron/pipeline.hpp"
#include "plan/plan.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

namespace apron {
namespace {

const float nan_v = std::numeric_limits<float>::quiet_NaN();
const float inf_v = std::numeric_limits<float>::infinity();

struct Element {
    std::string spec;
    int w = 1, h = 1;
    std::vector<bool> on;
    bool at(int i, int j) const { return on[std::size_t(j) * w + i]; }
};

Element make_element(const std::string& shape, int w, int h) {
    Element e;
    e.w = w, e.h = h;
    e.on.assign(std::size_t(w) * h, false);
    e.spec = shape + ":" + std::to_string(w) + "x" + std::to_string(h);
    for (int j = 0; j < h; ++j)
        for (int i = 0; i < w; ++i) {
            bool on = true;
            if (shape == "cross") on = i == w / 2 || j == h / 2;
            if (shape == "ellipse") {  // OpenCV's rule: row j spans c +- round(c sqrt(1 - dy^2 / r^2))
                const int r = h / 2, c = w / 2, dy = j - r;
                const int dx = r ? int(std::nearbyint(c * std::sqrt(double(r * r - dy * dy) / (double(r) * r)))) : c;
                on = i >= c - dx && i <= c + dx;
            }
            e.on[std::size_t(j) * w + i] = on;
        }
    return e;
}

Element make_disk(int r) {
    Element e = make_element("rect", 2 * r + 1, 2 * r + 1);
    e.spec = "disk:" + std::to_string(r);
    for (int j = 0; j < e.h; ++j)
        for (int i = 0; i < e.w; ++i) e.on[std::size_t(j) * e.w + i] = (i - r) * (i - r) + (j - r) * (j - r) <= r * r;
    return e;
}

// Index of coordinate i on an axis of n samples, or -1 for the constant border / ignored pixels.
int axis_index(long long i, int n, const std::string& border) {
    if (i >= 0 && i < n) return int(i);
    if (border == "nearest") return i < 0 ? 0 : n - 1;
    if (border == "wrap") return int(((i % n) + n) % n);
    if (border == "reflect") {  // d c b a | a b c d | d c b a: period 2n
        const long long p = 2LL * n, m = ((i % p) + p) % p;
        return int(m < n ? m : p - 1 - m);
    }
    if (border == "mirror") {  // d c b | a b c d | c b a: period 2n - 2
        if (n == 1) return 0;
        const long long p = 2LL * n - 2, m = ((i % p) + p) % p;
        return int(m < n ? m : p - m);
    }
    return -1;  // ignore, constant
}

// One image of floats with its shape, for the restatement.
struct Plane {
    int w = 0, h = 0, c = 1;
    std::vector<float> v;
    float at(int x, int y, int k) const { return v[(std::size_t(y) * w + x) * c + k]; }
    float& at(int x, int y, int k) { return v[(std::size_t(y) * w + x) * c + k]; }
};

Plane to_plane(const Image& img) {
    Plane p{img.width(), img.height(), img.channels(), {}};
    for (int y = 0; y < p.h; ++y) p.v.insert(p.v.end(), img.row<float>(y), img.row<float>(y) + std::size_t(p.w) * p.c);
    return p;
}

// SPEC's dilate / erode: max / min over the element's samples that are not NaN; NaN when there are none.
// `border` is "" (outside pixels ignored), "constant" (they read `value`) or a mapped mode.
Plane extremum(const Plane& in, const Element& e, bool dilate, const std::string& border, float value) {
    Plane out = in;
    const int ax = e.w / 2, ay = e.h / 2;
    for (int y = 0; y < in.h; ++y)
        for (int x = 0; x < in.w; ++x)
            for (int k = 0; k < in.c; ++k) {
                bool any = false;  // a sample that is not NaN seen yet
                float best = nan_v;
                for (int j = 0; j < e.h; ++j)
                    for (int i = 0; i < e.w; ++i) {
                        if (!e.at(i, j)) continue;
                        const int sx = axis_index(x + i - ax, in.w, border), sy = axis_index(y + j - ay, in.h, border);
                        const bool inside = sx >= 0 && sy >= 0;
                        if (!inside && border != "constant") continue;
                        const float s = inside ? in.at(sx, sy, k) : value;
                        if (std::isnan(s)) continue;
                        if (!any || (dilate ? s > best : s < best)) best = s;
                        any = true;
                    }
                out.at(x, y, k) = best;
            }
    return out;
}

Plane minus(const Plane& a, const Plane& b) {
    Plane out = a;
    for (std::size_t k = 0; k < out.v.size(); ++k) out.v[k] = a.v[k] - b.v[k];
    return out;
}

// morphologyEx on the restated dilate / erode, `iterations` passes of each.
Plane expected(const std::string& op, const Plane& in, const Element& e, const std::string& border, float value,
               int iterations) {
    auto times = [&](const Plane& p, bool dilate) {
        Plane r = p;
        for (int n = 0; n < iterations; ++n) r = extremum(r, e, dilate, border, value);
        return r;
    };
    if (op == "dilate") return times(in, true);
    if (op == "erode") return times(in, false);
    if (op == "open") return times(times(in, false), true);
    if (op == "close") return times(times(in, true), false);
    if (op == "gradient") return minus(times(in, true), times(in, false));
    if (op == "tophat") return minus(in, times(times(in, false), true));
    return minus(times(times(in, true), false), in);  // blackhat
}

bool same(const Plane& a, const Plane& b, std::string* where) {
    for (int y = 0; y < a.h; ++y)
        for (int x = 0; x < a.w; ++x)
            for (int k = 0; k < a.c; ++k) {
                const float p = a.at(x, y, k), q = b.at(x, y, k);
                if (p == q || (std::isnan(p) && std::isnan(q))) continue;
                *where = "(" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(k) + "): want " +
                         std::to_string(p) + ", got " + std::to_string(q);
                return false;
            }
    return true;
}

// Random samples with a NaN hole larger than every element, scattered NaN, +inf and -inf.
Image holed_image(int w, int h, int c, std::uint32_t seed) {
    Image img = test::random_image(w, h, c, PixelType::f32, seed);
    std::mt19937 rng(seed);
    for (int n = 0; n < w * h / 6; ++n) {
        const int x = int(rng() % unsigned(w)), y = int(rng() % unsigned(h)), k = int(rng() % unsigned(c));
        const float pick[] = {nan_v, nan_v, inf_v, -inf_v};
        img.row<float>(y)[std::size_t(x) * c + k] = pick[rng() % 4];
    }
    for (int y = 4; y < std::min(h, 15); ++y)  // 11 x 11
        for (int x = 3; x < std::min(w, 14); ++x)
            for (int k = 0; k < c; ++k) img.row<float>(y)[std::size_t(x) * c + k] = nan_v;
    return img;
}

Image filled(int w, int h, int c, float v) {
    Image img(w, h, c, PixelType::f32);
    for (int y = 0; y < h; ++y) std::fill(img.row<float>(y), img.row<float>(y) + std::size_t(w) * c, v);
    return img;
}

std::vector<Element> elements() {
    return {make_element("rect", 3, 3), make_element("rect", 5, 7), make_element("rect", 1, 1),
            make_element("cross", 5, 3), make_element("ellipse", 7, 5), make_disk(2)};
}

const char* const kOps[] = {"dilate", "erode", "open", "close", "gradient", "tophat", "blackhat"};
const char* const kBorders[] = {"", "constant", "nearest", "reflect", "mirror", "wrap"};

void expect_spec(const std::string& op, const Image& in, const Element& e, const std::string& border, int iterations,
                 const std::string& label) {
    std::string spec = op + ":se=" + e.spec;
    if (!border.empty()) spec += ",border=" + border + (border == "constant" ? ",value=0.5" : "");
    if (iterations > 1) spec += ",iterations=" + std::to_string(iterations);
    const Plane want = expected(op, to_plane(in), e, border, 0.5f, iterations);
    for (Backend b : {Backend::reference, Backend::cpu}) {
        const Image got = Pipeline({spec}).run(in, {.backend = b, .threads = 2});
        std::string where;
        EXPECT_TRUE(same(want, to_plane(got), &where)) << to_string(b) << " " << spec << " on " << label << ": " << where;
    }
}

TEST(MorphNaN, NaNHolesScatteredNaNAndInfinitiesEveryOpElementAndBorder) {
    int k = 0;
    for (const Element& e : elements())
        for (const char* border : kBorders)
            for (const char* op : kOps) {
                const int c = 1 + (k % 3 == 2 ? 3 : k % 3 == 1 ? 2 : 0);  // 1, 3, 4 channels
                const Image in = holed_image(23 + k % 3, 19, c, 100 + unsigned(k));
                expect_spec(op, in, e, border, 1, "holed " + std::to_string(c) + " channels");
                ++k;
            }
}

TEST(MorphNaN, AllNaNAndAllInfiniteImages) {
    for (const Element& e : elements())
        for (const char* border : kBorders)
            for (const char* op : {"dilate", "erode", "open", "gradient"})
                for (float v : {nan_v, inf_v, -inf_v}) {
                    const Image in = filled(9, 6, 3, v);
                    expect_spec(op, in, e, border, 1, "filled with " + std::to_string(v));
                }
}

TEST(MorphNaN, OnePixelImages) {
    for (const Element& e : elements())
        for (const char* border : kBorders)
            for (const char* op : kOps)
                for (float v : {nan_v, 0.25f, -inf_v})
                    for (int c : {1, 4}) expect_spec(op, filled(1, 1, c, v), e, border, 1, "1x1 of " + std::to_string(v));
}

// Several passes of a rectangle with ignored borders run as one larger rectangle: a NaN hole must stay NaN
// where it is wider than all the passes together, and shrink exactly as pass after pass would.
TEST(MorphNaN, IterationsMergedIntoOneRectangle) {
    const Image in = holed_image(31, 27, 1, 7);
    for (const char* op : kOps)
        for (const char* border : {"", "reflect"}) expect_spec(op, in, make_element("rect", 3, 3), border, 2, "holed");
}

// An output of 32 MiB and more: the fast executor's last pass writes it with streaming stores, keys turned
// back into values on the way (rectangles through the ring of row extrema, other shapes through runs).
TEST(MorphNaN, LargeImageWithNaNHoles) {
    Image in = test::random_image(2900, 2900, 1, PixelType::f32, 29);
    std::mt19937 rng(29);
    for (int n = 0; n < 40; ++n) {  // holes of up to 40 x 40 pixels
        const int x0 = int(rng() % 2860u), y0 = int(rng() % 2860u), w = 1 + int(rng() % 40u), h = 1 + int(rng() % 40u);
        for (int y = y0; y < y0 + h; ++y)
            for (int x = x0; x < x0 + w; ++x) in.row<float>(y)[x] = nan_v;
    }
    for (int n = 0; n < 20000; ++n) in.row<float>(int(rng() % 2900u))[rng() % 2900u] = n % 3 ? nan_v : n % 2 ? inf_v : -inf_v;
    const Plane plane = to_plane(in);
    for (const Element& e : {make_element("rect", 3, 3), make_element("ellipse", 5, 5)})
        for (const char* op : {"dilate", "erode"}) {
            const Image got = Pipeline({std::string(op) + ":se=" + e.spec}).run(in, {.backend = Backend::cpu});
            std::string where;
            EXPECT_TRUE(same(extremum(plane, e, std::string(op) == "dilate", "", 0), to_plane(got), &where))
                << op << " " << e.spec << ": " << where;
        }
}

// The plan of one dilate or erode of element `e` on `in`, with an optional constant border value.
MorphPlan plan_morph(const Element& e, MorphKind kind, const Image& in, std::optional<float> constant_border = {}) {
    MorphStep s;
    s.element = Mask(e.w, e.h, std::vector<double>(e.on.begin(), e.on.end()));
    s.kind = kind;
    if (constant_border) {
        s.border = BorderMode::constant;
        s.border_value = *constant_border;
    }
    Step step;
    step.action = s;
    return std::get<MorphPlan>(test::plan_step(step, in.shape(), in.type()).what);
}

// A constant border of NaN (the library's MorphStep; the command line takes finite values only) is outside
// pixels that are missing: the same result as ignoring them, on the reference and the fast executor.
TEST(MorphNaN, ConstantNaNBorderIsIgnoredOutsidePixels) {
    const Image in = holed_image(17, 13, 3, 5);
    auto reference = make_reference_executor();
    auto fast = make_cpu_executor(2);
    for (const Element& e : elements())
        for (MorphKind kind : {MorphKind::dilate, MorphKind::erode}) {
            const MorphPlan ignored = plan_morph(e, kind, in);
            const MorphPlan nan_border = plan_morph(e, kind, in, nan_v);
            const Plane want = extremum(to_plane(in), e, kind == MorphKind::dilate, "", 0);
            for (Executor* ex : {reference.get(), fast.get()})
                for (const MorphPlan* p : {&ignored, &nan_border}) {
                    Image got(in.shape());
                    ex->morph(*p, in.view(), got.view());
                    std::string where;
                    EXPECT_TRUE(same(want, to_plane(got), &where)) << e.spec << (p == &ignored ? " ignored" : " NaN border") << ": " << where;
                }
        }
}

// Every SIMD level compiled in (AVX-512, AVX2, SSE4, the portable fallback) loads, combines and stores the
// f32 order keys alike: the rule holds on machines other than this one.
TEST(MorphNaN, EverySimdTarget) {
    const Image in = holed_image(45, 21, 3, 31);
    const Plane plane = to_plane(in);
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        auto fast = make_cpu_executor(2);
        for (const Element& e : {make_element("rect", 5, 7), make_element("rect", 3, 3), make_element("ellipse", 7, 5)})
            for (MorphKind kind : {MorphKind::dilate, MorphKind::erode}) {
                const MorphPlan p = plan_morph(e, kind, in);
                Image got(in.shape());
                fast->morph(p, in.view(), got.view());
                std::string where;
                EXPECT_TRUE(same(extremum(plane, e, kind == MorphKind::dilate, "", 0), to_plane(got), &where))
                    << hwy::TargetName(target) << " " << e.spec << ": " << where;
            }
    }
    hwy::SetSupportedTargetsForTest(0);
}

// The case, spelled out: a NaN hole larger than the element stays NaN inside (no -3.4e38 or
// +3.4e38), its rim takes the neighbours' extremum, and -inf / +inf survive erode / dilate.
TEST(MorphNaN, HoleLargerThanTheElementStaysNaN) {
    Image in = filled(20, 20, 1, 1.0f);
    for (int y = 5; y < 15; ++y)
        for (int x = 5; x < 15; ++x) in.row<float>(y)[x] = nan_v;
    in.row<float>(0)[0] = -inf_v;
    in.row<float>(19)[19] = inf_v;
    for (Backend b : {Backend::reference, Backend::cpu})
        for (const char* op : {"dilate", "erode", "open", "close"}) {
            const Image out = Pipeline({std::string(op) + ":se=rect:5x5"}).run(in, {.backend = b});
            EXPECT_TRUE(std::isnan(out.row<float>(10)[10])) << op << " " << to_string(b) << ": " << out.row<float>(10)[10];
            EXPECT_EQ(out.row<float>(10)[4], 1.0f) << op;
            EXPECT_EQ(out.row<float>(10)[6], 1.0f) << op;  // reaches the rim (x = 4)
        }
    for (Backend b : {Backend::reference, Backend::cpu}) {
        EXPECT_EQ(Pipeline({"erode:se=rect:3x3"}).run(in, {.backend = b}).row<float>(1)[1], -inf_v);
        EXPECT_EQ(Pipeline({"dilate:se=rect:3x3"}).run(in, {.backend = b}).row<float>(18)[18], inf_v);
    }
}

} // namespace
} // namespace apron
