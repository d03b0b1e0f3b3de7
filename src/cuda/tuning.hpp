#pragma once
// The CUDA kernels' tuning values as types the kernels read, in the manner of CUB's policies: one struct per
// architecture apron was measured on, every value with its measurement. The dispatch table's ArchPolicy
// (dispatch_table.cpp) takes its values from here, so the kernel named in a plan and the kernel compiled are
// the same numbers.
namespace apron::cuda {

// sm_90: H100 and H200.
struct Sm90Tuning {
    // The register kernel (direct_regs_impl.cuh) takes odd square masks up to 5x5, 1-4 channels: past it the
    // window outgrows the registers.
    static constexpr int regs_max_k = 5;
    // Its outputs per thread on f32 images (single channel, 16-byte shared loads): 31x31 11.3 -> 21.2 Gpix/s,
    // 5x5 274 -> 323 against one output per thread.
    static constexpr int regs_rx_float = 4;
    // ... on u8/u16 images at 3x3: H100 493 Gpix/s with 8 against 445 tiled and 435 with 4; at 5x5 the tiles
    // win (393 against 340 with 8 and 342 with 4), so 5x5 integer images stay on the tiles.
    static constexpr int regs_rx_int_3x3 = 8;
    // The tiled kernel (direct_tiled_impl.cuh): 4 output samples per thread along x (1-4 channels: taps at
    // stride C over samples).
    static constexpr int tiled_rx = 4;
};

// The tuning the device code is compiled with (the build targets sm_90; other architectures run it untuned).
using KernelTuning = Sm90Tuning;

} // namespace apron::cuda
