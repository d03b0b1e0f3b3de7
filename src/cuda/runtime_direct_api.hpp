#pragma once
// What the run-time compiled direct correlation offers besides the executor's hooks (runtime_direct.cu),
// without CUDA headers: its caches' counters, its kernel handle and a host-to-host run for tests.
#include <cstdint>

#include "apron/image.hpp"
#include "plan/plan.hpp"

namespace apron::cuda {

struct RuntimeDirectStats {
    std::uint64_t plan_hits = 0;       // launches that found their kernel by plan (no source generated)
    std::uint64_t sources = 0;         // sources generated (plan cache misses)
    std::uint64_t source_hits = 0;     // generated sources found already loaded (another plan, same code)
    std::uint64_t compiles = 0;        // NVRTC compilations
    std::uint64_t disk_hits = 0;       // compiled binaries read from the disk cache
    std::uint64_t modules = 0;         // modules loaded into a CUDA context
};
RuntimeDirectStats runtime_direct_stats();

// The compiled kernel (a CUfunction) for `plan` on images of `channels` channels on the current device,
// generated, compiled and loaded on first use; the same handle on every later call.
void* runtime_direct_kernel(const LinearPlan& plan, int channels);

// Whether the run-time compiled kernel handles the plan (the executor tries the next family otherwise):
// mask sides up to 63, finite weights, exact sums below 2^53, NVRTC present, the tile within the device's
// shared memory. APRON_RUNTIME_DIRECT=0 declines everything.
bool runtime_direct_supports(const LinearPlan& plan);

// For tests: uploads `in` (host), runs the run-time compiled kernel alone on the current device and
// returns the result. offset > 0 places input and output as views `offset` pixels and rows inside larger
// device buffers (rows starting anywhere); writing outside the output view throws apron::Error.
Image runtime_direct_run_host(const LinearPlan& plan, ConstImageView in, int offset = 0);

} // namespace apron::cuda
