// The tiling of the CUDA FFT path (see fft_support.hpp), plain C++ so the planner's question "can the GPU
// FFT compute this plan?" costs no device call.
//
// The estimate, in bytes of memory traffic per region sample with s bytes per real (4 float, 8 double):
// the gather writes the sample (1 s); each of the forward and inverse 2D transforms reads and writes the
// batch once per dimension (4 s each, the half spectrum being as large as the reals); the spectrum product
// reads and writes it (2 s): 11 s. The transforms' arithmetic, about 5 log2(n) flops per sample for both,
// adds log2(n)/4 bytes in float and log2(n)/2 in double (H100: ~20 flop per byte of HBM bandwidth in
// float, ~10 in double). Sides past what one kernel transforms along a dimension (guessed: 4096 float,
// 2048 double) cost one more pass each way (4 s). The kept outputs cost the same whatever the tile (input
// read, output write), so the tiling minimises tiles x nx x ny x that per-sample cost: the waste of the
// overlap ((n / v)^2) against the transforms' growth, and the last partial tile on each axis included.
// Untuned on a GPU: APRON_FFT_SIDE measures other sides.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda/dispatch_table.hpp"
#include "cuda/fft_support.hpp"
#include "plan/fft_bound.hpp"
#include "plan/plan.hpp"

namespace apron {
namespace cuda {
namespace {

constexpr int min_side = 8;     // below, the transforms are all launch overhead anyway
constexpr int max_side = 8192;  // holds the largest mask apron accepts (4097)

// Tile bytes per batch. Measured on the H100 (8192^2 f32, 127x127, 1024^2 tiles): 5 tiles per batch (24 MB,
// sized for L2) 22.7 Gpix/s, 16 21.5, 32 23.0, 64 24.1: cuFFT gains more from large batches than from L2
// residency, so batches are ~256 MB (memory stays bounded whatever the image).
constexpr std::size_t batch_bytes = std::size_t(256) << 20;

// Grid z of the gather and scatter kernels (one block layer per tile of a batch).
constexpr int max_batch_tiles = 65535;

double sample_cost(int nx, int ny, bool f64) {
    const double s = f64 ? 8 : 4;
    const int one_pass = f64 ? 2048 : 4096;
    const double log_n = std::log2(double(nx) * double(ny));
    double bytes = 11 * s + log_n * (f64 ? 0.5 : 0.25);
    bytes += (nx > one_pass ? 4 * s : 0) + (ny > one_pass ? 4 * s : 0);
    return bytes;
}

// Transform sides: powers of two. 3 x 2^a sides were tried and measured slower (H100, 8192^2, 127x127 f32:
// 1536^2 tiles 18.1 Gpix/s against 24.2 for 1024^2, and 18.1 against 29.2 at 31x31): cuFFT's radix-3 passes
// cost more than the overlap they save.
const std::vector<int>& sides() {
    static const std::vector<int> s = [] {
        std::vector<int> v;
        for (int n = min_side; n <= max_side; n *= 2) v.push_back(n);
        return v;
    }();
    return s;
}

int tiles_for(int n, int v) { return (std::max(n, 1) + v - 1) / v; }

// The kernels number tiles in 32-bit integers; only a forced side far below the mask's reaches this.
constexpr double max_tiles = 1 << 30;

} // namespace

FftTiling choose_fft_tiling(const LinearPlan& plan, const ImageShape& shape) {
    const Mask& m = plan.step.mask;
    FftTiling t;
    t.f64 = plan.exact;
    auto tiles = [&](int nx, int ny) {
        return double(tiles_for(shape.width, nx - m.width + 1)) * double(tiles_for(shape.height, ny - m.height + 1));
    };
    auto fits = [&](int nx, int ny) {
        return nx >= m.width && ny >= m.height && nx <= max_side && ny <= max_side && tiles(nx, ny) <= max_tiles &&
               (!plan.exact || double_fft_error_bound(plan, nx, ny) < fft_exact_error_limit);
    };
    const int forced = overrides().fft_side;  // APRON_FFT_SIDE, read by the dispatch table
    if (forced > 0 && fits(forced, forced)) {
        t.nx = t.ny = forced;
    } else {
        double best = INFINITY;
        for (int ny : sides())
            for (int nx : sides()) {
                if (!fits(nx, ny)) continue;
                const double cost = tiles(nx, ny) * double(nx) * double(ny) * sample_cost(nx, ny, t.f64);
                if (cost < best) best = cost, t.nx = nx, t.ny = ny;
            }
        if (!t.nx) return FftTiling{};
    }
    t.vx = t.nx - m.width + 1;
    t.vy = t.ny - m.height + 1;
    t.tiles_x = tiles_for(shape.width, t.vx);
    t.tiles_y = tiles_for(shape.height, t.vy);
    const std::size_t tile_bytes = t.transform_reals() * (t.f64 ? 8 : 4) * std::size_t(std::max(shape.channels, 1));
    long long per_batch = overrides().fft_batch;  // APRON_FFT_BATCH
    if (per_batch <= 0) per_batch = (long long)std::max<std::size_t>(1, batch_bytes / tile_bytes);
    per_batch = std::min<long long>({per_batch, t.tiles(), max_batch_tiles});
    // Batches of equal size: the last one then wastes fewer than `batches` tile slots (every batch runs
    // the same cuFFT plan).
    t.batches = int((t.tiles() + per_batch - 1) / per_batch);
    t.batch_tiles = int((t.tiles() + t.batches - 1) / t.batches);
    return t;
}

} // namespace cuda

bool cuda_fft_supports(const LinearPlan& plan, const ImageShape& shape) {
    return cuda::choose_fft_tiling(plan, shape).nx != 0;
}

} // namespace apron
