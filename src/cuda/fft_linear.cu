// Correlation through cuFFT, overlap-save, the CUDA twin of cpu/fft_linear.cpp: the output is cut into
// tiles of vx x vy; each tile's input region (nx x ny samples from the tile's first output minus the
// anchor, read through the border rule, so every border mode is exact) is transformed, multiplied by the
// mask's spectrum and transformed back, and the outputs whose window lies inside the region are kept:
// the circular correlation at (x + W-1, y + H-1) is sum m(i, j) R(x + i, y + j), the output at
// (ox + x, oy + y), for x < vx = nx - W + 1, y < vy = ny - H + 1.
//
// The tiles, their sides and the batches are the whole image's (the plan's FftGrid): a band of a streamed
// image runs the tiles that hold its rows, on the samples the one-pass run transforms (rows through
// map_band_row), in batches of the one-pass run's size (one cuFFT plan), so its bits are the same.
//
// Tiles go through in batches (fft_tiling.cpp sizes them), every channel of every tile one transform of the
// batch, in five launches: gather (border rule, de-interleave, convert), the forward transforms, the
// spectrum product, the inverse transforms, and scatter (keep, finish, store); float plans of integer
// images find each tile's range first. Memory stays one batch whatever the image.
//
// Samples enter the transforms shifted and the scatter adds shift x (sum of weights) back: the transforms'
// error scales with the L2 norm of what they carry, and a centred region has about half of it. Float
// plans of u8/u16 images shift each tile by the middle of its own range (tile_range finds it), so every
// |sample - shift| stays within max |sample|, to which SPEC.md's tolerance is relative (the middle of the
// type's range made an all-zero image's result noise of 128 x the weights, and a dark u16 image's noise of
// 32768 x them), and a band needs nothing beyond its tiles; exact plans shift by the middle of the type's
// range (their error bound holds for either); f32 images are not shifted. Exact plans use the integer
// weights and double transforms while double_fft_error_bound stays below 1/4, so the sum rounded to the
// nearest integer is the exact integer sum and the shared finish gives every backend's bits; float plans
// use float transforms (the spectrum itself computed in double) and the float finish of the direct kernels.
// A tile of an f32 image holding a NaN, an infinity or a magnitude past 2^64 is summed directly by the
// scatter instead (a transform would spread it over the whole tile; the sums could overflow a float).
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
#include "cuda/dispatch_table.hpp"
#include "cuda/launch_record.hpp"
#include "cuda/stream_scratch.hpp"

