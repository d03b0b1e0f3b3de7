#pragma once
// Functions marked APRON_HD compile for the host and, under nvcc, for the device too, so the CPU and
// CUDA backends share one definition of every piece of pixel maths.
#if defined(__CUDACC__)
#define APRON_HD __host__ __device__ __forceinline__
#else
#define APRON_HD inline
#endif

// Double arithmetic that no compiler may fuse into an FMA: nvcc contracts a*b+c by default, and the
// host build uses -ffp-contract=off, so the exact paths call these where CPU and GPU must agree bit for bit.
namespace apron {
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
#else
inline double mul_rn(double a, double b) { return a * b; }
inline double add_rn(double a, double b) { return a + b; }
#endif
} // namespace apron
