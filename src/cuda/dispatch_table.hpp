#pragma once
// The CUDA backend's dispatch table, in the spirit of CUB's tuning policies: per GPU architecture, the
// kernel families in order of preference with their launch shapes and tuning values (each with the
// measurement behind it, in dispatch_table.cpp). The planner asks it through the CUDA backend's
// capabilities (capabilities.cpp) which family runs each step and records the answer in the plan
// (`apron plan` prints it); the executor (cuda_executor.cu) then calls the launcher the plan bound (KernelChoice::launcher).
//
// What the plan cannot know: a caller's device view (a ROI) may break the row alignment a family's fast
// form needs, and an f32 image may hold NaN or infinities the FFT must not spread. The table chooses for the
// executor's own buffers (rows 256-byte aligned) and finite images; at run time a family's launcher falls
// back inside the family (direct_tiled: registers -> tiles; morph_rect: its fast path -> its general
// kernel) and, where the recorded family declines a plan at all (fft on a non-finite image, the tensor
// cores on a view they cannot stage), the executor takes the direct families in the table's order.
//
// The environment overrides used for A/B measurements are read here once (overrides()), so a plan shows
// the overridden choice. Plain C++: it compiles and plans without a GPU.
#include <string>

#include "core/overrides.hpp"
#include "cuda/chord_schedule.hpp"
#include "plan/plan.hpp"

namespace apron::cuda {

// Linear steps. In the order the table tries them (per policy, see ArchPolicy::linear_order).
enum class LinearFamily : unsigned char {
    fft,              // fft_linear.cu: overlap-save tiles through cuFFT (the planner chose the FFT)
    tensor,           // direct_imma.cu: u8 x s8 matrix products on the tensor cores (planner chose tensor)
    separable_fused,  // separable_fused*.cu: row and column passes in one kernel (planner chose separable)
    column,           // column_linear.cu: masks one sample wide (a volume's z steps), any view; opt-in
    direct_tiled,     // direct_tiled*.cu: odd square masks 3..31, itself direct_dp4a / direct_regs / tiles
    runtime_direct,   // runtime_direct.cu: NVRTC-compiled for the mask, sides up to 63
    linear_direct,    // cuda_executor.cu: one thread per output sample, any mask
};
constexpr int linear_family_count = 7;

// Morphology: the rectangle kernel, then the chord-table kernel of any flat element (MorphAlgorithm::chords),
// then the direct kernel; see choose_morph() in dispatch_table.cpp.
enum class MorphFamily : unsigned char {
    morph_rect,    // morph_rect.cu: van Herk / Gil-Werman rows and columns, full rectangles up to 64x64
    morph_chords,  // morph_chords.cu: chord tables (Urbach-Wilkinson) for any flat element up to 64x64
    morph_direct,  // cuda_executor.cu: every cell of the element from global memory
};

// The environment overrides of the CUDA backend, read once (for measurement; unset in normal use).

// One architecture's policy. Tuning values the kernels were measured with; see dispatch_table.cpp.
struct ArchPolicy {
    int arch = 0;             // compute capability x 10 it was measured on; 0: the default
    const char* name = "";
    LinearFamily linear_order[linear_family_count];
    int regs_max_k = 5;       // the register kernel takes odd square masks up to this side, 1-4 channels
    int regs_rx_float = 4;    // its outputs per thread on f32 images
    int regs_rx_int_3x3 = 8;  // ... on u8/u16 images at 3x3 (5x5 and up: the tiles)
    int tiled_rx = 4;         // output samples per thread of the tiled kernel
};
const ArchPolicy& policy_for(int arch);

// The chord kernel's schedule for this plan on images of `channels` channels (chord_schedule.hpp): the
// override (APRON_CHORDS_VARIANT=0|1), else the measured rule in dispatch_table.cpp.
ChordSchedule chords_schedule_for(const MorphPlan& plan, int channels);

// A float image through a mask with a zero tap: the register and tiled kernels multiply every tap, and 0 x NaN
// (or inf) would put a sample outside the mask into the sum (SPEC: NaN spreads only through the mask). The
// run-time kernel drops zero taps and the generic one skips them; the table gives them such plans, and the
// executor's fallback does too. (A test of each tap in the tiled kernels cost 15-32 % at 9x9-25x25 f32, H200.)
bool zero_taps_matter(const LinearPlan& plan);

// The family and form that run a planned step on the device of compute capability `arch` (x 10).
KernelChoice choose_linear(const LinearPlan& plan, const ImageShape& shape, int arch);
// The family whose launcher the plan bound (choose_linear's), or the table's choice now for a plan made for
// another backend or by hand.
LinearFamily bound_linear_family(const LinearPlan& plan, const ImageShape& shape);
KernelChoice choose_morph(const MorphPlan& plan, const ImageShape& shape, int arch);
KernelChoice choose_combine(const CombinePlan& plan, const ImageShape& shape);

// The morphology family whose launcher the plan bound (choose_morph's), or the table's choice now for a plan
// made for another backend or by hand.
MorphFamily bound_morph_family(const MorphPlan& plan, const ImageShape& shape);

const char* name_of(LinearFamily f);  // "cuda.fft", ...

// The names a plan gives kernels and a launch records (launch_record.hpp), one definition for both: the
// direct forms ("cuda.direct_regs k=3 rx=8"; rx 0: none), the FFT's tiling, and the families of one form.
struct FftTiling;
KernelChoice direct_form_name(const char* family, int k, int rx);
KernelChoice fft_name(const FftTiling& t);
KernelChoice family_name(LinearFamily f, const LinearPlan& p);  // tensor, separable_fused, runtime_direct, linear_direct
const char* name_of(MorphFamily f);

} // namespace apron::cuda
