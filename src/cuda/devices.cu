// Device discovery for `apron info` and `--backend auto`. Kernels arrive with the CUDA backend.
#include <cuda_runtime.h>

#include <cstdio>

#include "apron/devices.hpp"
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

void* allocate_pinned(std::size_t bytes) {
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
    return p;
}

void free_pinned(void* p) { cudaFreeHost(p); }

bool is_pinned(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

} // namespace apron
