// Volumes (SPEC.md "Volumes"): 3-D linear filters and morphology on every host backend against a direct
// 3-D restatement written here from the SPEC (every tap of the W x H x D mask or element read through the
// border, in double), not from apron's decomposition into plane and z steps.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/pipeline.hpp"
#include "core/dispatch.hpp"
#include "test_support.hpp"

namespace apron::test {
namespace {

double at(ConstImageView v, int x, int y, int z, int c) {
    return sample_at(v.plane(z), x, y, c);
}

// The voxel (x, y, z) of channel c, any coordinate outside read through the border (the constant: value).
double read_through(ConstImageView in, int x, int y, int z, int c, BorderMode mode, double value) {
    const int xi = border_index(x, in.width(), mode), yi = border_index(y, in.height(), mode), zi = border_index(z, in.shape.depth, mode);
    return xi < 0 || yi < 0 || zi < 0 ? value : at(in, xi, yi, zi, c);
}

struct Weights3 {
    int w, h, d;
    std::vector<double> v;  // [k][j][i]
    double operator()(int i, int j, int k) const { return v[(std::size_t(k) * h + j) * w + i]; }
};

Weights3 outer3(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& z) {
    Weights3 m{int(x.size()), int(y.size()), int(z.size()), {}};
    for (double c : z)
        for (double b : y)
            for (double a : x) m.v.push_back(a * b * c);
    return m;
}

// out = scale * sum w(i,j,k) in(x+i-w/2, y+j-h/2, z+k-d/2) + delta, in double.
std::vector<double> correlate3(ConstImageView in, const Weights3& m, BorderMode mode, double value, double scale = 1) {
    const int W = in.width(), H = in.height(), D = in.shape.depth, C = in.channels();
    std::vector<double> out;
    for (int z = 0; z < D; ++z)
        for (int y = 0; y < H; ++y)
            for (int x = 0; x < W; ++x)
                for (int c = 0; c < C; ++c) {
                    double sum = 0;
                    for (int k = 0; k < m.d; ++k)
                        for (int j = 0; j < m.h; ++j)
                            for (int i = 0; i < m.w; ++i)
                                sum += m(i, j, k) * read_through(in, x + i - m.w / 2, y + j - m.h / 2, z + k - m.d / 2, c, mode, value);
                    out.push_back(scale * sum);
                }
    return out;
}

// Flat morphology over the set cells (dx, dy, dz) of `inside`, outside voxels ignored (nullopt) or read
// through the border; NaN samples are missing, NaN where none is left.
std::vector<double> morph3(ConstImageView in, int r, const std::function<bool(int, int, int)>& inside, bool dilate,
                           std::optional<BorderMode> mode, double value) {
    const int W = in.width(), H = in.height(), D = in.shape.depth, C = in.channels();
    std::vector<double> out;
    for (int z = 0; z < D; ++z)
        for (int y = 0; y < H; ++y)
            for (int x = 0; x < W; ++x)
                for (int c = 0; c < C; ++c) {
                    double best = NAN;
                    for (int dz = -r; dz <= r; ++dz)
                        for (int dy = -r; dy <= r; ++dy)
                            for (int dx = -r; dx <= r; ++dx) {
                                if (!inside(dx, dy, dz)) continue;
                                const bool outside = x + dx < 0 || x + dx >= W || y + dy < 0 || y + dy >= H || z + dz < 0 || z + dz >= D;
                                if (outside && !mode) continue;
                                // Inside, every mode reads the voxel itself.
                                const double s = read_through(in, x + dx, y + dy, z + dz, c, mode.value_or(BorderMode::constant), value);
                                if (s != s) continue;
                                if (best != best || (dilate ? s > best : s < best)) best = s;
                            }
                    out.push_back(best);
                }
    return out;
}

// The stored value of an exact result in type t (rounded half to even, saturated), as SPEC's conversion.
double stored(double v, PixelType t) {
    if (t == PixelType::f32) return double(float(v));
    if (v != v) return 0;
    return std::clamp(std::nearbyint(v), 0.0, type_max(t));
}

std::vector<double> gaussian_weights(double sigma, int radius) {
    std::vector<double> k;
    double sum = 0;
    for (int x = -radius; x <= radius; ++x) k.push_back(std::exp(-0.5 * x * x / (sigma * sigma))), sum += k.back();
    for (double& v : k) v /= sum;
    return k;
}

const BorderMode all_modes[] = {BorderMode::constant, BorderMode::nearest, BorderMode::reflect, BorderMode::mirror, BorderMode::wrap};
const Backend host_backends[] = {Backend::cpu, Backend::reference};

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    std::size_t bad = 0;
    double worst = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
        const bool both_nan = got[k] != got[k] && want[k] != want[k];
        const double e = both_nan ? 0 : std::fabs(got[k] - want[k]);
        if (!(e <= tol)) ++bad, worst = std::max(worst, e != e ? INFINITY : e);
    }
    EXPECT_EQ(bad, 0u) << what << ": worst error " << worst << " (tolerance " << tol << ")";
}

