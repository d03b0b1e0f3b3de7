// NPP on the cases users run (bench/user_cases.hpp gives the names, kernels and elements; this file builds
// the same ones without apron): 1, 3 and 4 interleaved channels, u8/u16/f32, border replicate. Rows carry
// channels and shape after the common columns:
//   correlate      3x3, 5x5    nppiFilterBorder32f_8u / 32f_16u / _32f C1R/C3R/C4R, bench_gpu's float weights
//                              (random in (-1, 1) / k, std::mt19937 seeded with k, as user_correlation)
//   correlate_int  3x3, 5x5    nppiFilterBorder_8u C1R/C3R/C4R, weights -3..3 with divisor 8 (u8 only: NPP's
//                              integer-kernel FilterBorder for 16u is not used)
//   gaussian_mask  5x5, 13x13  nppiFilterGaussBorder C1R/C3R/C4R, NPP's fixed masks (apron's gaussian sigma=0.6
//                              and sigma=2 have these widths)
//   dilate, erode  rect, ellipse, cross, disk, random   nppiDilateBorder / nppiErodeBorder C1R/C3R/C4R with the
//                              same 0/1 mask (OpenCV's ellipse and cross, scikit-image's disk, the LCG random)
// Default: u8 everywhere, plus u16 and f32 for correlate (float weights) and the Gaussian masks; sides 7 and 15;
// erode only rect:15x15 and disk:7. --full: every type, erode on every element, sides 31 and 63 too.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace user_cases {

