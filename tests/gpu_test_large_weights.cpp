// Masks of any finite weights on the CUDA backend (SPEC.md, "Any finite weights"): the cases of
// test_large_weights.cpp (1e38 to 1e308, 1e-30 to the subnormal 1e-320, huge beside tiny, every
// normalisation, every type pair) through every path the planner can force there: direct (the tiled
// kernels for odd square masks, the run-time compiled kernel for the others, the baseline kernel with
// APRON_RUNTIME_DIRECT=0), separable (the fused kernel), low-rank (separable passes and combines) and the
// FFT (cuFFT), each against the float64 result computed in the test (large_weights_support.hpp). Skips
// without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/overrides.hpp"
#include "apron/errors.hpp"
#include "apron/pipeline.hpp"
#include "cuda/fft_linear.hpp"
#include "gpu_test_support.hpp"
#include "large_weights_support.hpp"
#include "plan/plan.hpp"
#include "plan_support.hpp"

using namespace apron;
using namespace apron::test::large;

namespace {

// The override table without the run-time compiled kernel, for one scope (the baseline kernel's cases).
Overrides without_runtime_direct() {
    Overrides o = overrides();
    o.runtime_off = true;
    return o;
}

struct Path {
    Algorithm algorithm;
    bool baseline;  // direct with the run-time compiled kernel switched off
    const char* name;
};
constexpr Path paths[] = {{Algorithm::automatic, false, "auto"},     {Algorithm::direct, false, "direct"},
                          {Algorithm::direct, true, "baseline"},     {Algorithm::separable, false, "separable"},
                          {Algorithm::low_rank, false, "low-rank"}, {Algorithm::fft, false, "fft"}};

bool must_accept(const Path& p, const WeightCase& wc) {
    if (p.algorithm == Algorithm::separable) return wc.rank1;
    if (p.algorithm == Algorithm::low_rank) return wc.rank2;
    return true;
}

LinearStep step_of(const Mask& m, BorderMode border, double value, Normalise n, double scale, double delta) {
    LinearStep s;
    s.mask = m;
    s.border = border;
    s.border_value = value;
    s.normalise = n;
    s.scale = scale;
    s.delta = delta;
    return s;
}

// Every finish and type pair of one mask on every CUDA path; returns the runs made.
int check_on_gpu(const WeightCase& wc, double magnitude, std::uint32_t& seed) {
    struct Finish {
        Normalise n;
        double scale, delta;
    };
    std::vector<Finish> finishes = {{Normalise::none, 1, 0}, {Normalise::sum, 1, 0}, {Normalise::sum, 0.5, 3}, {Normalise::book, 1, 0}};
    if (magnitude != 1 && std::isfinite(1 / magnitude) && 1 / magnitude >= DBL_MIN) finishes.push_back({Normalise::none, 1 / magnitude, 3});
    const std::pair<PixelType, PixelType> types[] = {{PixelType::u8, PixelType::u8},   {PixelType::u16, PixelType::u16},
                                                     {PixelType::f32, PixelType::f32}, {PixelType::u8, PixelType::f32},
                                                     {PixelType::f32, PixelType::u8}};
    int runs = 0;
    for (const Finish& f : finishes)
        for (auto [tin, tout] : types) {
            ++seed;
            // One channel: the run-time compiled kernel is compiled per mask, types and channel count (its
            // weights are literals), and one count keeps the compilations to about a hundred.
            const int w = 7 + int(seed % 29), h = 5 + int(seed % 13), c = 1;
            const BorderMode border = test::all_borders[seed % std::size(test::all_borders)];
            const Image in = test::random_image(w, h, c, tin, seed);
            const LinearStep s = step_of(wc.mask, border, tin == PixelType::f32 ? 0.75 : 7, f.n, f.scale, f.delta);
            for (const Path& p : paths) {
                const std::string what = wc.name + " x " + number_text(magnitude) + " normalise " + std::to_string(int(f.n)) +
                                         " scale " + number_text(f.scale) + " delta " + number_text(f.delta) + " " + types_of(tin, tout) +
                                         " border " + to_string(border) + " " + std::to_string(w) + "x" +
                                         std::to_string(h) + "x" + std::to_string(c) + " cuda " + p.name;
                RunOptions o;
                o.backend = Backend::cuda;
                o.out_type = tout;
                o.algorithm = p.algorithm;
                std::optional<OverrideScope> off;
                if (p.baseline) off.emplace(without_runtime_direct());
                runs += run_and_check(s, in, o, must_accept(p, wc), what);
            }
        }
    return runs;
}

} // namespace

