// The linear CUDA kernels written over samples (register and tiled direct kernels, fused separable) on
// 1-4 interleaved channels, called directly on device views, against the reference executor: exact plans
// bit for bit, float plans within SPEC's tolerance. Every border mode, u8/u16/f32, 1x1 and odd sizes,
// masks larger than the image, images large enough for interior blocks, and ROI views whose data start
// 1-3 samples into the buffer with pitches that are no multiple of 4 samples. Each case asserts that the
// family it means to cover takes the plan (and, for the register kernel, the image), so a kernel that
// declines fails the test instead of passing through another. Skips where no GPU is found.
#include <gtest/gtest.h>

#if APRON_HAVE_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "apron/pipeline.hpp"
#include "core/dispatch.hpp"
#include "cuda/direct_regs.hpp"
#include "cuda/direct_tiled.hpp"
#include "cuda/separable_fused.hpp"
#include "plan/plan.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

const char* const modes[] = {"reflect", "nearest", "mirror", "wrap", "constant"};

std::string with_border(const std::string& spec, const std::string& mode) {
    return spec + ",border=" + mode + (mode == "constant" ? ",value=7" : "");
}

// A K x K mask file of the given weights (row by row, exact to the last digit) in the temp directory.
std::string write_mask_file(const std::string& name, int k, const std::vector<double>& weights) {
    const std::filesystem::path path = std::filesystem::temp_directory_path() / ("apron_colour_linear_" + name + ".kernel");
    std::ofstream f(path);
    f << k << ' ' << k << '\n' << std::setprecision(17);
    for (int j = 0; j < k; ++j) {
        for (int i = 0; i < k; ++i) f << weights[std::size_t(j * k + i)] << ' ';
        f << '\n';
    }
    return path.string();
}

// A K x K mask file of random weights (fixed seed): small integers (an exact plan on integer images,
// sums far below 2^24 even for u16) or binary fractions over 2^32, beyond the divisors an exact plan takes
// (apron::max_mask_divisor), so a float plan on every type.
std::string mask_file(int k, bool integer) {
    std::mt19937 rng(std::uint32_t(1000 + k * 2 + integer));
    std::vector<double> weights(std::size_t(k * k));
    for (double& w : weights) w = integer ? double(int(rng() % 6) - 2) : std::ldexp(double(rng() | 1u), -31) - 1.0;
    return write_mask_file(std::to_string(k) + (integer ? "_int" : "_float"), k, weights);
}

// A device copy of an image: its data start `offset` samples into the buffer, and its rows are `pitch`
// bytes apart (0: 256-byte rows, as the executor's own buffers).
class DeviceImage {
public:
    DeviceImage(const ImageShape& shape, int offset, bool odd_pitch) : shape_(shape) {
        const std::size_t bps = bytes_per_sample(shape.type), row = shape.row_bytes();
        pitch_ = odd_pitch ? (row + 4 * bps - 1) / (4 * bps) * (4 * bps) + bps * std::size_t(1 + offset % 3)
                           : (row + 255) / 256 * 256;
        const std::size_t bytes = pitch_ * std::size_t(shape.height) + std::size_t(offset) * bps + 64;
        EXPECT_EQ(cudaMalloc(&base_, bytes), cudaSuccess);
        EXPECT_EQ(cudaMemset(base_, 0xA5, bytes), cudaSuccess);  // garbage where nothing is written
        data_ = static_cast<std::byte*>(base_) + std::size_t(offset) * bps;
    }
    DeviceImage(ConstImageView host, int offset, bool odd_pitch) : DeviceImage(host.shape, offset, odd_pitch) {
        EXPECT_EQ(cudaMemcpy2D(data_, pitch_, host.data, host.pitch, shape_.row_bytes(), std::size_t(shape_.height),
                               cudaMemcpyHostToDevice),
                  cudaSuccess);
    }
    ~DeviceImage() { cudaFree(base_); }
    DeviceImage(const DeviceImage&) = delete;
    DeviceImage& operator=(const DeviceImage&) = delete;