TEST(Volumes, GaussianWithSigmaZMatchesTheDirect3DSumInEveryMode) {
    for (const PixelType t : {PixelType::f32, PixelType::u8, PixelType::u16})
        for (const int channels : {1, 3})
            for (const BorderMode mode : all_modes) {
                const Image v = random_volume(9, 7, 6, channels, t, 11 + channels);
                const std::string spec = std::string("gaussian:sigma=1.2,sigma_y=0.8,sigma_z=1,border=") + to_string(mode) + ",value=3";
                const Weights3 m = outer3(gaussian_weights(1.2, 4), gaussian_weights(0.8, 3), gaussian_weights(1, 3));
                std::vector<double> want = correlate3(v, m, mode, 3);
                for (double& x : want) x = stored(x, t);
                for (const Backend b : host_backends) {
                    const Image out = Pipeline({spec}).run(v, {.backend = b});
                    ASSERT_EQ(out.shape(), v.shape());
                    // f32: SPEC's float tolerance on sums of magnitude < 2; integers: one unit where the float sum
                    // lies within its rounding of a half.
                    expect_near(volume_samples(out), want, t == PixelType::f32 ? 2e-5 : 1.0,
                                spec + " " + to_string(t) + " c=" + std::to_string(channels) + " on " + to_string(b));
                }
            }
}

TEST(Volumes, BoxWithDepthAndSobelAlongZAreTheirSums) {
    const Image v = random_volume(8, 5, 7, 2, PixelType::u16, 5);
    for (const BorderMode mode : all_modes) {
        const std::string tail = std::string(",border=") + to_string(mode) + ",value=9";
        std::vector<double> box = correlate3(v, outer3({1, 1, 1}, {1, 1}, {1, 1, 1, 1, 1}), mode, 9, 1.0 / 30);
        for (double& x : box) x = stored(x, PixelType::u16);
        // Sobel along z: [-1 0 1] along z, [1 2 1] across; integer sums, exact in f32.
        const std::vector<double> dz = correlate3(v, outer3({1, 2, 1}, {1, 2, 1}, {-1, 0, 1}), mode, 9);
        for (const Backend b : host_backends) {
            expect_near(volume_samples(Pipeline({"box:width=3,height=2,depth=5" + tail}).run(v, {.backend = b})), box, 1.0,
                        "box " + tail + " on " + to_string(b));
            expect_near(volume_samples(Pipeline({"sobel:dx=0,dz=1" + tail}).run(v, {.backend = b, .out_type = PixelType::f32})), dz, 0,
                        "sobel dz " + tail + " on " + to_string(b));
        }
    }
}

struct Shape3 {
    std::string se;
    int r;
    std::function<bool(int, int, int)> inside;
};

std::vector<Shape3> element_shapes() {
    return {
        {"ball:2", 2, [](int x, int y, int z) { return x * x + y * y + z * z <= 4; }},
        {"ball:1", 1, [](int x, int y, int z) { return x * x + y * y + z * z <= 1; }},
        {"rect:3x1x3", 1, [](int, int y, int) { return y == 0; }},
        {"rect:5x3x3", 2, [](int, int y, int z) { return std::abs(y) <= 1 && std::abs(z) <= 1; }},
        {"cross:3x3x3", 1, [](int x, int y, int z) { return (x == 0) + (y == 0) + (z == 0) >= 2; }},
        {"ellipsoid:5x3x5", 2,
         [](int x, int y, int z) { return x * x / 4.0 + y * y / 1.0 + z * z / 4.0 <= 1.0 + 1e-12; }},
    };
}

TEST(Volumes, ErodeAndDilateWithBallsBoxesCrossesAndEllipsoidsAreExact) {
    for (const PixelType t : {PixelType::u8, PixelType::f32})
        for (const Shape3& e : element_shapes())
            for (const std::optional<BorderMode> mode : {std::optional<BorderMode>{}, std::optional(BorderMode::reflect),
                                                         std::optional(BorderMode::constant), std::optional(BorderMode::wrap)}) {
                const Image v = random_volume(7, 6, 5, t == PixelType::u8 ? 3 : 1, t, 23, t == PixelType::f32 ? 0.2 : 0);
                const std::string border = mode ? std::string(",border=") + to_string(*mode) + ",value=7" : "";
                for (const bool dilate : {true, false}) {
                    std::vector<double> want = morph3(v, e.r, e.inside, dilate, mode, 7);
                    // Integer images: an element that covers only ignored voxels leaves SPEC's empty value.
                    for (const Backend b : host_backends) {
                        const std::string spec = std::string(dilate ? "dilate" : "erode") + ":se=" + e.se + border;
                        const Image out = Pipeline({spec}).run(v, {.backend = b});
                        expect_near(volume_samples(out), want, 0, spec + " " + to_string(t) + " on " + to_string(b));
                    }
                }
            }
}

