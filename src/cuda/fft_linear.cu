// Correlation through cuFFT, overlap-save, the CUDA twin of cpu/fft_linear.cpp: the output is cut into
// tiles of vx x vy; each tile's input region (nx x ny samples from the tile's first output minus the
// anchor, read through the border rule, so every border mode is exact) is transformed, multiplied by the
// mask's spectrum and transformed back, and the outputs whose window lies inside the region are kept:
// the circular correlation at (x + W-1, y + H-1) is sum m(i, j) R(x + i, y + j), the output at
// (ox + x, oy + y), for x < vx = nx - W + 1, y < vy = ny - H + 1.
//
// Tiles go through in batches (fft_tiling.cpp sizes them near the L2 cache), every channel of every tile
// one transform of the batch, in five launches: gather (border rule, de-interleave, convert), the forward
// transforms, the spectrum product, the inverse transforms, and scatter (keep, finish, store); float plans
// of integer images scan the image's range once first. Memory stays one batch whatever the image.
//
// Samples enter the transforms shifted and the scatter adds shift x (sum of weights) back: the transforms'
// error scales with the L2 norm of what they carry, and a centred region has about half of it. Float
// plans of u8/u16 images shift by the middle of the image's own range (sample_range finds it on the
// device, the gather and scatter read it there), so every |sample - shift| stays within max |sample|, to
// which SPEC.md's tolerance is relative (the middle of the type's range made an all-zero image's result
// noise of 128 x the weights, and a dark u16 image's noise of 32768 x them); exact plans shift by the
// middle of the type's range (their error bound holds for either); f32 images are not shifted. Exact
// plans use the integer weights and double transforms while double_fft_error_bound stays below 1/4, so
// the sum rounded to the nearest integer is the exact integer sum and the shared finish gives every
// backend's bits; float plans use float transforms (the spectrum itself computed in double) and the float
// finish of the direct kernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/linear_finish.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_view.hpp"
#include "cuda/fft_cache.hpp"
#include "cuda/fft_linear.hpp"
#include "cuda/fft_support.hpp"

