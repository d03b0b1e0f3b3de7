#pragma once
// Limits of the current CUDA device the kernels size their tiles by.
#include <cuda_runtime.h>

namespace apron::cuda {

// The most shared memory one block may opt in to on the current device; 48 KiB (every device's default)
// when the query fails.
inline int smem_optin_limit() {
    int device = 0, limit = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
        cudaGetLastError();
        return 48 * 1024;
    }
    return limit;
}

} // namespace apron::cuda
