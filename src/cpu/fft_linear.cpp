// Correlation through the FFT (FFTW), overlap-save: the output is cut into tiles; each
// tile's input region (the tile plus the mask's reach, read through the border rule, so every border mode
// is exact) is transformed, multiplied by the mask's spectrum and transformed back, and the outputs whose
// window lies inside the region are kept. Memory stays bounded by the tile whatever the image size, and
// every channel of every tile is one task of the pool. The tiles are the whole image's (the plan's FftGrid):
// a band of a streamed image transforms the very regions the one-pass run does, so its bits are the same.
//
// Circular correlation of a region R (nx x ny) with g(i, j) = m(W-1-i, H-1-j) placed at the origin gives,
// at (x + W-1, y + H-1), sum m(i, j) R(x + i, y + j): with R's origin at (ox - ax, oy - ay) that is the
// output at (ox + x, oy + y) of SPEC.md's correlation, for x <= nx - W, y <= ny - H.
//
// Float plans use the mask's weights and single-precision transforms (run_tiles says why); exact plans the
// integer weights and double transforms, and the sum rounded to the nearest integer is the exact integer
// sum while fft_exact_error_bound stays below 1/2 (the planner asks for 1/4), so the shared finish gives
// every backend's bits.
#include "core/overrides.hpp"
#include "cpu/fft_linear.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "apron/errors.hpp"
#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/linear_finish.hpp"
#include "core/pixel.hpp"
#include "cpu/fast_pool.hpp"
#include "plan/fft_bound.hpp"
#include "plan/plan.hpp"

#if APRON_HAVE_FFTW
#include <fftw3.h>
#endif