TEST(GpuLargeWeights, EveryCudaPathEveryMagnitude) {
    REQUIRE_GPU();
    std::uint32_t seed = 500;
    int runs = 0;
    for (double magnitude : magnitudes())
        for (const WeightCase& wc : masks_at(magnitude, seed)) runs += check_on_gpu(wc, magnitude, seed);
    for (const WeightCase& wc : mixed_magnitudes()) runs += check_on_gpu(wc, std::fabs(wc.mask.weights[0]), seed);
    EXPECT_GT(runs, 2000);
}

// The review's case on cuFFT itself (launch_fft_linear, so a fall-back to the direct kernels cannot pass
// for it): a 3x3 mask of 1e38 or 1e200 with normalize=sum is the mean.
TEST(GpuLargeWeights, CufftTakesHugeMasks) {
    REQUIRE_GPU();
    const Image in = test::random_image(37, 23, 2, PixelType::u8, 9);
    auto ex = make_cuda_executor();
    for (double v : {1e38, 1e200, 1e308, 1e-300}) {
        const LinearStep s = step_of(Mask(3, 3, std::vector<double>(9, v)), BorderMode::reflect, 0, Normalise::sum, 1, 0);
        LinearPlan p = test::linear_plan(s, in.shape(), PixelType::u8);
        p.algorithm = LinearAlgorithm::fft;
        Buffer d_in = ex->allocate(in.shape()), d_out = ex->allocate(in.shape());
        ex->upload(in.view(), d_in.view);
        ex->synchronize();
        const bool took = cuda::launch_fft_linear(p, d_in.cview(), d_out.view, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_TRUE(took) << v;
        Image got(in.shape());
        ex->download(d_out.cview(), got.view());
        if (took) expect_within_spec(s, in.view(), got.view(), "cuFFT " + number_text(v));
    }
}

// cuFFT shifts the samples of integer images by the middle of the image's own range: an all-zero image
// gives exactly 0 and a constant one its exact mean whatever the weights (the middle of the type's range
// made them noise of 128 x the weights: 255 instead of 0 with weights of 1e38), and a dark u16 image
// (samples 0..2) stays within SPEC.md's tolerance of its own max |in|. Through whole plans (weights of
// 1e200 without normalisation add a combine step after the FFT), the FFT forced.
TEST(GpuLargeWeights, CufftCentresOnTheImage) {
    REQUIRE_GPU();
    std::mt19937 rng(77);
    std::vector<double> base(25 * 23);
    for (double& x : base) x = std::uniform_real_distribution<double>(-1, 1)(rng);
    for (double magnitude : {1.0, 1e38, 1e200})
        for (PixelType t : {PixelType::u8, PixelType::u16}) {
            std::vector<double> w = base;
            for (double& x : w) x *= magnitude;
            const Mask m(25, 23, w);
            Image zero(70, 50, 2, t), flat(70, 50, 2, t), dark = test::random_image(70, 50, 1, t, 78);
            with_type(t, [&]<class T>() {
                for (int y = 0; y < 50; ++y) {
                    std::fill_n(zero.row<T>(y), 140, T(0));
                    std::fill_n(flat.row<T>(y), 140, T(9));
                    for (int x = 0; x < 70; ++x) dark.row<T>(y)[x] = T(int(dark.row<T>(y)[x]) % 3);
                }
            });
            const std::string what = number_text(magnitude) + " " + to_string(t);
            const std::pair<const Image*, LinearStep> cases[] = {
                {&zero, step_of(m, BorderMode::wrap, 0, Normalise::none, 1, 0)},
                {&flat, step_of(m, BorderMode::reflect, 0, Normalise::sum, 1, 0)},
                {&dark, step_of(m, BorderMode::constant, 1, Normalise::none, 1, 0)}};
            for (const auto& [in, s] : cases)
                for (PixelType out : {PixelType::u8, PixelType::f32}) {
                    const Pipeline p = pipeline_of(s);
                    const ExecutionPlan plan = make_plan(p.operations(), in->shape(), out, Backend::cuda, Algorithm::fft);
                    ASSERT_EQ(std::get<LinearPlan>(plan.operations.at(0).steps.at(0).what).algorithm, LinearAlgorithm::fft);
                    const Image got = p.run(*in, {.backend = Backend::cuda, .out_type = out, .algorithm = Algorithm::fft});
                    if (in == &zero) EXPECT_EQ(test::max_abs(got.view()), 0.0) << what << " zero image";
                    else expect_within_spec(s, in->view(), got.view(), "cuFFT " + what);
                }
        }
}
