#pragma once
// Stream-ordered device scratch for one call: allocated on the stream from the pool (cudaMallocAsync), freed on
// the stream after the call's last kernel, also when a launch check throws. Out of memory is a one-line error
// naming what the scratch was for.
#include <cstddef>
#include <string>

#include <cuda_runtime.h>

#include "apron/errors.hpp"

namespace apron::cuda {

class Scratch {
public:
    Scratch(std::size_t bytes, cudaStream_t stream, const char* what) : stream_(stream) {
        if (!bytes) return;
        const cudaError_t e = cudaMallocAsync(&p_, bytes, stream);
        if (e != cudaSuccess) {
            cudaGetLastError();
            throw Error(std::string("cuda: out of device memory for ") + what + " (" + std::to_string(bytes) + " bytes, " +
                        cudaGetErrorString(e) + ")");
        }
    }
    ~Scratch() {
        if (p_) cudaFreeAsync(p_, stream_);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    void* get() const { return p_; }

private:
    void* p_ = nullptr;
    cudaStream_t stream_;
};

} // namespace apron::cuda