namespace apron::cpu {
namespace {

// 1024^2 doubles: 8 MB of real and 8 MB of complex scratch per thread; larger transforms gain little per
// output (log n) and leave the caches.
constexpr int max_tile_side = 1024;

// Transform sides: products of 2 and 3 (FFTW's fastest radices).
const std::vector<int>& smooth_sizes() {
    static const std::vector<int> sizes = [] {
        std::vector<int> v;
        for (long long a = 1; a <= max_tile_side; a *= 2)
            for (long long b = a; b <= max_tile_side; b *= 3) v.push_back(int(b));
        std::sort(v.begin(), v.end());
        return v;
    }();
    return sizes;
}

int smooth_at_least(int n) {
    for (int s : smooth_sizes())
        if (s >= n) return s;
    return 0;
}

// The transform side along one axis for a mask side k and image side n. The transform work per output,
// n log n / (n - k + 1), falls as the side grows past k, but tiles that leave the core's caches cost more
// than the log: measured here (4096^2 f32, 15x15 to 63x63, 2 cores), 256 beat 128, 512 and 1024 (the
// last 2-3x slower). So about 4k, at least 256 and at most max_tile_side; and no larger than one tile
// over the whole image.
int choose_side(int k, int n) {
    const int whole = smooth_at_least(n + k - 1);
    int target = smooth_at_least(std::min(std::max(4 * k, 256), max_tile_side));
    if (target < k) target = 0;  // a side above max_tile_side: no tile holds the mask
    if (whole && (!target || whole <= target)) return whole;
    return target;
}
} // namespace

FftTile choose_fft_tile(int mask_w, int mask_h, int width, int height) {
    // APRON_FFT_SIDE=N forces N x N transforms where the mask fits (to measure the cost model).
    if (const int n = overrides().fft_side; n > 0 && n >= mask_w && n >= mask_h && n <= max_tile_side) return {n, n};
    FftTile t{choose_side(mask_w, width), choose_side(mask_h, height)};
    if (!t.nx || !t.ny) return {};
    return t;
}

double fft_exact_error_bound(const LinearPlan& plan, FftTile tile) {
    return double_fft_error_bound(plan, tile.nx, tile.ny);  // plan/fft_bound.hpp: one rule for both backends
}

#if APRON_HAVE_FFTW

bool fft_available() { return true; }

namespace {

// FFTW's double (fftw_) and single (fftwf_) interfaces behind one name, so the tile loop is written once.
template <class R>
struct Fftw;
template <>
struct Fftw<double> {
    using Complex = fftw_complex;
    using Plan = fftw_plan;
    static double* alloc_real(std::size_t n) { return fftw_alloc_real(n); }
    static Complex* alloc_complex(std::size_t n) { return fftw_alloc_complex(n); }
    static void free(void* p) { fftw_free(p); }
    static Plan r2c(int ny, int nx, double* r, Complex* c) { return fftw_plan_dft_r2c_2d(ny, nx, r, c, FFTW_ESTIMATE); }
    static Plan c2r(int ny, int nx, Complex* c, double* r) { return fftw_plan_dft_c2r_2d(ny, nx, c, r, FFTW_ESTIMATE); }
    static void forward(Plan p, double* r, Complex* c) { fftw_execute_dft_r2c(p, r, c); }
    static void inverse(Plan p, Complex* c, double* r) { fftw_execute_dft_c2r(p, c, r); }
    static void destroy(Plan p) { fftw_destroy_plan(p); }
    static void cleanup() { fftw_cleanup(); }
};
template <>
struct Fftw<float> {
    using Complex = fftwf_complex;
    using Plan = fftwf_plan;
    static float* alloc_real(std::size_t n) { return fftwf_alloc_real(n); }
    static Complex* alloc_complex(std::size_t n) { return fftwf_alloc_complex(n); }
    static void free(void* p) { fftwf_free(p); }
    static Plan r2c(int ny, int nx, float* r, Complex* c) { return fftwf_plan_dft_r2c_2d(ny, nx, r, c, FFTW_ESTIMATE); }
    static Plan c2r(int ny, int nx, Complex* c, float* r) { return fftwf_plan_dft_c2r_2d(ny, nx, c, r, FFTW_ESTIMATE); }
    static void forward(Plan p, float* r, Complex* c) { fftwf_execute_dft_r2c(p, r, c); }
    static void inverse(Plan p, Complex* c, float* r) { fftwf_execute_dft_c2r(p, c, r); }
    static void destroy(Plan p) { fftwf_destroy_plan(p); }
    static void cleanup() { fftwf_cleanup(); }
};

template <class T>
struct FftwDeleter {
    template <class P>
    void operator()(P* p) const { Fftw<T>::free(p); }
};
template <class R>
using RealBuffer = std::unique_ptr<R, FftwDeleter<R>>;
template <class R>
using ComplexBuffer = std::unique_ptr<typename Fftw<R>::Complex, FftwDeleter<R>>;

[[noreturn]] void out_of_memory(std::size_t n) {
    throw Error("fft: out of memory for a transform of " + std::to_string(n) + " samples");
}
template <class R>
RealBuffer<R> real_buffer(std::size_t n) {
    RealBuffer<R> b(Fftw<R>::alloc_real(n));
    if (!b) out_of_memory(n);
    return b;
}
template <class R>
ComplexBuffer<R> complex_buffer(std::size_t n) {
    ComplexBuffer<R> b(Fftw<R>::alloc_complex(n));
    if (!b) out_of_memory(n);
    return b;
}

// FFTW's planner is not thread-safe (its execute functions are): plans are made under one lock, kept until
// the process exits, and executed on any buffer from fftw_alloc_* (the same SIMD alignment). At exit the
// cache destroys them and has FFTW free its own tables (leak checkers see every byte returned).
template <class R>
struct Plans {
    typename Fftw<R>::Plan forward = nullptr, inverse = nullptr;
};

template <class R>
class PlanCache {
public:
    ~PlanCache() {
        for (auto& [size, p] : plans_) {
            Fftw<R>::destroy(p.forward);
            Fftw<R>::destroy(p.inverse);
        }
        Fftw<R>::cleanup();
    }