namespace apron::cuda {
namespace {

// Where a batch's tiles are: passed by value to the gather and scatter kernels.
struct BatchGeometry {
    int nx, ny, row;          // transform sides; reals per row in the in-place layout
    std::size_t transform;    // reals per transform
    int vx, vy, tiles_x;      // kept outputs per tile; tiles per image row
    int tiles, first;         // tiles in the image (at most 2^30, see fft_tiling.cpp); the batch's first tile
    int anchor_x, anchor_y;   // the region starts this far above and left of the tile's first output
    int reach_x, reach_y;     // W - 1, H - 1: where the tile's first output lies in the result
};

constexpr int block_x = 32, block_y = 8;
constexpr int transforms_per_thread = 8;  // of the spectrum product: one load of the mask's bin for all

// A sample the transforms take: finite, and small enough that no sum over a tile overflows a float
// (2^64 x 2^26 samples x the weights). Anything else sends the call to the direct kernels.
__device__ __forceinline__ bool fits_transform(float v) { return fabsf(v) <= 0x1p64f; }

// The middle of the sample range sample_range folded into range[0..1]: an integer, exact in a float.
__device__ __forceinline__ float range_centre(const unsigned* range) { return floorf(0.5f * float(range[0] + range[1])); }

// The smallest and largest sample of an integer image into range[0] and range[1] (which the host set to
// the constant border's value, or to the empty range), by warp reductions and atomics.
template <class In>
__global__ void sample_range(DeviceView in, unsigned* range) {
    unsigned lo = 0xFFFFFFFFu, hi = 0;
    const int n = in.width * in.channels;
    for (int y = blockIdx.y; y < in.height; y += gridDim.y) {
        const In* row = reinterpret_cast<const In*>(in.data + std::size_t(y) * in.pitch);
        for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
            const unsigned v = row[k];
            lo = min(lo, v), hi = max(hi, v);
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        lo = min(lo, __shfl_down_sync(0xFFFFFFFFu, lo, o));
        hi = max(hi, __shfl_down_sync(0xFFFFFFFFu, hi, o));
    }
    if ((threadIdx.x & 31) == 0) atomicMin(range, lo), atomicMax(range + 1, hi);
}

// One thread per region sample of one tile (blockIdx.z) of the batch, every channel: the border rule, the
// shift, and one real per channel's transform. Tile slots past the image's last tile get zeros (the batch
// runs one cuFFT plan whatever its fill). `outside` is the constant border's sample, unshifted; the shift
// is `shift`, or the middle of `range` where there is one.
template <class In, class Real>
__global__ void __launch_bounds__(block_x* block_y)
    gather_tiles(DeviceView in, Real* batch, BatchGeometry g, BorderMode mode, Real outside, Real shift,
                 const unsigned* range, int* flag) {
    const int x = blockIdx.x * block_x + threadIdx.x, y = blockIdx.y * block_y + threadIdx.y;
    if (x >= g.nx || y >= g.ny) return;
    if (range) shift = Real(range_centre(range));
    const int C = in.channels;
    Real* dst = batch + std::size_t(blockIdx.z) * C * g.transform + std::size_t(y) * g.row + x;
    const int t = g.first + int(blockIdx.z);
    int sx = -1, sy = -1;
    if (t < g.tiles) {
        const long long ox = (long long)(t % g.tiles_x) * g.vx, oy = (long long)(t / g.tiles_x) * g.vy;
        sx = map_index(ox - g.anchor_x + x, in.width, mode);
        sy = map_index(oy - g.anchor_y + y, in.height, mode);
    }
    // cuFFT's in-place r2c loads each row's padding (the room for its half spectrum) along with the samples:
    // zeroed, so no uninitialised memory is read (compute-sanitizer initcheck), though it never reaches a result.
    if (x == g.nx - 1)
        for (int c = 0; c < C; ++c)
            for (int p = 1; p < g.row - g.nx + 1; ++p) dst[std::size_t(c) * g.transform + p] = Real(0);
    if (sx < 0 || sy < 0) {
        const Real v = t < g.tiles ? outside - shift : Real(0);
        for (int c = 0; c < C; ++c) dst[std::size_t(c) * g.transform] = v;
        return;
    }
    const In* src = reinterpret_cast<const In*>(in.data + std::size_t(sy) * in.pitch) + std::size_t(sx) * C;
    bool fits = true;
    for (int c = 0; c < C; ++c) {
        const In v = src[c];
        if constexpr (std::is_same_v<In, float>) fits = fits && fits_transform(v);
        dst[std::size_t(c) * g.transform] = Real(v) - shift;
    }
    if (!fits) *flag = 1;  // any writer will do: the host only asks whether one did
}

// Every bin of `transforms` half spectra times the mask's bin (the 1/(nx ny) of the inverse folded in).
template <class Complex>
__global__ void multiply_spectrum(Complex* batch, const Complex* mask, std::size_t bins, int transforms) {
    const std::size_t q = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    if (q >= bins) return;
    const Complex k = mask[q];
    const int b0 = blockIdx.y * transforms_per_thread;
    Complex v[transforms_per_thread];
#pragma unroll
    for (int b = 0; b < transforms_per_thread; ++b)
        if (b0 + b < transforms) v[b] = batch[std::size_t(b0 + b) * bins + q];
#pragma unroll
    for (int b = 0; b < transforms_per_thread; ++b)
        if (b0 + b < transforms) {
            const Complex a = v[b];
            Complex r;
            r.x = a.x * k.x - a.y * k.y;
            r.y = a.x * k.y + a.y * k.x;
            batch[std::size_t(b0 + b) * bins + q] = r;
        }
}

// The finish constants of the scatter: the shift's share of each sum, and how exact sums finish.
struct ScatterFinish {
    LinearFinish f;
    long long shift_sum = 0;   // exact: shift x sum of the integer weights
    float shift_sum_f = 0;     // float: shift x sum of the weights
    const unsigned* range = nullptr;  // float plans centred on the image: the shift is the range's middle,
    double weight_sum = 0;            // and shift x weight_sum replaces shift_sum_f
    bool exact32 = false;      // exact sums below 2^24 (the f32 accumulator): the 32-bit finish
};

// One thread per kept output of one tile (blockIdx.z) of the batch, every channel.
template <class Out, bool Exact>
__global__ void __launch_bounds__(block_x* block_y)
    scatter_tiles(const std::conditional_t<Exact, double, float>* batch, std::byte* out, std::size_t out_pitch, int width,
                  int height, int C, BatchGeometry g, ScatterFinish s) {
    const int x = blockIdx.x * block_x + threadIdx.x, y = blockIdx.y * block_y + threadIdx.y;
    const int t = g.first + int(blockIdx.z);
    if (x >= g.vx || y >= g.vy || t >= g.tiles) return;
    const int ox = (t % g.tiles_x) * g.vx, oy = (t / g.tiles_x) * g.vy;
    if (ox + x >= width || oy + y >= height) return;
    const auto* src = batch + std::size_t(blockIdx.z) * C * g.transform + std::size_t(y + g.reach_y) * g.row + (x + g.reach_x);
    Out* dst = reinterpret_cast<Out*>(out + std::size_t(oy + y) * out_pitch) + std::size_t(ox + x) * C;
    for (int c = 0; c < C; ++c) {
        const auto v = src[std::size_t(c) * g.transform];
        if constexpr (Exact) {
            const long long isum = llrint(v) + s.shift_sum;
            dst[c] = s.exact32 ? finish_exact32<Out>(int(isum), s.f) : finish_exact<Out>(isum, s.f);
        } else {
            const float shift_sum = s.range ? float(double(range_centre(s.range)) * s.weight_sum) : s.shift_sum_f;
            dst[c] = finish_float<Out, float>(v + shift_sum, s.f);
        }
    }
}

// Stream-ordered scratch for one call, freed on the stream after the call's last kernel.
class Scratch {
public:
    Scratch(std::size_t bytes, cudaStream_t stream, const char* what) : stream_(stream) {
        if (!bytes) return;
        const cudaError_t e = cudaMallocAsync(&p_, bytes, stream);
        if (e != cudaSuccess) {
            cudaGetLastError();
            throw Error(std::string("cuda: out of device memory for ") + what + " (" + std::to_string(bytes) + " bytes, " +
                        cudaGetErrorString(e) + ")");
        }
    }
    ~Scratch() {
        if (p_) cudaFreeAsync(p_, stream_);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    void* get() const { return p_; }

private:
    void* p_ = nullptr;
    cudaStream_t stream_;
};

double shift_of(PixelType t) { return t == PixelType::u8 ? 128.0 : t == PixelType::u16 ? 32768.0 : 0.0; }

// The host side of the f32 check: weights and the constant border value.
bool constants_fit(const LinearPlan& p) {
    for (double w : p.step.mask.weights)
        if (!std::isfinite(w)) return false;
    if (p.in == PixelType::f32 && p.step.border == BorderMode::constant &&
        !(std::fabs(double(float(p.step.border_value))) <= 0x1p64))
        return false;
    return true;
}

} // namespace

bool launch_fft_linear(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream) {
    if (in.empty()) return true;
    if (!constants_fit(p)) return false;
    const FftTiling t = choose_fft_tiling(p, in.shape);
    if (!t.nx) return false;
    const Mask& m = p.step.mask;
    const int C = in.channels(), transforms = t.batch_tiles * C;
    const bool scan = p.in == PixelType::f32;
    const std::shared_ptr<FftPlans> plans = fft_plans(t, transforms);
    const std::shared_ptr<const void> spectrum = mask_spectrum(p, t, stream);

    const std::size_t real_bytes = t.f64 ? sizeof(double) : sizeof(float);
    Scratch batch(t.transform_reals() * real_bytes * std::size_t(transforms), stream, "an FFT batch");
    Scratch work(plans->work_bytes(), stream, "cuFFT's work area");
    Scratch flag(scan ? sizeof(int) : 0, stream, "an FFT flag");
    if (scan) APRON_CUDA_CHECK(cudaMemsetAsync(flag.get(), 0, sizeof(int), stream));
    const bool centred = !p.exact && p.in != PixelType::f32;
    Scratch range(centred ? 2 * sizeof(unsigned) : 0, stream, "an FFT sample range");

    BatchGeometry g{t.nx, t.ny, 2 * (t.nx / 2 + 1), t.transform_reals(), t.vx, t.vy, t.tiles_x, int(t.tiles()), 0,
                    m.anchor_x, m.anchor_y, m.width - 1, m.height - 1};
    const double shift = centred ? 0.0 : shift_of(p.in);
    ScatterFinish s{p.finish};
    if (p.exact) {
        long long wsum = 0;
        for (auto w : p.integer_mask.weights) wsum += w;
        s.shift_sum = (long long)shift * wsum;
        s.exact32 = p.accumulator == Accumulator::f32;
    } else {
        s.shift_sum_f = float(shift * m.sum());
        if (centred) s.range = static_cast<const unsigned*>(range.get()), s.weight_sum = m.sum();
    }
    const std::size_t bins = std::size_t(t.nx / 2 + 1) * t.ny;
    const dim3 block(block_x, block_y);
    const dim3 gather_grid(unsigned((t.nx + block_x - 1) / block_x), unsigned((t.ny + block_y - 1) / block_y),
                           unsigned(t.batch_tiles));
    const dim3 scatter_grid(unsigned((t.vx + block_x - 1) / block_x), unsigned((t.vy + block_y - 1) / block_y),
                            unsigned(t.batch_tiles));
    const dim3 multiply_grid(unsigned((bins + 255) / 256), unsigned((transforms + transforms_per_thread - 1) / transforms_per_thread));

    with_type(p.in, [&]<class In>() {
        with_type(p.out, [&]<class Out>() {
            const double outside = double(store_pixel<In>(p.step.border_value));
            if constexpr (!std::is_same_v<In, float>) {
                if (centred) {
                    // Pageable source: staged before the call returns.
                    unsigned init[2] = {0xFFFFFFFFu, 0u};
                    if (p.step.border == BorderMode::constant) init[0] = init[1] = unsigned(outside);
                    APRON_CUDA_CHECK(cudaMemcpyAsync(range.get(), init, sizeof init, cudaMemcpyHostToDevice, stream));
                    const int n = in.width() * C;
                    const dim3 range_grid(unsigned(std::min((n + 255) / 256, 32)), unsigned(std::min(in.height(), 1024)));
                    sample_range<In><<<range_grid, 256, 0, stream>>>(device_view(in), static_cast<unsigned*>(range.get()));
                    APRON_CUDA_CHECK_LAUNCH("fft sample_range");
                }
            }
            auto run = [&]<class Real, class Complex, bool Exact>() {
                Real* data = static_cast<Real*>(batch.get());
                for (int b = 0; b < t.batches; ++b) {
                    g.first = b * t.batch_tiles;
                    gather_tiles<In, Real><<<gather_grid, block, 0, stream>>>(device_view(in), data, g, p.step.border,
                                                                              Real(outside), Real(shift),
                                                                              static_cast<const unsigned*>(range.get()),
                                                                              static_cast<int*>(flag.get()));
                    APRON_CUDA_CHECK_LAUNCH("fft gather_tiles");
                    plans->forward(data, work.get(), stream);
                    multiply_spectrum<Complex><<<multiply_grid, 256, 0, stream>>>(
                        reinterpret_cast<Complex*>(data), static_cast<const Complex*>(spectrum.get()), bins, transforms);
                    APRON_CUDA_CHECK_LAUNCH("fft multiply_spectrum");
                    plans->inverse(data, work.get(), stream);
                    scatter_tiles<Out, Exact><<<scatter_grid, block, 0, stream>>>(data, out.data, out.pitch, in.width(),
                                                                                  in.height(), C, g, s);
                    APRON_CUDA_CHECK_LAUNCH("fft scatter_tiles");
                }
            };
            if (t.f64)
                run.template operator()<double, double2, true>();
            else
                run.template operator()<float, float2, false>();
        });
    });

    if (!scan) return true;
    int flagged = 0;
    APRON_CUDA_CHECK(cudaMemcpyAsync(&flagged, flag.get(), sizeof(int), cudaMemcpyDeviceToHost, stream));
    APRON_CUDA_CHECK(cudaStreamSynchronize(stream));
    return flagged == 0;
}

} // namespace apron::cuda
