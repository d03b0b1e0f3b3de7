#pragma once
// The kernel generator of the run-time compiled direct correlation (runtime_direct.cu): CUDA source for
// one mask, with its weights written into the code as literals. Plain C++ (no CUDA headers), so the CPU
// test suite can check what it writes and compile it with NVRTC on a machine without a GPU.
#include <cstddef>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace apron::cuda::rtc {

// How the generated kernel sums: f32 (float path, and exact plans whose partial sums stay below 2^24),
// i32 (exact, below 2^31: IMAD/IADD3 on int tiles) or i64 (exact, below 2^53).
enum class Accumulate : unsigned char { f32, i32, i64 };

// Largest mask side the generator writes code for (the code grows with the taps: 63x63 is ~16 k FMAs).
constexpr int max_side = 63;

// Exact plans that need integer sums (beyond 2^24): at most this many non-zero taps.
constexpr std::size_t max_integer_taps = 33 * 33;

// Fixed geometry: blocks of 32 x 8 threads, each thread 4 consecutive output samples along x.
constexpr int block_x = 32, block_y = 8, outputs_x = 4;

struct KernelSource {
    std::string text;                    // the whole translation unit (it #includes the embedded headers)
    const char* entry = "apron_rtc_direct";
    int rows_per_thread = 1;             // output rows per thread
    int tile_w = 0, tile_h = 0, tile_pitch = 0;  // staged tile, in samples
    std::size_t shared_bytes = 0;        // dynamic shared memory per block
    Accumulate accumulate = Accumulate::f32;
    int samples_per_block_x() const { return block_x * outputs_x; }
    int rows_per_block() const { return block_y * rows_per_thread; }
};

// The accumulator a plan needs; false when the generator does not handle it (mask too large or empty,
// weights not finite).
bool choose_accumulate(const LinearPlan& plan, Accumulate* out);

// Shared memory of the kernel for `plan` on images of `channels` channels, exact above 48 KiB, an upper
// bound below (what the launcher checks against the device's limit before generating anything).
std::size_t shared_bytes_for(const LinearPlan& plan, int channels);

// The source for `plan` on images of `channels` channels (1-4). Deterministic: the same plan gives the
// same text, which is the compiled-kernel cache's key. Throws apron::Error when !choose_accumulate.
// force_integer: exact plans accumulate in integers even where f32 would be exact (for measurements).
KernelSource generate_source(const LinearPlan& plan, int channels, bool force_integer = false);

// The headers the generated source includes, embedded at build time from src/core (one source of truth),
// plus minimal <cstdint>/<cmath> stand-ins: NVRTC compiles without reading the repository.
struct EmbeddedHeader {
    const char* name;
    const char* text;
};
const std::vector<EmbeddedHeader>& embedded_headers();

} // namespace apron::cuda::rtc
