#pragma once
// Compiling generated CUDA source at run time, and the caches of what was compiled (nvrtc_cache.cpp).
// NVRTC (libnvrtc) is opened with dlopen on first use and the driver API is reached through the CUDA
// runtime's entry points, so apron links neither: without them it starts, runs on the CPU, and the CUDA
// executor falls back to its other kernels. Plain C++ here: the CPU tests use the compiler without a GPU.
#include <cstddef>
#include <cstdint>
#include <string>

namespace apron::cuda::rtc {

// Whether libnvrtc could be opened (the reason in *why when not).
bool nvrtc_available(std::string* why = nullptr);
// "major.minor" of the NVRTC that was opened, "" when none.
std::string nvrtc_version();

// A compiled program: a cubin for sm_XY when NVRTC knows the architecture, else PTX for the newest
// virtual architecture it knows below it (the driver then JIT-compiles it once).
struct Binary {
    std::string data;
    bool ptx = false;
};

// Compiles `source` (the embedded headers available to its #includes) for compute capability
// arch = 10 * major + minor. Throws apron::Error with the first error line of NVRTC's log.
Binary compile(const std::string& source, int arch);

// compile() behind an on-disk cache: $APRON_RTC_CACHE_DIR, else $XDG_CACHE_HOME/apron, else
// ~/.cache/apron; one file per hash of source + architecture + NVRTC version, holding that whole key so a
// hash collision is a miss. APRON_RTC_DISK_CACHE=0 turns it off; failures to read or write are misses.
Binary compile_cached(const std::string& source, int arch);

// A kernel of a generated source, loaded into the current device's primary context: the CUfunction,
// as void* so this header needs no CUDA header. Loaded once per (device, source); later calls return
// the same function. shared_bytes: the dynamic shared memory it will be launched with (the opt-in above
// 48 KiB is set once, at load).
void* load_kernel(const std::string& source, const char* entry, std::size_t shared_bytes);

// Launches a function from load_kernel (cuLaunchKernel) on a cudaStream_t given as void*.
void launch_kernel(void* function, unsigned grid_x, unsigned grid_y, unsigned block_x, unsigned block_y,
                   std::size_t shared_bytes, void* stream, void** args);

// Counters of the caches since the process started.
struct CacheStats {
    std::uint64_t compiles = 0;      // NVRTC runs
    std::uint64_t disk_hits = 0;     // binaries read from the disk cache
    std::uint64_t memory_hits = 0;   // load_kernel calls answered from memory
    std::uint64_t modules = 0;       // modules loaded into a context
};
CacheStats cache_stats();

} // namespace apron::cuda::rtc