TEST(Volumes, DerivedMorphologyAndIterationsComposeTheVolumeSteps) {
    const Image v = random_volume(6, 5, 6, 1, PixelType::u8, 31);
    const auto ball = element_shapes()[1];
    // gradient = dilate - erode (saturating), two iterations of a ball:1 = dilate twice.
    const auto dil = morph3(v, 1, ball.inside, true, std::nullopt, 0), ero = morph3(v, 1, ball.inside, false, std::nullopt, 0);
    std::vector<double> gradient;
    for (std::size_t k = 0; k < dil.size(); ++k) gradient.push_back(std::max(0.0, dil[k] - ero[k]));
    Image once = Pipeline({"dilate:se=ball:1"}).run(v, {.backend = Backend::cpu});
    const auto twice = morph3(once, 1, ball.inside, true, std::nullopt, 0);
    for (const Backend b : host_backends) {
        expect_near(volume_samples(Pipeline({"gradient:se=ball:1"}).run(v, {.backend = b})), gradient, 0, "gradient ball:1");
        expect_near(volume_samples(Pipeline({"dilate:se=ball:1,iterations=2"}).run(v, {.backend = b})), twice, 0, "dilate twice");
    }
}

TEST(Volumes, MasksDeeperThanTheVolumeAndSinglePlanes) {
    // Two planes under a z mask of 19 (sigma_z 3): every mode reads far beyond both ends.
    for (const BorderMode mode : all_modes) {
        const Image v = random_volume(5, 4, 2, 1, PixelType::f32, 41);
        const std::string spec = std::string("gaussian:sigma=0.5,sigma_z=3,border=") + to_string(mode);
        const auto want = correlate3(v, outer3(gaussian_weights(0.5, 2), gaussian_weights(0.5, 2), gaussian_weights(3, 9)), mode, 0);
        expect_near(volume_samples(Pipeline({spec}).run(v, {.backend = Backend::cpu})), want, 2e-5, spec);
    }
    // A 2-D image is a volume of one plane: sigma_z under reflect reads that plane alone.
    const Image flat = random_image(11, 9, 1, PixelType::f32, 3);
    const Image a = Pipeline({"gaussian:sigma=1.5,sigma_z=2"}).run(flat, {.backend = Backend::cpu});
    const Image b = Pipeline({"gaussian:sigma=1.5"}).run(flat, {.backend = Backend::cpu});
    EXPECT_LE(max_abs_diff(a, b), 1e-6);
    // ball:2 on a one-plane volume: the disk of its middle plane.
    const Image one = random_volume(9, 9, 1, 1, PixelType::u8, 4);
    const Image by_ball = Pipeline({"dilate:se=ball:2"}).run(one, {.backend = Backend::cpu});
    Image as_image = copy_of(one.view().plane(0));
    EXPECT_EQ(max_abs_diff(by_ball.view().plane(0), Pipeline({"dilate:se=disk:2"}).run(as_image, {.backend = Backend::cpu})), 0);
}

TEST(Volumes, NanIgnoreNormalisesOverTheWhole3DWindow) {
    // nan=ignore on a volume: the sum over the valid voxels of the 3-D window over their weights' sum.
    const Image v = random_volume(7, 6, 5, 1, PixelType::f32, 53, 0.25);
    Image filled = copy_of(v), valid = copy_of(v);
    for (int y = 0; y < int(v.shape().rows()); ++y)
        for (int x = 0; x < 7; ++x) {
            const float s = v.row<float>(y)[x];
            filled.row<float>(y)[x] = s == s ? s : 0.0f;
            valid.row<float>(y)[x] = s == s ? 1.0f : 0.0f;
        }
    const Weights3 m = outer3(gaussian_weights(1, 3), gaussian_weights(1, 3), gaussian_weights(1, 3));
    const auto sums = correlate3(filled, m, BorderMode::reflect, 0), weights = correlate3(valid, m, BorderMode::reflect, 0);
    std::vector<double> want;
    for (std::size_t k = 0; k < sums.size(); ++k) want.push_back(weights[k] > 1e-4 ? sums[k] / weights[k] : NAN);
    for (const Backend b : host_backends)
        expect_near(volume_samples(Pipeline({"gaussian:sigma=1,sigma_z=1,nan=ignore"}).run(v, {.backend = b})), want, 1e-4,
                    std::string("nan=ignore on ") + to_string(b));
}

TEST(Volumes, BadVolumeParametersAreRefusedByName) {
    auto message = [](const std::string& spec) {
        try {
            (void)parse_operation(spec);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(message("gaussian:sigma=1,radius_z=3").find("radius_z"), std::string::npos);
    EXPECT_NE(message("dilate:se=ball:200").find("radius"), std::string::npos);
    EXPECT_NE(message("dilate:se=rect:3x3x0").find("sides"), std::string::npos);
    EXPECT_NE(message("scharr:dx=1,dz=1").find("dz=1"), std::string::npos);
    EXPECT_NE(message("sobel:dx=0,dz=3").find("dz"), std::string::npos);
    EXPECT_NE(message("box:depth=0").find("depth"), std::string::npos);
    EXPECT_THROW((void)Image(ImageShape{4, 4, 1, PixelType::u8, 0}), Error);
}

} // namespace
} // namespace apron::test