// One NPP call by channel count: NAME##C1R_Ctx, C3R_Ctx or C4R_Ctx.
#define NPP_BY_CHANNELS(c, NAME, ...) \
    ((c) == 1 ? NAME##C1R_Ctx(__VA_ARGS__) : (c) == 3 ? NAME##C3R_Ctx(__VA_ARGS__) : NAME##C4R_Ctx(__VA_ARGS__))

// The elements, row-major 0/1, side k (disk: k = 2R + 1).
inline std::vector<Npp8u> element(const std::string& kind, int k) {
    std::vector<Npp8u> m(size_t(k) * k, 0);
    const int r = k / 2;
    if (kind == "rect") std::fill(m.begin(), m.end(), Npp8u(1));
    else if (kind == "cross") {
        for (int i = 0; i < k; ++i) m[size_t(r) * k + i] = m[size_t(i) * k + r] = 1;
    } else if (kind == "disk") {
        for (int y = 0; y < k; ++y)
            for (int x = 0; x < k; ++x) m[size_t(y) * k + x] = (x - r) * (x - r) + (y - r) * (y - r) <= r * r;
    } else if (kind == "ellipse") {  // OpenCV's getStructuringElement(MORPH_ELLIPSE) on a square
        const double inv_r2 = r ? 1.0 / (double(r) * r) : 0.0;
        for (int y = 0; y < k; ++y) {
            const int dy = y - r;
            const int dx = int(std::nearbyint(r * std::sqrt(double(r * r - dy * dy) * inv_r2)));
            for (int x = std::max(r - dx, 0); x < std::min(r + dx + 1, k); ++x) m[size_t(y) * k + x] = 1;
        }
    } else {  // random: x = k; x = (1103515245 x + 12345) mod 2^31 per cell; cell = (x >> 16) & 1; centre set
        std::uint32_t x = std::uint32_t(k);
        for (Npp8u& v : m) {
            x = (1103515245u * x + 12345u) & 0x7fffffffu;
            v = Npp8u((x >> 16) & 1u);
        }
        m[size_t(r) * k + r] = 1;
    }
    return m;
}

inline std::string element_name(const std::string& kind, int k) {
    if (kind == "disk") return "disk:" + std::to_string(k / 2);
    return kind + ":" + std::to_string(k) + "x" + std::to_string(k);
}

// bench_gpu's user_correlation weights: float (random in (-1, 1) / k) or integer (-3..3, divisor 8).
inline void correlation_weights(int k, std::vector<Npp32f>& wf, std::vector<Npp32s>& wi) {
    std::mt19937 rng{unsigned(k)};
    std::uniform_real_distribution<double> real(-1, 1);
    wf.resize(size_t(k) * k);
    for (Npp32f& v : wf) v = Npp32f(real(rng) / k);
    std::mt19937 irng{unsigned(k)};
    wi.resize(size_t(k) * k);
    for (Npp32s& v : wi) v = int(irng() % 7) - 3;
}

// The three sample types' calls, overloaded on the pointer type.
inline NppStatus filter(const Npp8u* s, int ss, Npp8u* d, int ds, NppiSize roi, const Npp32f* w, NppiSize ks,
                        NppiPoint a, int c, const NppStreamContext& ctx) {
    return NPP_BY_CHANNELS(c, nppiFilterBorder32f_8u_, s, ss, roi, NppiPoint{0, 0}, d, ds, roi, w, ks, a,
                           NPP_BORDER_REPLICATE, ctx);
}
inline NppStatus filter(const Npp16u* s, int ss, Npp16u* d, int ds, NppiSize roi, const Npp32f* w, NppiSize ks,
                        NppiPoint a, int c, const NppStreamContext& ctx) {
    return NPP_BY_CHANNELS(c, nppiFilterBorder32f_16u_, s, ss, roi, NppiPoint{0, 0}, d, ds, roi, w, ks, a,
                           NPP_BORDER_REPLICATE, ctx);
}
inline NppStatus filter(const Npp32f* s, int ss, Npp32f* d, int ds, NppiSize roi, const Npp32f* w, NppiSize ks,
                        NppiPoint a, int c, const NppStreamContext& ctx) {
    return NPP_BY_CHANNELS(c, nppiFilterBorder_32f_, s, ss, roi, NppiPoint{0, 0}, d, ds, roi, w, ks, a,
                           NPP_BORDER_REPLICATE, ctx);
}
inline NppStatus gauss(const Npp8u* s, int ss, Npp8u* d, int ds, NppiSize roi, NppiMaskSize m, int c,
                       const NppStreamContext& ctx) {
    return NPP_BY_CHANNELS(c, nppiFilterGaussBorder_8u_, s, ss, roi, NppiPoint{0, 0}, d, ds, roi, m,
                           NPP_BORDER_REPLICATE, ctx);
}
inline NppStatus gauss(const Npp16u* s, int ss, Npp16u* d, int ds, NppiSize roi, NppiMaskSize m, int c,
                       const NppStreamContext& ctx) {
    return NPP_BY_CHANNELS(c, nppiFilterGaussBorder_16u_, s, ss, roi, NppiPoint{0, 0}, d, ds, roi, m,
                           NPP_BORDER_REPLICATE, ctx);
}
inline NppStatus gauss(const Npp32f* s, int ss, Npp32f* d, int ds, NppiSize roi, NppiMaskSize m, int c,
                       const NppStreamContext& ctx) {
    return NPP_BY_CHANNELS(c, nppiFilterGaussBorder_32f_, s, ss, roi, NppiPoint{0, 0}, d, ds, roi, m,
                           NPP_BORDER_REPLICATE, ctx);
}
#define NPP_MORPH_OVERLOAD(T, SUFFIX)                                                                          \
    inline NppStatus morph(bool dilate, const T* s, int ss, T* d, int ds, NppiSize roi, const Npp8u* m,        \
                           NppiSize ms, NppiPoint a, int c, const NppStreamContext& ctx) {                     \
        return dilate ? NPP_BY_CHANNELS(c, nppiDilateBorder_##SUFFIX##_, s, ss, roi, NppiPoint{0, 0}, d, ds,  \
                                        roi, m, ms, a, NPP_BORDER_REPLICATE, ctx)                              \
                      : NPP_BY_CHANNELS(c, nppiErodeBorder_##SUFFIX##_, s, ss, roi, NppiPoint{0, 0}, d, ds,   \
                                        roi, m, ms, a, NPP_BORDER_REPLICATE, ctx);                             \
    }
NPP_MORPH_OVERLOAD(Npp8u, 8u)
NPP_MORPH_OVERLOAD(Npp16u, 16u)
NPP_MORPH_OVERLOAD(Npp32f, 32f)
#undef NPP_MORPH_OVERLOAD

// A pitched device image of `channels` interleaved samples of T, random (f32: integers 0..255).
template <class T> struct ColourImage {
    T* ptr = nullptr;
    size_t pitch = 0;
    ColourImage(int size, int channels, unsigned seed) {
        const size_t row = size_t(size) * channels * sizeof(T);
        CUDA_CHECK(cudaMallocPitch(reinterpret_cast<void**>(&ptr), &pitch, row, size_t(size)));
        std::vector<T> h(size_t(size) * size * channels);
        std::mt19937 rng{seed};
        for (T& v : h) v = T(sizeof(T) == 4 ? rng() % 256 : rng());
        CUDA_CHECK(cudaMemcpy2D(ptr, pitch, h.data(), row, row, size_t(size), cudaMemcpyHostToDevice));
    }
    ~ColourImage() { cudaFree(ptr); }
    ColourImage(const ColourImage&) = delete;
    ColourImage& operator=(const ColourImage&) = delete;
    int step() const { return int(pitch); }
};

// Writes rows through record(op, type, param, size, ms, channels, shape).
template <class T, class Record>
void run_type(const char* type, bool all_families, bool full, int size, Timer& timer, const NppStreamContext& ctx,
              Record&& record) {
    for (const int c : {1, 3, 4}) {
        ColourImage<T> src(size, c, unsigned(size) + 7919u * unsigned(c)), dst(size, c, 1u);
        const NppiSize roi{size, size};
        const std::string at = std::string(" ") + type + " C" + std::to_string(c) + " @" + std::to_string(size);
        for (const int k : {3, 5}) {
            std::vector<Npp32f> wf;
            std::vector<Npp32s> wi;
            correlation_weights(k, wf, wi);
            auto* dwf = static_cast<Npp32f*>(device_copy(wf));
            auto* dwi = static_cast<Npp32s*>(device_copy(wi));
            const NppiSize ks{k, k};
            const NppiPoint anchor{k / 2, k / 2};
            const std::string side = std::to_string(k) + "x" + std::to_string(k);
            record("correlate", type, k, size, timer.median_ms("FilterBorder " + side + at, [&] {
                return filter(src.ptr, src.step(), dst.ptr, dst.step(), roi, dwf, ks, anchor, c, ctx);
            }), c, side);
            if constexpr (sizeof(T) == 1)
                record("correlate_int", type, k, size, timer.median_ms("FilterBorder_8u " + side + at, [&] {
                    return NPP_BY_CHANNELS(c, nppiFilterBorder_8u_, src.ptr, src.step(), roi, NppiPoint{0, 0},
                                           dst.ptr, dst.step(), roi, dwi, ks, anchor, 8, NPP_BORDER_REPLICATE, ctx);
                }), c, side);
            CUDA_CHECK(cudaDeviceSynchronize());
            cudaFree(dwf);
            cudaFree(dwi);
        }
        for (const int w : {5, 13}) {
            const std::string side = std::to_string(w) + "x" + std::to_string(w);
            record("gaussian_mask", type, w, size, timer.median_ms("FilterGaussBorder " + side + at, [&] {
                return gauss(src.ptr, src.step(), dst.ptr, dst.step(), roi, w == 5 ? NPP_MASK_SIZE_5_X_5
                                                                                    : NPP_MASK_SIZE_13_X_13, c, ctx);
            }), c, side);
        }
        if (!all_families) continue;
        std::vector<int> sides = {7, 15};
        if (full) sides.insert(sides.end(), {31, 63});
        for (const bool dilate : {true, false})
            for (const int k : sides)
                for (const char* kind : {"rect", "ellipse", "cross", "disk", "random"}) {
                    const std::string shape = element_name(kind, k);
                    if (!dilate && !full && !(k == 15 && (shape == "rect:15x15" || shape == "disk:7"))) continue;
                    auto* mask = static_cast<Npp8u*>(device_copy(element(kind, k)));
                    const NppiSize ms{k, k};
                    const NppiPoint anchor{k / 2, k / 2};
                    record(dilate ? "dilate" : "erode", type, k, size,
                           timer.median_ms(std::string(dilate ? "DilateBorder " : "ErodeBorder ") + shape + at, [&] {
                               return morph(dilate, src.ptr, src.step(), dst.ptr, dst.step(), roi, mask, ms, anchor, c,
                                            ctx);
                           }), c, shape);
                    CUDA_CHECK(cudaDeviceSynchronize());
                    cudaFree(mask);
                }
    }
}

} // namespace user_cases
