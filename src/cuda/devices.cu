// Device discovery for `apron info` and `--backend auto`. Kernels arrive with the CUDA backend.
#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "apron/devices.hpp"
#include "apron/errors.hpp"
#include "core/host_memory.hpp"
#include "plan/plan.hpp"

namespace apron {

std::vector<std::string> cuda_devices() {
    std::vector<std::string> out;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no device" error
        return out;
    }
    for (int d = 0; d < count; ++d) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
        char line[512];
        std::snprintf(line, sizeof line, "%d: %s, sm_%d%d, %d SMs, %.1f GiB", d, p.name, p.major, p.minor,
                      p.multiProcessorCount, double(p.totalGlobalMem) / (1u << 30));
        out.push_back(line);
    }
    return out;
}

std::string cuda_status() {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return std::string("built, no device (") + cudaGetErrorString(e) + ")";
    }
    return "built, " + std::to_string(count) + " device(s)";
}

std::shared_ptr<void> use_cuda_device(int device) {
    if (device < 0) return nullptr;
    int current = 0;
    if (cudaGetDevice(&current) != cudaSuccess) cudaGetLastError();
    if (current == device) return nullptr;  // the usual case: a cudaGetDevice, no switch
    if (const cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
        cudaGetLastError();
        throw Error("cuda device " + std::to_string(device) + ": " + cudaGetErrorString(e));
    }
    return std::shared_ptr<void>(nullptr, [current](void*) { cudaSetDevice(current); });
}

// The current device's compute capability x 10 (its calibration table), 0 without a device.
int cuda_device_arch() {
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return major * 10 + minor;
}

std::string cuda_device_name() {
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        cudaGetLastError();
        return "";
    }
    return prop.name;
}

namespace {

// cudaMallocHost and cudaFreeHost cost milliseconds for large blocks (cudaFreeHost also waits for the
// device), and a batch allocates two images per image it filters: freed blocks are kept and handed out
// again to a request of the same size (images of a batch are mostly of one size), up to 2 GiB kept.
class PinnedCache {
public:
    void* take(std::size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = free_.find(bytes);
        if (it == free_.end()) return nullptr;
        void* p = it->second;
        free_.erase(it);
        kept_ -= bytes;
        return p;
    }
    bool keep(void* p, std::size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (kept_ + bytes > max_kept) return false;
        free_.emplace(bytes, p);
        kept_ += bytes;
        return true;
    }
    void note_size(void* p, std::size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        sizes_[p] = bytes;
    }
    // Hands every kept block to the caller (to free), emptying the cache.
    std::vector<void*> take_all() {
        std::lock_guard<std::mutex> lock(mutex_);
        std::vector<void*> all;
        for (auto& [bytes, p] : free_) all.push_back(p);
        free_.clear();
        kept_ = 0;
        return all;
    }
    std::size_t kept() {
        std::lock_guard<std::mutex> lock(mutex_);
        return kept_;
    }
    std::size_t size_of(void* p) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = sizes_.find(p);
        return it == sizes_.end() ? 0 : it->second;
    }

private:
    static constexpr std::size_t max_kept = std::size_t(2) << 30;
    std::mutex mutex_;
    std::multimap<std::size_t, void*> free_;
    std::unordered_map<void*, std::size_t> sizes_;
    std::size_t kept_ = 0;
};

PinnedCache& pinned_cache() {
    static PinnedCache* cache = new PinnedCache;  // never destroyed: frees may come during static destruction
    return *cache;
}

} // namespace

void* cuda_allocate_pinned(std::size_t bytes) {
    if (void* p = pinned_cache().take(bytes)) return p;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        return nullptr;
    }
    void* p = nullptr;
    if (cudaMallocHost(&p, bytes) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    pinned_cache().note_size(p, bytes);
    return p;
}

void cuda_free_pinned(void* p) {
    if (!p) return;
    const std::size_t bytes = pinned_cache().size_of(p);
    if (bytes && pinned_cache().keep(p, bytes)) return;
    cudaFreeHost(p);
}

void release_kept_pinned() {
    for (void* p : pinned_cache().take_all()) cudaFreeHost(p);
}

std::size_t kept_pinned_bytes() { return pinned_cache().kept(); }

bool is_pinned(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

} // namespace apron
