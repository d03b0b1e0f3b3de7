#pragma once
// Functions marked APRON_HD compile for the host and, under nvcc, for the device too, so the CPU and
// CUDA backends share one definition of every piece of pixel maths.
#if defined(__CUDACC__)
#define APRON_HD __host__ __device__ __forceinline__
#else
#define APRON_HD inline
#endif
