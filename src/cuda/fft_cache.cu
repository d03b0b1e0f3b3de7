// The CUDA FFT path's caches (see fft_cache.hpp). Making a cuFFT plan costs milliseconds and a mask's
// spectrum a transform of a whole tile, against microseconds for a batch of tiles, so both are kept,
// least recently used first out. The caches are never destroyed: at exit the CUDA runtime may be gone
// before static destructors run, and the driver frees a process's device memory anyway.
#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "apron/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cufft_check.hpp"
#include "cuda/fft_cache.hpp"
#include "plan/plan.hpp"

namespace apron::cuda {
namespace {

// Least recently used entries leave once there are more than max_entries or their bytes pass max_bytes
// (the newest always stays).
template <class Key, class Value>
class Lru {
public:
    Lru(std::size_t max_entries, std::size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

    std::shared_ptr<Value> find(const Key& key) {
        auto it = map_.find(key);
        if (it == map_.end()) return nullptr;
        it->second.used = ++clock_;
        return it->second.value;
    }

    void insert(Key key, std::shared_ptr<Value> value, std::size_t bytes) {
        bytes_ += bytes;
        auto it = map_.insert_or_assign(std::move(key), Entry{std::move(value), bytes, ++clock_}).first;
        while (map_.size() > 1 && (map_.size() > max_entries_ || bytes_ > max_bytes_)) {
            auto oldest = map_.begin();
            for (auto e = map_.begin(); e != map_.end(); ++e)
                if (e->second.used < oldest->second.used) oldest = e;
            if (oldest == it) break;
            bytes_ -= oldest->second.bytes;
            map_.erase(oldest);  // a caller still holding the value keeps it alive
        }
    }

private:
    struct Entry {
        std::shared_ptr<Value> value;
        std::size_t bytes = 0;
        std::uint64_t used = 0;
    };
    std::map<Key, Entry> map_;
    std::size_t max_entries_, max_bytes_, bytes_ = 0;
    std::uint64_t clock_ = 0;
};

int current_device() {
    int d = 0;
    APRON_CUDA_CHECK(cudaGetDevice(&d));
    return d;
}

// Device memory outside the stream-ordered pool (kept across streams and calls); cudaFree waits for the
// device, so memory freed while a kernel of another stream still reads it stays valid until then.
std::shared_ptr<void> device_memory(std::size_t bytes, const char* what) {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cudaGetLastError();
        throw Error(std::string("cuda: out of device memory for ") + what + " (" + std::to_string(bytes) + " bytes, " +
                    cudaGetErrorString(e) + ")");
    }
    return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

// g: nx x ny reals, zero but for the flipped, scaled weights.
__global__ void place_mask(double* g, int nx, const double* w, int W, int H, double scale) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y;
    if (i >= W) return;
    g[std::size_t(H - 1 - j) * nx + std::size_t(W - 1 - i)] = w[std::size_t(j) * W + i] * scale;
}

__global__ void narrow_spectrum(float2* to, const double2* from, std::size_t n) {
    for (std::size_t q = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; q < n; q += std::size_t(gridDim.x) * blockDim.x)
        to[q] = make_float2(float(from[q].x), float(from[q].y));
}

struct CufftHandle {
    cufftHandle h = 0;
    ~CufftHandle() {
        if (h) cufftDestroy(h);
    }
};

// The spectrum in double whatever the plan's precision: its own rounding then adds nothing to a float
// plan's error but the final narrowing.
std::shared_ptr<void> compute_spectrum(const std::vector<double>& weights, const Mask& m, const FftTiling& t,
                                       cudaStream_t stream) {
    const std::size_t reals = std::size_t(t.nx) * t.ny, bins = std::size_t(t.nx / 2 + 1) * t.ny;
    auto g = device_memory(reals * sizeof(double), "an FFT mask");
    auto w = device_memory(weights.size() * sizeof(double), "an FFT mask");
    auto spectrum = device_memory(bins * sizeof(double2), "an FFT mask spectrum");
    APRON_CUDA_CHECK(cudaMemsetAsync(g.get(), 0, reals * sizeof(double), stream));
    APRON_CUDA_CHECK(cudaMemcpyAsync(w.get(), weights.data(), weights.size() * sizeof(double), cudaMemcpyHostToDevice, stream));
    const dim3 block(128), grid(unsigned((m.width + 127) / 128), unsigned(m.height));
    place_mask<<<grid, block, 0, stream>>>(static_cast<double*>(g.get()), t.nx, static_cast<const double*>(w.get()),
                                           m.width, m.height, 1.0 / double(reals));
    APRON_CUDA_CHECK_LAUNCH("fft place_mask");
    CufftHandle plan;
    APRON_CUFFT_CHECK(cufftPlan2d(&plan.h, t.ny, t.nx, CUFFT_D2Z));
    APRON_CUFFT_CHECK(cufftSetStream(plan.h, stream));
    APRON_CUFFT_CHECK(cufftExecD2Z(plan.h, static_cast<cufftDoubleReal*>(g.get()), static_cast<cufftDoubleComplex*>(spectrum.get())));
    if (!t.f64) {
        auto narrow = device_memory(bins * sizeof(float2), "an FFT mask spectrum");
        narrow_spectrum<<<unsigned(std::min<std::size_t>((bins + 255) / 256, 4096)), 256, 0, stream>>>(
            static_cast<float2*>(narrow.get()), static_cast<const double2*>(spectrum.get()), bins);
        APRON_CUDA_CHECK_LAUNCH("fft narrow_spectrum");
        spectrum = std::move(narrow);
    }
    // Once per mask and tile: afterwards any stream may read it without an event.
    APRON_CUDA_CHECK(cudaStreamSynchronize(stream));
    return spectrum;
}

} // namespace

FftPlans::FftPlans(int nx, int ny, int transforms, bool f64) : f64_(f64) {
    long long n[2] = {ny, nx};
    const long long half = nx / 2 + 1;
    long long real_embed[2] = {ny, 2 * half}, complex_embed[2] = {ny, half};
    const long long real_dist = ny * 2 * half, complex_dist = ny * half;
    std::size_t forward_work = 0, inverse_work = 0;
    try {
        APRON_CUFFT_CHECK(cufftCreate(&forward_));
        APRON_CUFFT_CHECK(cufftSetAutoAllocation(forward_, 0));
        APRON_CUFFT_CHECK(cufftMakePlanMany64(forward_, 2, n, real_embed, 1, real_dist, complex_embed, 1, complex_dist,
                                              f64 ? CUFFT_D2Z : CUFFT_R2C, transforms, &forward_work));
        APRON_CUFFT_CHECK(cufftCreate(&inverse_));
        APRON_CUFFT_CHECK(cufftSetAutoAllocation(inverse_, 0));
        APRON_CUFFT_CHECK(cufftMakePlanMany64(inverse_, 2, n, complex_embed, 1, complex_dist, real_embed, 1, real_dist,
                                              f64 ? CUFFT_Z2D : CUFFT_C2R, transforms, &inverse_work));
    } catch (...) {
        if (forward_) cufftDestroy(forward_);
        if (inverse_) cufftDestroy(inverse_);
        throw;
    }
    work_bytes_ = std::max(forward_work, inverse_work);
}

FftPlans::~FftPlans() {
    cufftDestroy(forward_);
    cufftDestroy(inverse_);
}

void FftPlans::forward(void* data, void* work, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    APRON_CUFFT_CHECK(cufftSetStream(forward_, stream));
    if (work_bytes_) APRON_CUFFT_CHECK(cufftSetWorkArea(forward_, work));
    if (f64_)
        APRON_CUFFT_CHECK(cufftExecD2Z(forward_, static_cast<cufftDoubleReal*>(data), static_cast<cufftDoubleComplex*>(data)));
    else
        APRON_CUFFT_CHECK(cufftExecR2C(forward_, static_cast<cufftReal*>(data), static_cast<cufftComplex*>(data)));
}

void FftPlans::inverse(void* data, void* work, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    APRON_CUFFT_CHECK(cufftSetStream(inverse_, stream));
    if (work_bytes_) APRON_CUFFT_CHECK(cufftSetWorkArea(inverse_, work));
    if (f64_)
        APRON_CUFFT_CHECK(cufftExecZ2D(inverse_, static_cast<cufftDoubleComplex*>(data), static_cast<cufftDoubleReal*>(data)));
    else
        APRON_CUFFT_CHECK(cufftExecC2R(inverse_, static_cast<cufftComplex*>(data), static_cast<cufftReal*>(data)));
}

std::shared_ptr<FftPlans> fft_plans(const FftTiling& t, int transforms) {
    using Key = std::tuple<int, int, int, int, bool>;  // device, nx, ny, transforms, f64
    static std::mutex mutex;
    static auto& cache = *new Lru<Key, FftPlans>(8, SIZE_MAX);  // never destroyed (see the top)
    const Key key{current_device(), t.nx, t.ny, transforms, t.f64};
    std::lock_guard<std::mutex> lock(mutex);
    if (auto p = cache.find(key)) return p;
    auto p = std::make_shared<FftPlans>(t.nx, t.ny, transforms, t.f64);
    cache.insert(key, p, 0);
    return p;
}

std::shared_ptr<const void> mask_spectrum(const LinearPlan& plan, const FftTiling& t, cudaStream_t stream) {
    struct Key {
        int device, nx, ny;
        bool f64;
        int w, h;
        std::vector<double> weights;
        auto operator<=>(const Key&) const = default;
    };
    const Mask& m = plan.step.mask;
    Key key{current_device(), t.nx, t.ny, t.f64, m.width, m.height, {}};
    if (plan.exact)
        key.weights.assign(plan.integer_mask.weights.begin(), plan.integer_mask.weights.end());  // exact below 2^53
    else
        key.weights = m.weights;
    static std::mutex mutex;
    // 16 spectra or 1 GiB (an 8192^2 float spectrum is 256 MiB); never destroyed (see the top).
    static auto& cache = *new Lru<Key, void>(16, std::size_t(1) << 30);
    std::lock_guard<std::mutex> lock(mutex);
    if (auto s = cache.find(key)) return s;
    auto s = compute_spectrum(key.weights, m, t, stream);
    const std::size_t bytes = std::size_t(t.nx / 2 + 1) * t.ny * (t.f64 ? sizeof(double2) : sizeof(float2));
    cache.insert(std::move(key), s, bytes);
    return s;
}

} // namespace apron::cuda
