// Device discovery for `apron info` and `--backend auto`. Kernels arrive with the CUDA backend.
#include <cuda_runtime.h>

#include <sys/mman.h>

#include <cstdint>
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
    void note_size(void* p, std::size_t bytes, std::size_t mapped = 0) {
        std::lock_guard<std::mutex> lock(mutex_);
        sizes_[p] = bytes;
        if (mapped) mapped_[p] = mapped;
        else mapped_.erase(p);
    }
    // A block freed: its address may come back from another allocation.
    void forget(void* p) {
        std::lock_guard<std::mutex> lock(mutex_);
        sizes_.erase(p);
        mapped_.erase(p);
    }
    // Bytes mapped for a block registered from huge pages (0: a cudaMallocHost block).
    std::size_t mapped_of(void* p) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = mapped_.find(p);
        return it == mapped_.end() ? 0 : it->second;
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
    std::unordered_map<void*, std::size_t> sizes_, mapped_;
    std::size_t kept_ = 0;
};

PinnedCache& pinned_cache() {
    static PinnedCache* cache = new PinnedCache;  // never destroyed: frees may come during static destruction
    return *cache;
}

} // namespace

namespace {

constexpr std::size_t huge_page = std::size_t(2) << 20;

// A large block page-locked from transparent huge pages: anonymous memory aligned to 2 MiB, advised
// MADV_HUGEPAGE, then cudaHostRegister. cudaMallocHost locks 4 KiB pages one by one, under a lock of the
// driver's, and maps each block into every GPU's context: measured on 4 H200s, a batch's 16 MiB blocks took
// about 5 ms each, and 64 I/O threads waiting for them made pinning the stage that bounded the batch. The
// same block from huge pages is 8 pages to lock. nullptr where any step fails (the caller falls back to
// cudaMallocHost); `mapped` is the length to unmap.
void* register_huge_pages(std::size_t bytes, std::size_t& mapped) {
    mapped = (bytes + huge_page - 1) / huge_page * huge_page;
    const std::size_t span = mapped + huge_page;  // room to align the start to a huge page
    void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto start = (reinterpret_cast<std::uintptr_t>(raw) + huge_page - 1) / huge_page * huge_page;
    const std::size_t head = start - reinterpret_cast<std::uintptr_t>(raw), tail = span - head - mapped;
    if (head) ::munmap(raw, head);
    if (tail) ::munmap(reinterpret_cast<char*>(start) + mapped, tail);
    void* p = reinterpret_cast<void*>(start);
    ::madvise(p, mapped, MADV_HUGEPAGE);  // advice: where the kernel has no huge page free, 4 KiB pages serve
    if (cudaHostRegister(p, mapped, cudaHostRegisterPortable) != cudaSuccess) {
        cudaGetLastError();
        ::munmap(p, mapped);
        return nullptr;
    }
    return p;
}

void free_block(void* p) {
    const std::size_t mapped = pinned_cache().mapped_of(p);
    pinned_cache().forget(p);
    if (mapped) {
        cudaHostUnregister(p);
        ::munmap(p, mapped);
    } else {
        cudaFreeHost(p);
    }
}

} // namespace

void* cuda_allocate_pinned(std::size_t bytes) {
    if (void* p = pinned_cache().take(bytes)) return p;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        return nullptr;
    }
    // Blocks of several huge pages come from them (a smaller one would waste most of its last page).
    if (bytes >= 4 * huge_page) {
        std::size_t mapped = 0;
        if (void* p = register_huge_pages(bytes, mapped)) {
            pinned_cache().note_size(p, bytes, mapped);
            return p;
        }
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
    free_block(p);
}

void release_kept_pinned() {
    for (void* p : pinned_cache().take_all()) free_block(p);
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
