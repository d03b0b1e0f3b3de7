#pragma once
// Every CUDA call is checked; a failure becomes an apron::Error naming the call and the CUDA error.
#include <cuda_runtime.h>

#include <string>

#include "apron/errors.hpp"

namespace apron::cuda {

inline void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        cudaGetLastError();  // clear non-sticky errors so the next call starts clean
        throw Error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
    }
}

} // namespace apron::cuda

#define APRON_CUDA_CHECK(call) ::apron::cuda::check((call), #call)
// After a kernel launch: launch errors (bad configuration) surface here, not at the next call.
#define APRON_CUDA_CHECK_LAUNCH(name) ::apron::cuda::check(cudaGetLastError(), name)