    Plans<R> get(int nx, int ny) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = plans_.find({nx, ny});
        if (it != plans_.end()) return it->second;
        const std::size_t real = std::size_t(nx) * ny, spectrum = std::size_t(nx / 2 + 1) * ny;
        RealBuffer<R> r = real_buffer<R>(real);
        ComplexBuffer<R> c = complex_buffer<R>(spectrum);
        Plans<R> p;
        p.forward = Fftw<R>::r2c(ny, nx, r.get(), c.get());
        p.inverse = Fftw<R>::c2r(ny, nx, c.get(), r.get());
        if (!p.forward || !p.inverse) {
            if (p.forward) Fftw<R>::destroy(p.forward);
            if (p.inverse) Fftw<R>::destroy(p.inverse);
            throw Error("fft: FFTW could not plan a " + std::to_string(nx) + "x" + std::to_string(ny) + " transform");
        }
        plans_.emplace(std::make_pair(nx, ny), p);
        return p;
    }

private:
    std::mutex mutex_;
    std::map<std::pair<int, int>, Plans<R>> plans_;
};

template <class R>
Plans<R> plans_for(int nx, int ny) {
    static PlanCache<R> cache;
    return cache.get(nx, ny);
}

template <class R>
struct Scratch {
    RealBuffer<R> real;
    ComplexBuffer<R> spectrum;
    std::vector<int> columns;  // the region's source column of each transform column
};

// The mask's spectrum, flipped for correlation and scaled by 1 / (nx ny) (FFTW's inverse is unscaled),
// computed in double whatever the transforms' precision.
template <class R>
std::vector<std::complex<R>> mask_spectrum(const LinearPlan& plan, int nx, int ny) {
    const Mask& m = plan.step.mask;
    const int W = m.width, H = m.height;
    const std::size_t real_n = std::size_t(nx) * ny, spec_n = std::size_t(nx / 2 + 1) * ny;
    const Plans<double> plans = plans_for<double>(nx, ny);
    RealBuffer<double> g = real_buffer<double>(real_n);
    ComplexBuffer<double> spectrum = complex_buffer<double>(spec_n);
    std::fill(g.get(), g.get() + real_n, 0.0);
    const double scale = 1.0 / double(real_n);
    for (int j = 0; j < H; ++j)
        for (int i = 0; i < W; ++i) {
            const std::size_t k = std::size_t(j) * W + i;
            const double w = plan.exact ? double(plan.integer_mask.weights[k]) : m.weights[k];
            g.get()[std::size_t(H - 1 - j) * nx + std::size_t(W - 1 - i)] = w * scale;
        }
    Fftw<double>::forward(plans.forward, g.get(), spectrum.get());
    std::vector<std::complex<R>> k(spec_n);
    for (std::size_t q = 0; q < spec_n; ++q) k[q] = {R(spectrum.get()[q][0]), R(spectrum.get()[q][1])};
    return k;
}

// A band's rows of outputs in one row of tiles: rows [image_row, image_row + rows) of tile row tile_row,
// at band_row in the band.
struct RowChunk {
    int tile_row, band_row, image_row, rows;
};

// The tiles of the whole image's grid that hold the band's outputs, a row of tiles at a time (a wrapping
// band's two runs of image rows each get their own).
std::vector<RowChunk> row_chunks(const FftGrid& grid, int band_rows, int image_height, int vy, BorderMode mode) {
    BandRun runs[2];
    const int n = band_runs(grid.first_row, band_rows, image_height, mode == BorderMode::wrap, runs);
    if (!n)
        throw Error("fft: a band of " + std::to_string(band_rows) + " rows from row " + std::to_string(grid.first_row) +
                    " does not lie in an image of " + std::to_string(image_height) + " rows");
    std::vector<RowChunk> chunks;
    for (int k = 0; k < n; ++k) {
        const BandRun& r = runs[k];
        for (int ty = r.image_row / vy; (long long)ty * vy < (long long)r.image_row + r.rows; ++ty) {
            const int g0 = std::max(ty * vy, r.image_row), g1 = int(std::min<long long>((long long)ty * vy + vy, (long long)r.image_row + r.rows));
            chunks.push_back({ty, r.band_row + g0 - r.image_row, g0, g1 - g0});
        }
    }
    return chunks;
}

// Every tile of the whole image's grid that holds the band's outputs, each transformed from the samples the
// one-pass run transforms (rows through map_band_row), so a band's bits are the whole image's.
//
// Exact plans: double transforms of the samples as they are (the error bound is for those). Float plans:
// float transforms (twice the SIMD lanes and half the bytes of double; the CUDA backend does the same) of
// the samples shifted by the middle of the tile's own range (an integer, exact in a float), added back as
// shift x (sum of weights) at the end: the transforms' error scales with the L2 norm of what they carry, and
// a centred region has at most half of it, within the max |sample| SPEC.md's tolerance is relative to (the
// middle of the type's range made an all-zero image's result noise of 128 x the weights). Per tile, not per
// image, so that a band needs nothing beyond its tiles. f32 images are not shifted; a tile of one holding a
// NaN or an infinity is summed directly instead, as the reference does (a transform would spread it over
// the whole tile).
template <class R, class In, class Out>
void run_tiles(ThreadPool& pool, const LinearPlan& plan, FftTile tile, ConstImageView in, ImageView out) {
    const Mask& m = plan.step.mask;
    const int nx = tile.nx, ny = tile.ny, W = m.width, H = m.height;
    const int vx = nx - W + 1, vy = ny - H + 1;  // outputs a tile keeps, per axis
    const int image_height = plan.fft.band ? plan.fft.image_height : in.height();
    const FftGrid grid{image_height, ny, plan.fft.band, plan.fft.band ? plan.fft.first_row : 0};
    const BorderMode mode = plan.step.border;
    const std::vector<RowChunk> chunks = row_chunks(grid, in.height(), image_height, vy, mode);
    const int tiles_x = (in.width() + vx - 1) / vx;
    const int C = in.channels();
    const std::size_t real_n = std::size_t(nx) * ny, spec_n = std::size_t(nx / 2 + 1) * ny;
    const Plans<R> plans = plans_for<R>(nx, ny);
    const std::vector<std::complex<R>> kernel = mask_spectrum<R>(plan, nx, ny);

    double weight_sum = 0;
    for (double w : m.weights) weight_sum += w;
    const bool centre = !plan.exact && !std::is_same_v<In, float>;
    const R outside = R(store_pixel<In>(plan.step.border_value));
    std::vector<Scratch<R>> scratch(std::size_t(pool.size()));
    pool.run(int(chunks.size()) * tiles_x * C, [&](int task, int participant) {
        Scratch<R>& s = scratch[std::size_t(participant)];
        if (!s.real) s.real = real_buffer<R>(real_n), s.spectrum = complex_buffer<R>(spec_n), s.columns.resize(std::size_t(nx));
        const int c = task % C, t = task / C;
        const RowChunk& chunk = chunks[std::size_t(t / tiles_x)];
        const int ox = (t % tiles_x) * vx, oy = chunk.tile_row * vy;
        const int gx0 = ox - m.anchor_x;
        const long long gy0 = (long long)oy - m.anchor_y;
        // The region through the border rule; columns mapped once per tile, rows with every column inside
        // read straight (most tiles of a large image).
        std::vector<int>& xs = s.columns;
        for (int x = 0; x < nx; ++x) xs[std::size_t(x)] = map_index(gx0 + x, in.width(), mode);
        const bool columns_inside = gx0 >= 0 && gx0 + nx <= in.width();
        R* r = s.real.get();
        for (int y = 0; y < ny; ++y) {
            const int sy = map_band_row(gy0 + y, image_height, mode, grid.first_row, in.height());
            R* dst = r + std::size_t(y) * nx;
            if (sy < 0) {
                std::fill(dst, dst + nx, outside);
                continue;
            }
            const In* row = in.row<In>(sy);
            if (columns_inside) {
                const In* src = row + std::size_t(gx0) * C + c;
                for (int x = 0; x < nx; ++x) dst[x] = R(src[std::size_t(x) * C]);
                continue;
            }
            for (int x = 0; x < nx; ++x) {
                const int sx = xs[std::size_t(x)];
                dst[x] = sx < 0 ? outside : R(row[std::size_t(sx) * C + c]);
            }
        }
        const int w_out = std::min(vx, in.width() - ox), skip = chunk.image_row - oy;
        auto destination = [&](int y) { return out.row<Out>(chunk.band_row + y) + std::size_t(ox) * C + c; };
        if constexpr (std::is_same_v<In, float>) {
            bool finite = true;
            for (std::size_t q = 0; q < real_n; ++q) finite &= std::fabs(r[q]) <= std::numeric_limits<R>::max();
            if (!finite) {
                for (int y = 0; y < chunk.rows; ++y) {
                    Out* dst = destination(y);
                    for (int x = 0; x < w_out; ++x) {
                        double sum = 0;
                        for (int j = 0; j < H; ++j) {
                            const R* src = r + std::size_t(skip + y + j) * nx + x;
                            const double* w = m.weights.data() + std::size_t(j) * W;
                            for (int i = 0; i < W; ++i)
                                if (w[i] != 0) sum += w[i] * double(src[i]);  // as the reference: 0 x NaN is no term
                        }
                        dst[std::size_t(x) * C] = finish_float<Out, double>(sum, plan.finish);
                    }
                }
                return;
            }
        }
        R shift = 0;
        if (centre) {
            R lo = r[0], hi = r[0];
            for (std::size_t q = 0; q < real_n; ++q) lo = std::min(lo, r[q]), hi = std::max(hi, r[q]);
            shift = std::floor((lo + hi) / 2);
            if (shift != 0)
                for (std::size_t q = 0; q < real_n; ++q) r[q] -= shift;
        }
        const double shift_sum = double(shift) * weight_sum;
        Fftw<R>::forward(plans.forward, r, s.spectrum.get());
        auto* a = reinterpret_cast<std::complex<R>*>(s.spectrum.get());
        for (std::size_t q = 0; q < spec_n; ++q) a[q] *= kernel[q];
        Fftw<R>::inverse(plans.inverse, s.spectrum.get(), r);
        for (int y = 0; y < chunk.rows; ++y) {
            const R* src = r + std::size_t(skip + y + H - 1) * nx + (W - 1);
            Out* dst = destination(y);
            if (plan.exact) {
                for (int x = 0; x < w_out; ++x)
                    dst[std::size_t(x) * C] = finish_exact<Out>(std::llround(src[x]), plan.finish);
            } else {
                for (int x = 0; x < w_out; ++x)
                    dst[std::size_t(x) * C] = finish_float<Out, R>(R(double(src[x]) + shift_sum), plan.finish);
            }
        }
    });
}

} // namespace

void run_fft_linear(ThreadPool& pool, const LinearPlan& plan, ConstImageView in, ImageView out) {
    if (in.empty()) return;
    const Mask& m = plan.step.mask;
    // The whole image's tile (the planner's grid), so a band runs the one-pass run's transforms.
    const int image_height = plan.fft.band ? plan.fft.image_height : in.height();
    const FftTile tile = choose_fft_tile(m.width, m.height, in.width(), image_height);
    if (!tile.nx) throw Error("fft: no transform size holds a " + std::to_string(m.width) + "x" + std::to_string(m.height) + " mask");
    with_type(plan.in, [&]<class In>() {
        with_type(plan.out, [&]<class Out>() {
            if (plan.exact) run_tiles<double, In, Out>(pool, plan, tile, in, out);
            else run_tiles<float, In, Out>(pool, plan, tile, in, out);
        });
    });
}

#else

bool fft_available() { return false; }

void run_fft_linear(ThreadPool&, const LinearPlan&, ConstImageView, ImageView) {
    throw Error("fft: this build has no FFTW (install libfftw3-dev and reconfigure)");
}

#endif

} // namespace apron::cpu
