// Direct correlation compiled at run time: for masks the compile-time tiled kernel does not cover (even
// and non-square sizes, odd squares above 31, exact sums beyond 2^24 in integers), the kernel generator
// (rtc_source.cpp) writes CUDA source with the mask's weights as literals, NVRTC compiles it for this
// device, and the kernel is kept for the process's life:
//   plan cache  (here):          mask, anchor, types, channels, device -> kernel, so a repeated plan
//                                 launches without generating any text;
//   source cache (nvrtc_cache):  device + generated source -> loaded module's function (plans that differ
//                                 only in what the kernel takes as arguments: border, finish constants);
//   disk cache  (nvrtc_cache):   source + architecture + NVRTC version -> cubin, across processes.
// Border mode, constant value and finish constants are kernel arguments, so they reuse one kernel.
//
// Set APRON_RUNTIME_DIRECT=0 to keep these kernels out (the baseline kernel runs instead) and
// APRON_RTC_INTEGER=1 to make exact plans accumulate in integers even where f32 is exact (to measure).
#include "core/overrides.hpp"
#include "cuda/runtime_direct.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "apron/errors.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/nvrtc_cache.hpp"
#include "cuda/rtc_source.hpp"

namespace apron::cuda {
namespace {

struct Kernel {
    void* function = nullptr;
    std::size_t shared_bytes = 0;
    int rows_per_thread = 1;
};

std::mutex plans_mutex;
std::unordered_map<std::string, Kernel> plans;  // plan_key -> kernel
RuntimeDirectStats counters;                    // plan_hits, sources, source_hits (the rest: nvrtc_cache)

template <class T>
void append(std::string& key, const T& v) {
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Everything the generated source depends on (and nothing it takes as an argument).
std::string plan_key(const LinearPlan& p, int channels, int device, bool force_integer) {
    const Mask& m = p.step.mask;
    std::string key;
    key.reserve(64 + m.weights.size() * 16);
    for (int v : {device, channels, int(force_integer), int(p.in), int(p.out), int(p.exact), int(p.accumulator), m.width,
                  m.height, m.anchor_x, m.anchor_y})
        append(key, v);
    append(key, p.integer_mask.abs_sum);
    key.append(reinterpret_cast<const char*>(m.weights.data()), m.weights.size() * sizeof(double));
    if (p.exact)
        key.append(reinterpret_cast<const char*>(p.integer_mask.weights.data()),
                   p.integer_mask.weights.size() * sizeof(std::int64_t));
    return key;
}

int current_device() {
    int device = 0;
    APRON_CUDA_CHECK(cudaGetDevice(&device));
    return device;
}

Kernel kernel_for(const LinearPlan& p, int channels) {
    const bool force_integer = overrides().rtc_integer;
    const std::string key = plan_key(p, channels, current_device(), force_integer);
    {
        std::lock_guard<std::mutex> lock(plans_mutex);
        if (auto it = plans.find(key); it != plans.end()) {
            ++counters.plan_hits;
            return it->second;
        }
    }
    const rtc::KernelSource ks = rtc::generate_source(p, channels, force_integer);
    const std::uint64_t hits_before = rtc::cache_stats().memory_hits;
    Kernel k;
    k.function = rtc::load_kernel(ks.text, ks.entry, ks.shared_bytes);
    k.shared_bytes = ks.shared_bytes;
    k.rows_per_thread = ks.rows_per_thread;
    std::lock_guard<std::mutex> lock(plans_mutex);
    ++counters.sources;
    if (rtc::cache_stats().memory_hits != hits_before) ++counters.source_hits;
    plans.emplace(key, k);
    return k;
}

// The most shared memory a block may have on the current device (opt-in), per device.
std::size_t shared_limit() {
    static std::mutex m;
    static std::unordered_map<int, std::size_t> limits;
    const int device = current_device();
    std::lock_guard<std::mutex> lock(m);
    if (auto it = limits.find(device); it != limits.end()) return it->second;
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
        cudaGetLastError();
        v = 48 * 1024;
    }
    limits[device] = std::size_t(v);
    return std::size_t(v);
}

} // namespace

bool runtime_direct_supports(const LinearPlan& p) {
    if (overrides().runtime_off) return false;
    if (!rtc::choose_accumulate(p, nullptr)) return false;
    if (!rtc::nvrtc_available()) return false;  // no libnvrtc: the baseline kernel runs instead
    // The channel count is not known here: the largest tile (4 channels) must fit.
    return rtc::shared_bytes_for(p, max_channels) <= shared_limit();
}

void launch_runtime_direct(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream, int row_begin,
                           int row_end) {
    if (row_end < 0) row_end = in.height();
    if (row_begin >= row_end || in.empty()) return;
    const int channels = in.channels();
    const Kernel k = kernel_for(p, channels);

    const unsigned char* in_data = reinterpret_cast<const unsigned char*>(in.data);
    unsigned long long in_pitch = in.pitch, out_pitch = out.pitch;
    unsigned char* out_data = reinterpret_cast<unsigned char*>(out.data);
    int width = in.width(), height = in.height();
    int mode = int(p.step.border);
    float outside_f = 0;
    int outside_i = 0;
    with_type(p.in, [&]<class In>() {
        const In v = store_pixel<In>(p.step.border_value);
        outside_f = float(v);
        if constexpr (!std::is_same_v<In, float>) outside_i = int(v);
    });
    LinearFinish finish = p.finish;
    const std::size_t vec_bytes = 4 * bytes_per_sample(p.out);
    int vec = reinterpret_cast<std::uintptr_t>(out.data) % vec_bytes == 0 && out.pitch % vec_bytes == 0;

    const std::size_t samples = std::size_t(width) * std::size_t(channels);
    const unsigned grid_x = unsigned((samples + rtc::block_x * rtc::outputs_x - 1) / (rtc::block_x * rtc::outputs_x));
    const int rows_per_block = rtc::block_y * k.rows_per_thread;
    // gridDim.y is at most 65535: tall images run in several launches.
    const int max_rows = 65535 * rows_per_block;
    for (int y0 = row_begin; y0 < row_end; y0 += max_rows) {
        int y1 = std::min(row_end, y0 + max_rows);
        int rb = y0;
        const unsigned grid_y = unsigned((y1 - y0 + rows_per_block - 1) / rows_per_block);
        void* args[] = {&in_data, &in_pitch, &width, &height, &out_data, &out_pitch, &mode, &outside_f,
                        &outside_i, &finish,  &vec,      &rb,    &y1};
        rtc::launch_kernel(k.function, grid_x, grid_y, rtc::block_x, rtc::block_y, k.shared_bytes, stream, args);
    }
}

RuntimeDirectStats runtime_direct_stats() {
    RuntimeDirectStats s;
    {
        std::lock_guard<std::mutex> lock(plans_mutex);
        s = counters;
    }
    const rtc::CacheStats c = rtc::cache_stats();
    s.compiles = c.compiles;
    s.disk_hits = c.disk_hits;
    s.modules = c.modules;
    return s;
}

void* runtime_direct_kernel(const LinearPlan& plan, int channels) { return kernel_for(plan, channels).function; }

Image runtime_direct_run_host(const LinearPlan& plan, ConstImageView in, int offset) {
    // Device buffers larger than the image by `offset` on every side, filled with 0xCD, holding the
    // input and output as views at (offset, offset): ROIs whose rows start anywhere. Bytes outside the
    // output view must come back untouched.
    const ImageShape out_shape{in.width(), in.height(), in.channels(), plan.out};
    const int rows = in.height() + 2 * offset;
    const std::size_t in_row = in.shape.row_bytes() + 2 * std::size_t(offset) * bytes_per_sample(in.type()) * in.channels();
    const std::size_t out_row = out_shape.row_bytes() + 2 * std::size_t(offset) * bytes_per_sample(plan.out) * in.channels();
    const std::size_t in_skip = std::size_t(offset) * bytes_per_sample(in.type()) * in.channels();
    const std::size_t out_skip = std::size_t(offset) * bytes_per_sample(plan.out) * in.channels();
    Image out(out_shape);
    void *d_in = nullptr, *d_out = nullptr;
    auto release = [&] {
        cudaFree(d_in);
        cudaFree(d_out);
    };
    try {
        APRON_CUDA_CHECK(cudaMalloc(&d_in, in_row * std::size_t(rows)));
        APRON_CUDA_CHECK(cudaMalloc(&d_out, out_row * std::size_t(rows)));
        APRON_CUDA_CHECK(cudaMemset(d_in, 0xCD, in_row * std::size_t(rows)));
        APRON_CUDA_CHECK(cudaMemset(d_out, 0xCD, out_row * std::size_t(rows)));
        std::byte* in_at = static_cast<std::byte*>(d_in) + std::size_t(offset) * in_row + in_skip;
        std::byte* out_at = static_cast<std::byte*>(d_out) + std::size_t(offset) * out_row + out_skip;
        APRON_CUDA_CHECK(cudaMemcpy2D(in_at, in_row, in.data, in.pitch, in.shape.row_bytes(), std::size_t(in.height()),
                                      cudaMemcpyHostToDevice));
        const ConstImageView din{in_at, in.shape, in_row, Memory::device};
        const ImageView dout{out_at, out_shape, out_row, Memory::device};
        launch_runtime_direct(plan, din, dout, nullptr);
        APRON_CUDA_CHECK(cudaGetLastError());
        APRON_CUDA_CHECK(cudaDeviceSynchronize());
        std::vector<unsigned char> all(out_row * std::size_t(rows));
        APRON_CUDA_CHECK(cudaMemcpy(all.data(), d_out, all.size(), cudaMemcpyDeviceToHost));
        const ImageView host = out.view();
        for (int y = 0; y < rows; ++y)
            for (std::size_t b = 0; b < out_row; ++b) {
                const bool inside = y >= offset && y < offset + in.height() && b >= out_skip &&
                                    b < out_skip + out_shape.row_bytes();
                if (inside) reinterpret_cast<unsigned char*>(host.row_bytes(y - offset))[b - out_skip] = all[std::size_t(y) * out_row + b];
                else if (all[std::size_t(y) * out_row + b] != 0xCD)
                    throw Error("runtime_direct: wrote outside the output view at row " + std::to_string(y - offset));
            }
    } catch (...) {
        release();
        throw;
    }
    release();
    return out;
}

} // namespace apron::cuda