    ImageView view() const { return ImageView{data_, shape_, pitch_, Memory::device}; }
    ConstImageView cview() const { return ConstImageView{data_, shape_, pitch_, Memory::device}; }
    Image download() const {
        Image host(shape_);
        EXPECT_EQ(cudaMemcpy2D(host.view().data, host.pitch(), data_, pitch_, shape_.row_bytes(),
                               std::size_t(shape_.height), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        return host;
    }

private:
    ImageShape shape_;
    std::size_t pitch_ = 0;
    void* base_ = nullptr;
    std::byte* data_ = nullptr;
};

LinearPlan plan_of(const std::string& spec, const ImageShape& shape, PixelType out, Algorithm algorithm) {
    const ExecutionPlan plan = make_plan({parse_operation(spec)}, shape, out, Backend::cuda, algorithm);
    return std::get<LinearPlan>(plan.operations.at(0).steps.at(0).what);
}

enum class Family { direct, separable };

// Outputs per thread of the register kernel on this view, 0 where it declines (3x3 and 5x5 only).
int regs_outputs(int k, PixelType t, ConstImageView view) {
    int rx = 0;
    with_type(t, [&]<class In>() {
        if (k == 3) rx = cuda::regs::usable<3, In>(view);
        if (k == 5) rx = cuda::regs::usable<5, In>(view);
    });
    return rx;
}

struct Case {
    std::string spec;
    int width, height, channels;
    PixelType type;
    int offset = 0;          // samples from the buffer start (input and output)
    bool odd_pitch = false;  // pitch no multiple of 4 samples
    std::optional<PixelType> out = {};  // the output type, if not the input's
};

// Runs one family on device copies of a random image and compares with the reference executor.
// Returns the plan, so callers can assert more about it.
LinearPlan expect_matches_reference(Family family, const Case& c, std::uint32_t seed) {
    const Image host = test::random_image(c.width, c.height, c.channels, c.type, seed);
    SCOPED_TRACE(c.spec + " " + to_string(c.type) + " " + std::to_string(c.width) + "x" + std::to_string(c.height) + "x" +
                 std::to_string(c.channels) + " offset " + std::to_string(c.offset) + (c.odd_pitch ? " odd pitch" : ""));
    const PixelType out_type = c.out.value_or(c.type);
    const LinearPlan lp =
        plan_of(c.spec, host.shape(), out_type, family == Family::direct ? Algorithm::direct : Algorithm::separable);
    if (family == Family::direct) EXPECT_TRUE(cuda::direct_tiled_supports(lp));
    else EXPECT_TRUE(cuda::separable_fused_supports(lp));
    const Image ref = Pipeline({c.spec}).run(host, {.backend = Backend::reference, .out_type = out_type});
    const DeviceImage in(host.view(), c.offset, c.odd_pitch);
    const DeviceImage out(ref.shape(), c.offset, c.odd_pitch);
    if (family == Family::direct) cuda::launch_direct_tiled(lp, in.cview(), out.view(), nullptr);
    else cuda::launch_separable_fused(lp, in.cview(), out.view(), nullptr);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const Image got = out.download();
    if (lp.exact) {
        EXPECT_TRUE(test::identical(got, ref)) << "max diff " << test::max_abs_diff(got, ref);
    } else if (out_type == PixelType::f32) {
        // Each result lies within 1e-5 * sum|m| * max|in| of float64 (SPEC); the reference is float64.
        const double scale = std::max({1.0, test::max_abs(host), std::fabs(lp.step.border_value)});
        EXPECT_LE(test::max_abs_diff(got, ref), 1e-5 * std::max(1.0, lp.step.mask.abs_sum()) * scale + 1e-6);
    } else {
        EXPECT_LE(test::max_abs_diff(got, ref), 1.0);
    }
    return lp;
}

struct Size {
    int w, h;
};
// 1x1, tiny odd sizes (masks larger than the image), odd widths, and sizes with interior blocks for
// every kernel (the register kernel's blocks are 128-256 samples x 32-64 rows, the tiles' 128 x 8-64).
const Size direct_sizes[] = {{1, 1}, {3, 2}, {5, 7}, {67, 33}, {129, 203}};

} // namespace

// 3x3 and 5x5 (the register kernel on aligned views, the tiles on unaligned ones): every channel count,
// type and border mode, integer masks (exact on u8/u16) and float masks.
TEST(CudaColourLinear, DirectSmallMasksEveryChannelCountTypeAndBorder) {
    REQUIRE_GPU();
    std::uint32_t seed = 1;
    for (int k : {3, 5})
        for (bool integer : {true, false}) {
            const std::string mask = "correlate:mask=" + mask_file(k, integer);
            for (int channels = 1; channels <= 4; ++channels)
                for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
                    for (const char* mode : modes)
                        for (const Size& s : direct_sizes)
                            for (bool roi : {false, true}) {
                                const Case c{with_border(mask, mode), s.w, s.h, channels, t, roi ? 1 + int(seed % 3) : 0, roi};
                                const LinearPlan lp = expect_matches_reference(Family::direct, c, seed++);
                                EXPECT_EQ(lp.exact, integer && t != PixelType::f32);
                                // The register kernel takes every aligned view of f32, and of integer
                                // types at 3x3, for every channel count; unaligned views go to the tiles.
                                const Image probe(ImageShape{s.w, s.h, channels, t});
                                const DeviceImage view(probe.view(), c.offset, c.odd_pitch);
                                const int rx = regs_outputs(k, t, view.cview());
                                if (roi) EXPECT_EQ(rx, 0);
                                else if (t == PixelType::f32 || k == 3) EXPECT_NE(rx, 0) << "register kernel declined";
                            }
        }
}

// 7x7 .. 31x31 (the tiles' four-outputs form): every channel count, type and border mode, including
// masks larger than the image and unaligned views (the scalar staging path).
TEST(CudaColourLinear, DirectTiledEveryChannelCountTypeAndBorder) {
    REQUIRE_GPU();
    std::uint32_t seed = 5000;
    for (int k : {7, 9, 17, 31}) {
        const std::string int_mask = "correlate:mask=" + mask_file(k, true);
        const std::string float_mask = "correlate:mask=" + mask_file(k, false);
        for (int channels = 1; channels <= 4; ++channels)
            for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
                for (const char* mode : modes)
                    for (const Size& s : {Size{5, 7}, Size{129, 203}})
                        for (bool roi : {false, true}) {
                            // u16 with a big integer mask may need more than f32's 24 bits: a float mask there.
                            const std::string& mask = t == PixelType::u16 && k > 5 ? float_mask : int_mask;
                            const Case c{with_border(mask, mode), s.w, s.h, channels, t, roi ? 1 + int(seed % 3) : 0, roi};
                            expect_matches_reference(Family::direct, c, seed++);
                        }
    }
}

// Exact plans keep identical bits on images large enough for interior blocks of both kernels, where
// integer rows load as 4-sample words (u16 words once unpacked to garbage: every channel count).
TEST(CudaColourLinear, DirectExactColourOnALargeImage) {
    REQUIRE_GPU();
    for (PixelType t : {PixelType::u8, PixelType::u16})
        for (int channels = 1; channels <= 4; ++channels)
            for (const char* spec : {"sharpen", "box:width=5", "correlate:mask=samples/masks/edge3x3.kernel",
                                     "box:width=9,border=wrap"}) {
                const Case c{spec, 613, 311, channels, t};
                EXPECT_TRUE(expect_matches_reference(Family::direct, c, 77u + std::uint32_t(channels)).exact);
            }
}

// The exact finish of the GPU kernels' f32 sums (finish_exact32) on every kind of denominator the planner
// makes: 1, powers of two (a scale folded in), odd (boxes: no ties) and even non-powers (weights summing to
// 12 and 24: exact halves that go to the even neighbour), with offsets (book normalisation of a zero-sum
// mask), odd and negative deltas and saturation, u8 and u16, 1-4 channels, against the reference
// executor's 64-bit finish.
TEST(CudaColourLinear, ExactFinishesOfEveryDenominator) {
    REQUIRE_GPU();
    const std::string sum12 = write_mask_file("sum12_3", 3, {1, 2, 1, 2, 0, 2, 1, 2, 1});
    const std::string sum24 = write_mask_file("sum24_5", 5, {0, 1, 1, 1, 0, 1, 1, 2, 1, 1, 1, 2, 0, 2, 1, 1, 1, 2, 1, 1, 0, 1, 1, 1, 0});
    const std::string zero = write_mask_file("zero_3", 3, {-1, -2, -1, 0, 0, 0, 1, 2, 1});
    const std::vector<std::pair<Family, std::string>> cases = {
        {Family::direct, "correlate:mask=" + sum12 + ",normalize=sum"},
        {Family::direct, "correlate:mask=" + sum12 + ",normalize=sum,delta=3,border=wrap"},
        {Family::direct, "correlate:mask=" + sum24 + ",normalize=sum,delta=-7"},
        {Family::direct, "correlate:mask=" + sum12 + ",scale=0.25,delta=1"},
        {Family::direct, "correlate:mask=" + zero + ",normalize=book"},
        {Family::direct, "correlate:mask=" + zero + ",delta=-5,border=constant,value=9"},
        {Family::direct, "box:width=3"},
        {Family::direct, "box:width=5,delta=2"},
        {Family::separable, "separable:row=1:2:3,column=1:1:2,normalize=sum"},
        {Family::separable, "separable:row=1:2:3,column=1:1:2,normalize=sum,delta=1,border=mirror"},
        {Family::separable, "box:width=7,height=5"},
    };
    std::uint32_t seed = 15000;
    for (const auto& [family, spec] : cases)
        for (PixelType t : {PixelType::u8, PixelType::u16})
            for (int channels = 1; channels <= 4; ++channels)
                for (const Size& s : {Size{5, 7}, Size{613, 311}}) {
                    const LinearPlan lp = expect_matches_reference(family, Case{spec, s.w, s.h, channels, t}, seed++);
                    EXPECT_TRUE(lp.exact && lp.finish.fits_int32) << spec << ": the 32-bit finish does not take it";
                }
}

// The exact finishes beyond the 32-bit form, bit for bit: a scale or delta that is not integral into u8 and
// u16 (64-bit integers and doubles, which the kernels run in a loop of their own, out of the unrolled
// stores), and exact plans into f32 (the intermediate steps of a pipeline on integer images): those that
// divide or add a fractional delta (the same loop) and plain sums plus an integral delta (finish_is_scaled_sum,
// inline; the IDP.4A kernel, which takes the gray u8 ones, keeps its own finish). On the
// register kernel (3x3, aligned views), the tiles (7x7, and 3x3 on unaligned views) and the fused
// separable kernel, 1-4 channels, tiny images and images with interior blocks.
TEST(CudaColourLinear, ExactFinishesBeyondThe32BitForm) {
    REQUIRE_GPU();
    const std::string m3 = mask_file(3, true), m7 = mask_file(7, true);
    struct Rare {
        Family family;
        std::string spec;
        PixelType in, out;
    };
    const Rare cases[] = {
        {Family::direct, "correlate:mask=" + m3 + ",scale=0.3,delta=0.5", PixelType::u8, PixelType::u8},
        {Family::direct, "correlate:mask=" + m3 + ",scale=3.7,delta=-2.25,border=reflect", PixelType::u16, PixelType::u16},
        {Family::direct, "correlate:mask=" + m7 + ",scale=0.3,delta=12.5,border=wrap", PixelType::u8, PixelType::u8},
        {Family::direct, "correlate:mask=" + m7 + ",scale=5.1", PixelType::u16, PixelType::u16},
        {Family::direct, "correlate:mask=" + m3 + ",delta=0.5", PixelType::u8, PixelType::f32},
        {Family::direct, "correlate:mask=" + m3 + ",delta=-3", PixelType::u8, PixelType::f32},  // finish_is_scaled_sum
        {Family::direct, "sobel:dx=1", PixelType::u16, PixelType::f32},
        {Family::direct, "correlate:mask=" + m7 + ",border=reflect", PixelType::u8, PixelType::f32},
        {Family::direct, "correlate:mask=" + m7 + ",scale=0.3,border=constant,value=9", PixelType::u16, PixelType::f32},
        {Family::separable, "separable:row=1:2:3,column=1:1:2,scale=0.3,delta=1.5", PixelType::u8, PixelType::u8},
        {Family::separable, "separable:row=1:2:3,column=1:1:2,scale=7.3,border=mirror", PixelType::u16, PixelType::u16},
        {Family::separable, "box:width=5,height=3", PixelType::u8, PixelType::f32},
    };
    std::uint32_t seed = 21000;
    for (const Rare& r : cases)
        for (int channels = 1; channels <= 4; ++channels)
            for (const Size& s : {Size{5, 7}, Size{613, 311}})
                for (bool roi : {false, true}) {
                    const Case c{r.spec, s.w, s.h, channels, r.in, roi ? 1 + int(seed % 3) : 0, roi, r.out};
                    const LinearPlan lp = expect_matches_reference(r.family, c, seed++);
                    EXPECT_TRUE(lp.exact && (r.out == PixelType::f32 || !lp.finish.fits_int32))
                        << r.spec << ": not the finish this test means to cover";
                }
}

// Fused separable: gaussians (float plans) and boxes (exact on integer images) at several radius
// buckets, every channel count, type and border mode, aligned and unaligned views.
TEST(CudaColourLinear, SeparableEveryChannelCountTypeAndBorder) {
    REQUIRE_GPU();
    std::uint32_t seed = 9000;
    const char* const specs[] = {"gaussian:sigma=1", "gaussian:sigma=2", "box:width=5,height=3",
                                 "separable:row=1:2:3,column=1:4:6:4:1"};
    for (const char* spec : specs)
        for (int channels = 1; channels <= 4; ++channels)
            for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
                for (const char* mode : modes)
                    for (const Size& s : {Size{1, 1}, Size{3, 2}, Size{67, 33}, Size{211, 300}})
                        for (bool roi : {false, true}) {
                            const Case c{with_border(spec, mode), s.w, s.h, channels, t, roi ? 1 + int(seed % 3) : 0, roi};
                            expect_matches_reference(Family::separable, c, seed++);
                        }
}

// Larger radius buckets (sigma 4: R = 12, sigma 10: R = 30) on colour, where the window of an RGBA
// row group is 16 + 2 R C samples.
TEST(CudaColourLinear, SeparableLargeRadiiOnColour) {
    REQUIRE_GPU();
    std::uint32_t seed = 12000;
    for (const char* spec : {"gaussian:sigma=4", "gaussian:sigma=10,border=wrap", "box:width=31,height=3,border=mirror"})
        for (int channels = 2; channels <= 4; ++channels)
            for (PixelType t : {PixelType::u8, PixelType::f32})
                for (const Size& s : {Size{7, 5}, Size{200, 300}})
                    for (bool roi : {false, true}) {
                        const Case c{spec, s.w, s.h, channels, t, roi ? 1 + int(seed % 3) : 0, roi};
                        expect_matches_reference(Family::separable, c, seed++);
                    }
}

#endif
