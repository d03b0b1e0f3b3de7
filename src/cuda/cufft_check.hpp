#pragma once
// Every cuFFT call is checked like the CUDA ones (cuda_check.hpp): a failure becomes an apron::Error
// naming the call and the cuFFT status (cuFFT has no error strings of its own).
#include <cufft.h>

#include <string>

#include "apron/errors.hpp"

namespace apron::cuda {

inline const char* cufft_status_name(cufftResult r) {
    switch (r) {
    case CUFFT_SUCCESS: return "success";
    case CUFFT_INVALID_PLAN: return "invalid plan";
    case CUFFT_ALLOC_FAILED: return "out of memory";
    case CUFFT_INVALID_TYPE: return "invalid type";
    case CUFFT_INVALID_VALUE: return "invalid value";
    case CUFFT_INTERNAL_ERROR: return "internal error";
    case CUFFT_EXEC_FAILED: return "execution failed";
    case CUFFT_SETUP_FAILED: return "library setup failed";
    case CUFFT_INVALID_SIZE: return "invalid size";
    case CUFFT_UNALIGNED_DATA: return "unaligned data";
    case CUFFT_INVALID_DEVICE: return "invalid device";
    case CUFFT_NO_WORKSPACE: return "no work area";
    case CUFFT_NOT_IMPLEMENTED: return "not implemented";
    case CUFFT_NOT_SUPPORTED: return "not supported";
    default: return "error";
    }
}

inline void check_cufft(cufftResult r, const char* what) {
    if (r != CUFFT_SUCCESS)
        throw Error(std::string("cufft: ") + what + ": " + cufft_status_name(r) + " (status " + std::to_string(int(r)) + ")");
}

} // namespace apron::cuda

#define APRON_CUFFT_CHECK(call) ::apron::cuda::check_cufft((call), #call)