namespace apron::cuda {
namespace {

// Where a batch's tiles are: passed by value to the gather and scatter kernels.
struct BatchGeometry {
    int nx, ny, row;          // transform sides; reals per row in the in-place layout
    std::size_t transform;    // reals per transform
    int vx, vy, tiles_x;      // kept outputs per tile; tiles per image row
    int tiles, first;         // tiles the band runs (at most 2^30, see fft_tiling.cpp); the batch's first tile
    int anchor_x, anchor_y;   // the region starts this far above and left of the tile's first output
    int reach_x, reach_y;     // W - 1, H - 1: where the tile's first output lies in the result
    int image_height, first_row, band_rows;  // the grid's image, and the band's place in it (FftGrid)
    BandRun runs[2];          // the band's runs of image rows (band_runs)
    int run_tile_row[2];      // the first row of tiles of each run
    int run_tile_rows[2];     // and how many
};

// Tile t of the band: its first output in the image (ox, oy) and the run of band rows its outputs go to.
struct TilePlace {
    int ox, oy, run;
};
// The runs are picked with selects, never indexed by a computed value: an indexed kernel parameter array
// makes the compiler copy the whole BatchGeometry to local memory in every thread (112 bytes of stack per
// thread in each gather, scatter and range kernel: they ran at a tenth of the memory bandwidth, the FFT path
// at 14 Gpix/s instead of 30 on the H200 at 31x31).
__device__ __forceinline__ TilePlace place_of(const BatchGeometry& g, int t) {
    const int k = t / g.tiles_x;
    const bool second = k >= g.run_tile_rows[0];
    const int ty = second ? g.run_tile_row[1] + (k - g.run_tile_rows[0]) : g.run_tile_row[0] + k;
    return {(t % g.tiles_x) * g.vx, ty * g.vy, second ? 1 : 0};
}

constexpr int block_x = 32, block_y = 8;
constexpr int transforms_per_thread = 8;  // of the spectrum product: one load of the mask's bin for all

// A sample the transforms take: finite, and small enough that no sum over a tile overflows a float
// (2^64 x 2^26 samples x the weights). Anything else sends the call to the direct kernels.
__device__ __forceinline__ bool fits_transform(float v) { return fabsf(v) <= 0x1p64f; }

// The region sample (x, y) of the tile at (ox, oy): its pixel in the band, or sx / sy < 0 outside (constant).
struct RegionSample {
    int sx, sy;
};
__device__ __forceinline__ RegionSample region_sample(const BatchGeometry& g, int width, BorderMode mode, long long ox,
                                                      long long oy, int x, int y) {
    return {map_index(ox - g.anchor_x + x, width, mode),
            map_band_row(oy - g.anchor_y + y, g.image_height, mode, g.first_row, g.band_rows)};
}

// A tile's sample range as tile_range leaves it: range[0] the smallest, range[1] the complement of the largest
// (both folded with atomicMin from all ones). Its middle, an integer, is exact in a float.
__device__ __forceinline__ float range_centre(const unsigned* range) { return floorf(0.5f * float(range[0] + ~range[1])); }

// The smallest and largest sample of each tile's region of an integer image (the constant border's value
// where the region reads outside), into ranges[2 slot ..]: each thread folds range_rows rows of one column,
// the block folds its warps in shared memory, and one atomic pair per block meets the tile's. (One pair per
// warp had every warp of a 512^2 tile contend for the same two words: the u8 FFT ran at 12.7 Gpix/s on the
// H200 against 33.6 for f32, most of it here.)
constexpr int range_rows = 16;

template <class In>
__global__ void __launch_bounds__(block_x* block_y)
    tile_range(DeviceView in, BatchGeometry g, BorderMode mode, unsigned outside, unsigned* ranges) {
    const int x = blockIdx.x * block_x + threadIdx.x;
    const int t = g.first + int(blockIdx.z);
    unsigned lo = 0xFFFFFFFFu, hi = 0;
    if (x < g.nx && t < g.tiles) {
        const TilePlace at = place_of(g, t);
        for (int k = 0; k < range_rows; ++k) {
            const int y = (blockIdx.y * range_rows + k) * block_y + threadIdx.y;
            if (y >= g.ny) break;
            const RegionSample r = region_sample(g, in.width, mode, at.ox, at.oy, x, y);
            if (r.sx < 0 || r.sy < 0) {
                lo = min(lo, outside), hi = max(hi, outside);
                continue;
            }
            const In* src = reinterpret_cast<const In*>(in.data + std::size_t(r.sy) * in.pitch) + std::size_t(r.sx) * in.channels;
            for (int c = 0; c < in.channels; ++c) lo = min(lo, unsigned(src[c])), hi = max(hi, unsigned(src[c]));
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        lo = min(lo, __shfl_down_sync(0xFFFFFFFFu, lo, o));
        hi = max(hi, __shfl_down_sync(0xFFFFFFFFu, hi, o));
    }
    constexpr int warps = block_x * block_y / 32;
    __shared__ unsigned warp_lo[warps], warp_hi[warps];
    const int lane = (threadIdx.y * block_x + threadIdx.x) & 31, warp = (threadIdx.y * block_x + threadIdx.x) >> 5;
    if (lane == 0) warp_lo[warp] = lo, warp_hi[warp] = hi;
    __syncthreads();
    if (threadIdx.x != 0 || threadIdx.y != 0) return;
    for (int w = 1; w < warps; ++w) lo = min(lo, warp_lo[w]), hi = max(hi, warp_hi[w]);
    if (lo <= hi) {
        unsigned* range = ranges + 2 * std::size_t(blockIdx.z);
        atomicMin(range, lo), atomicMin(range + 1, ~hi);
    }
}

// One thread per region sample of one tile (blockIdx.z) of the batch, every channel: the border rule, the
// shift, and one real per channel's transform. Tile slots past the band's last tile get zeros (the batch
// runs one cuFFT plan whatever its fill). `outside` is the constant border's sample, unshifted; the shift
// is `shift`, or the middle of the tile's range where there are ranges. A sample no transform takes
// (f32 images) flags its tile for the scatter's direct sum.
template <class In, class Real>
__global__ void __launch_bounds__(block_x* block_y)
    gather_tiles(DeviceView in, Real* batch, BatchGeometry g, BorderMode mode, Real outside, Real shift,
                 const unsigned* ranges, int* flags) {
    const int x = blockIdx.x * block_x + threadIdx.x, y = blockIdx.y * block_y + threadIdx.y;
    if (x >= g.nx || y >= g.ny) return;
    if (ranges) shift = Real(range_centre(ranges + 2 * std::size_t(blockIdx.z)));
    const int C = in.channels;
    Real* dst = batch + std::size_t(blockIdx.z) * C * g.transform + std::size_t(y) * g.row + x;
    const int t = g.first + int(blockIdx.z);
    RegionSample r{-1, -1};
    if (t < g.tiles) {
        const TilePlace at = place_of(g, t);
        r = region_sample(g, in.width, mode, at.ox, at.oy, x, y);
    }
    // cuFFT's in-place r2c loads each row's padding (the room for its half spectrum) along with the samples:
    // zeroed, so no uninitialised memory is read (compute-sanitizer initcheck), though it never reaches a result.
    if (x == g.nx - 1)
        for (int c = 0; c < C; ++c)
            for (int p = 1; p < g.row - g.nx + 1; ++p) dst[std::size_t(c) * g.transform + p] = Real(0);
    if (r.sx < 0 || r.sy < 0) {
        const Real v = t < g.tiles ? outside - shift : Real(0);
        for (int c = 0; c < C; ++c) dst[std::size_t(c) * g.transform] = v;
        return;
    }
    const In* src = reinterpret_cast<const In*>(in.data + std::size_t(r.sy) * in.pitch) + std::size_t(r.sx) * C;
    bool fits = true;
    for (int c = 0; c < C; ++c) {
        const In v = src[c];
        if constexpr (std::is_same_v<In, float>) fits = fits && fits_transform(v);
        dst[std::size_t(c) * g.transform] = Real(v) - shift;
    }
    if (!fits) flags[blockIdx.z] = 1;  // any writer will do: the scatter only asks whether one did
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
    const unsigned* ranges = nullptr;  // float plans centred on each tile: the shift is its range's middle,
    double weight_sum = 0;             // and shift x weight_sum replaces shift_sum_f
    bool exact32 = false;      // exact sums below 2^24 (the f32 accumulator): the 32-bit finish
    const int* flags = nullptr;        // f32 images: tiles the transforms cannot take, summed directly
    const double* weights = nullptr;   // from the mask's weights, row by row
    int mask_w = 0, mask_h = 0;
    BorderMode mode = BorderMode::reflect;
    float outside = 0;                 // the constant border's sample
};

// The direct sum of one output of an f32 image, in double, as the reference computes it (a NaN or an
// infinity reaches the windows that hold it under a nonzero weight, and only those).
__device__ double direct_sum(const DeviceView& in, const BatchGeometry& g, const ScatterFinish& s, long long ox,
                             long long oy, int x, int y, int c) {
    double sum = 0;
    for (int j = 0; j < s.mask_h; ++j) {
        const int sy = map_band_row(oy - g.anchor_y + y + j, g.image_height, s.mode, g.first_row, g.band_rows);
        const float* row = sy < 0 ? nullptr : reinterpret_cast<const float*>(in.data + std::size_t(sy) * in.pitch);
        for (int i = 0; i < s.mask_w; ++i) {
            const double w = s.weights[std::size_t(j) * s.mask_w + i];
            if (w == 0) continue;  // as the reference: a NaN under a zero weight is no term of the sum
            const int sx = map_index(ox - g.anchor_x + x + i, in.width, s.mode);
            const float v = sx < 0 || !row ? s.outside : row[std::size_t(sx) * in.channels + c];
            sum += w * double(v);
        }
    }
    return sum;
}

// One thread per kept output of one tile (blockIdx.z) of the batch, every channel: the outputs in the
// band's rows go to their band row.
template <class In, class Out, bool Exact>
__global__ void __launch_bounds__(block_x* block_y)
    scatter_tiles(const std::conditional_t<Exact, double, float>* batch, DeviceView in, std::byte* out,
                  std::size_t out_pitch, BatchGeometry g, ScatterFinish s) {
    const int x = blockIdx.x * block_x + threadIdx.x, y = blockIdx.y * block_y + threadIdx.y;
    const int t = g.first + int(blockIdx.z);
    if (x >= g.vx || y >= g.vy || t >= g.tiles) return;
    const TilePlace at = place_of(g, t);
    const BandRun run = at.run ? g.runs[1] : g.runs[0];  // a select (see place_of)
    const int image_row = at.oy + y;
    if (at.ox + x >= in.width || image_row < run.image_row || image_row >= run.image_row + run.rows) return;
    const int C = in.channels;
    Out* dst = reinterpret_cast<Out*>(out + std::size_t(run.band_row + image_row - run.image_row) * out_pitch) +
               std::size_t(at.ox + x) * C;
    if constexpr (std::is_same_v<In, float> && !Exact) {
        if (s.flags && s.flags[blockIdx.z]) {
            for (int c = 0; c < C; ++c) dst[c] = finish_float<Out, double>(direct_sum(in, g, s, at.ox, at.oy, x, y, c), s.f);
            return;
        }
    }
    const auto* src = batch + std::size_t(blockIdx.z) * C * g.transform + std::size_t(y + g.reach_y) * g.row + (x + g.reach_x);
    for (int c = 0; c < C; ++c) {
        const auto v = src[std::size_t(c) * g.transform];
        if constexpr (Exact) {
            const long long isum = llrint(v) + s.shift_sum;
            dst[c] = s.exact32 ? finish_exact32<Out>(int(isum), s.f) : finish_exact<Out>(isum, s.f);
        } else {
            const float shift_sum =
                s.ranges ? float(double(range_centre(s.ranges + 2 * std::size_t(blockIdx.z))) * s.weight_sum) : s.shift_sum_f;
            dst[c] = finish_float<Out, float>(v + shift_sum, s.f);
        }
    }
}


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
    // The whole image's tiling (its sides and its batch), so a band runs the one-pass run's transforms.
    ImageShape image = in.shape;
    const bool banded = p.fft.band;
    if (banded) image.height = p.fft.image_height;
    const FftTiling t = choose_fft_tiling(p, image);
    if (!t.nx) return false;
    const Mask& m = p.step.mask;
    const int C = in.channels(), transforms = t.batch_tiles * C;

    BatchGeometry g{t.nx, t.ny, 2 * (t.nx / 2 + 1), t.transform_reals(), t.vx, t.vy, t.tiles_x, 0, 0,
                    m.anchor_x, m.anchor_y, m.width - 1, m.height - 1, image.height, banded ? p.fft.first_row : 0,
                    in.height(), {}, {}, {}};
    const int runs = band_runs(g.first_row, g.band_rows, g.image_height, p.step.border == BorderMode::wrap, g.runs);
    if (!runs)
        throw Error("fft: a band of " + std::to_string(g.band_rows) + " rows from row " + std::to_string(g.first_row) +
                    " does not lie in an image of " + std::to_string(g.image_height) + " rows");
    long long tile_rows = 0;
    for (int k = 0; k < runs; ++k) {
        const BandRun& r = g.runs[k];
        g.run_tile_row[k] = r.image_row / t.vy;
        g.run_tile_rows[k] = (r.image_row + r.rows - 1) / t.vy - g.run_tile_row[k] + 1;
        tile_rows += g.run_tile_rows[k];
    }
    if (runs == 1) g.run_tile_rows[1] = 0, g.run_tile_row[1] = 0, g.runs[1] = BandRun{};
    const long long tiles = tile_rows * t.tiles_x;  // at most the image's tiles plus a row (fft_tiling.cpp's bound)
    g.tiles = int(tiles);
    const int batches = int((tiles + t.batch_tiles - 1) / t.batch_tiles);

    const bool scan = p.in == PixelType::f32;
    const std::shared_ptr<FftPlans> plans = fft_plans(t, transforms);
    const std::shared_ptr<const void> spectrum = mask_spectrum(p, t, stream);

    const std::size_t real_bytes = t.f64 ? sizeof(double) : sizeof(float);
    Scratch batch(t.transform_reals() * real_bytes * std::size_t(transforms), stream, "an FFT batch");
    Scratch work(plans->work_bytes(), stream, "cuFFT's work area");
    Scratch flags(scan ? sizeof(int) * std::size_t(t.batch_tiles) : 0, stream, "FFT tile flags");
    Scratch weights(scan ? sizeof(double) * m.weights.size() : 0, stream, "the FFT's direct weights");
    if (scan)  // pageable source: staged before the call returns
        APRON_CUDA_CHECK(cudaMemcpyAsync(weights.get(), m.weights.data(), sizeof(double) * m.weights.size(),
                                         cudaMemcpyHostToDevice, stream));
    const bool centred = !p.exact && p.in != PixelType::f32;
    Scratch ranges(centred ? 2 * sizeof(unsigned) * std::size_t(t.batch_tiles) : 0, stream, "FFT tile ranges");

    const double shift = centred ? 0.0 : shift_of(p.in);
    ScatterFinish s{p.finish};
    if (p.exact) {
        long long wsum = 0;
        for (auto w : p.integer_mask.weights) wsum += w;
        s.shift_sum = (long long)shift * wsum;
        s.exact32 = p.accumulator == Accumulator::f32;
    } else {
        s.shift_sum_f = float(shift * m.sum());
        if (centred) s.ranges = static_cast<const unsigned*>(ranges.get()), s.weight_sum = m.sum();
    }
    if (scan) {
        s.flags = static_cast<const int*>(flags.get()), s.weights = static_cast<const double*>(weights.get());
        s.mask_w = m.width, s.mask_h = m.height, s.mode = p.step.border, s.outside = store_pixel<float>(p.step.border_value);
    }
    const std::size_t bins = std::size_t(t.nx / 2 + 1) * t.ny;
    const dim3 block(block_x, block_y);
    const dim3 gather_grid(unsigned((t.nx + block_x - 1) / block_x), unsigned((t.ny + block_y - 1) / block_y),
                           unsigned(t.batch_tiles));
    const dim3 range_grid(gather_grid.x, unsigned((t.ny + block_y * range_rows - 1) / (block_y * range_rows)), gather_grid.z);
    const dim3 scatter_grid(unsigned((t.vx + block_x - 1) / block_x), unsigned((t.vy + block_y - 1) / block_y),
                            unsigned(t.batch_tiles));
    const dim3 multiply_grid(unsigned((bins + 255) / 256), unsigned((transforms + transforms_per_thread - 1) / transforms_per_thread));

    with_type(p.in, [&]<class In>() {
        with_type(p.out, [&]<class Out>() {
            const double outside = double(store_pixel<In>(p.step.border_value));
            auto run = [&]<class Real, class Complex, bool Exact>() {
                Real* data = static_cast<Real*>(batch.get());
                for (int b = 0; b < batches; ++b) {
                    g.first = b * t.batch_tiles;
                    if constexpr (!std::is_same_v<In, float>) {
                        if (centred) {
                            APRON_CUDA_CHECK(cudaMemsetAsync(ranges.get(), 0xFF, 2 * sizeof(unsigned) * std::size_t(t.batch_tiles), stream));
                            tile_range<In><<<range_grid, block, 0, stream>>>(device_view(in), g, p.step.border, unsigned(outside),
                                                                             static_cast<unsigned*>(ranges.get()));
                            APRON_CUDA_CHECK_LAUNCH("fft tile_range");
                        }
                    }
                    if (scan) APRON_CUDA_CHECK(cudaMemsetAsync(flags.get(), 0, sizeof(int) * std::size_t(t.batch_tiles), stream));
                    gather_tiles<In, Real><<<gather_grid, block, 0, stream>>>(device_view(in), data, g, p.step.border,
                                                                              Real(outside), Real(shift),
                                                                              static_cast<const unsigned*>(ranges.get()),
                                                                              static_cast<int*>(flags.get()));
                    APRON_CUDA_CHECK_LAUNCH("fft gather_tiles");
                    plans->forward(data, work.get(), stream);
                    multiply_spectrum<Complex><<<multiply_grid, 256, 0, stream>>>(
                        reinterpret_cast<Complex*>(data), static_cast<const Complex*>(spectrum.get()), bins, transforms);
                    APRON_CUDA_CHECK_LAUNCH("fft multiply_spectrum");
                    plans->inverse(data, work.get(), stream);
                    scatter_tiles<In, Out, Exact><<<scatter_grid, block, 0, stream>>>(data, device_view(in), out.data, out.pitch, g, s);
                    APRON_CUDA_CHECK_LAUNCH("fft scatter_tiles");
                }
            };
            if (t.f64)
                run.template operator()<double, double2, true>();
            else
                run.template operator()<float, float2, false>();
        });
    });
    record_launch(fft_name(t));
    return true;
}

} // namespace apron::cuda
