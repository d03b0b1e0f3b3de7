// The CUDA dispatch table (see dispatch_table.hpp). Measurements are on 8192^2 images, one channel, kernel
// time only, unless said otherwise; the full tables are in docs/perf-notes.md and docs/gpu-benchmark.md.
#include "cuda/dispatch_table.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <vector>

#include "apron/errors.hpp"
#include "core/dispatch.hpp"
#include "cuda/direct_dp4a.hpp"
#include "cuda/direct_imma.hpp"
#include "cuda/direct_tiled.hpp"
#include "cuda/fft_support.hpp"
#include "cuda/column_linear.hpp"
#include "cuda/direct_regs.hpp"
#include "cuda/morph_chords.hpp"
#include "cuda/morph_rect.hpp"
#include "cuda/runtime_direct_api.hpp"
#include "cuda/separable_fused.hpp"
#include "cuda/tuning.hpp"

namespace apron::cuda {
namespace {

// sm_90 (H100, H200): the policy every kernel was tuned on.
constexpr ArchPolicy sm90 = {
    90,
    "sm_90",
    // The planner's choice first (fft, tensor, separable: each runs only for plans of that algorithm), then
    // the direct kernels from the most to the least specialised:
    //  - fft: H100 f32 31x31 31.2 Gpix/s, 127x127 23.3 (H200 direct tiles 22.9 at 31x31; the baseline 0.04
    //    at 127x127);
    //  - tensor (IMMA): u8-int 3x3-9x9 ~270 Gpix/s, 15x15 193, 31x31 141 (tiles: 20.5 at 31x31);
    //  - separable_fused: f32 Gaussian sigma 1-8 at 74-39 % of the roofline, 2.4-4.9x NPP's fixed masks;
    //  - column: masks one sample wide, 2-64 taps (a volume's z steps on its z view), opt-in (APRON_COLUMN=1):
    //    the u16 Gaussian (2,2,1) 1024x1024x256 took 1.78 ms (V = 4) and 3.57 (V = 1) through it against 1.52-1.65
    //    through the run-time kernel (H200): its taps are a chain of dependent loads (docs/perf-notes.md);
    //  - direct_tiled: f32 5x5 326 Gpix/s, 31x31 22.9 (54-66 % of the roofline; 5.7x NPP at 31x31);
    //  - runtime_direct: sides up to 63 that are not odd squares, one kernel per mask (NVRTC);
    //  - linear_direct: the baseline, any mask (85x85 0.09 Gpix/s: the planner takes the FFT there).
    {LinearFamily::fft, LinearFamily::tensor, LinearFamily::separable_fused, LinearFamily::column,
     LinearFamily::direct_tiled, LinearFamily::runtime_direct, LinearFamily::linear_direct},
    // The kernels' values and their measurements: cuda/tuning.hpp.
    Sm90Tuning::regs_max_k,
    Sm90Tuning::regs_rx_float,
    Sm90Tuning::regs_rx_int_3x3,
    Sm90Tuning::tiled_rx,
};

// Architectures apron was not measured on: sm_90's order and values, untuned.
constexpr ArchPolicy fallback = [] {
    ArchPolicy p = sm90;
    p.arch = 0;
    p.name = "default";
    return p;
}();

// A view of the executor's own allocation for `shape` (rows 256-byte aligned): what the kernels' own
// `*_supports(plan, view)` see for the images apron allocates. It is never read.
ConstImageView own_buffer(const ImageShape& shape) {
    static const std::byte* aligned = reinterpret_cast<const std::byte*>(std::uintptr_t(256));
    return ConstImageView{aligned, shape, (shape.row_bytes() + 255) / 256 * 256, Memory::device};
}

// The form direct_tiled takes for a plan (direct_tiled.cu: dp4a first, then the register kernel, then the
// tiles), for the executor's own aligned buffers: the kernels' own rules (direct_dp4a_supports,
// regs::usable) asked about such a buffer.
KernelChoice direct_tiled_form(const LinearPlan& p, const ImageShape& shape, const ArchPolicy& policy) {
    const Overrides& o = overrides();
    const Mask& m = p.step.mask;
    // IDP.4A for exact u8 masks with byte weights (direct_dp4a_supports): H100 3x3 351 -> 565 Gpix/s,
    // 5x5 296 -> 416, 7x7 221 -> 366, 9x9 167 -> 281 against the float kernels (APRON_DP4A=0 in one call).
    if (!o.dp4a_off && direct_dp4a_supports(p, own_buffer(shape))) return direct_form_name("cuda.direct_dp4a", m.width, 0);
    const ConstImageView buffer = own_buffer(shape);
    // IDP.2A in fixed point for float masks on u8 (direct_dp2a_form: only where the error bound holds).
    if (const auto fixed = direct_dp2a_form(p, buffer)) return {"cuda.direct_dp2a", fixed_point_detail(m.width, *fixed)};
    const int rx = with_type(p.in, [&]<class In>() {
        return m.width == 3 ? regs::usable<3, In>(buffer) : m.width == 5 ? regs::usable<5, In>(buffer) : 0;
    });
    if (rx) return direct_form_name("cuda.direct_regs", m.width, rx);
    return direct_form_name("cuda.direct_tiled", m.width, policy.tiled_rx);
}

// Whether `family` runs this plan, and in which form.
bool try_family(LinearFamily f, const LinearPlan& p, const ImageShape& shape, const ArchPolicy& policy,
                KernelChoice* out) {
    const Overrides& o = overrides();
    switch (f) {
    case LinearFamily::fft: {
        if (p.algorithm != LinearAlgorithm::fft || !cuda_fft_supports(p, shape)) return false;
        *out = fft_name(choose_fft_tiling(p, shape));
        return true;
    }
    case LinearFamily::tensor:
        if (p.algorithm != LinearAlgorithm::tensor || o.imma_off || !direct_imma_supports(p, own_buffer(shape)))
            return false;
        *out = family_name(f, p);
        return true;
    case LinearFamily::separable_fused:
        if (p.algorithm != LinearAlgorithm::separable || !separable_fused_supports(p)) return false;
        *out = family_name(f, p);
        return true;
    case LinearFamily::column:
        if (!o.column_on || !column_linear_supports(p)) return false;
        *out = family_name(f, p);
        return true;
    case LinearFamily::direct_tiled:
        if (!direct_tiled_supports(p) || zero_taps_matter(p)) return false;
        *out = direct_tiled_form(p, shape, policy);
        return true;
    case LinearFamily::runtime_direct: {
        if (o.runtime_off) return false;
        // It asks the current device for its shared memory; planning on a machine without one (apron plan
        // --backend cuda) names the family that needs no device instead.
        bool takes = false;
        try {
            takes = runtime_direct_supports(p);
        } catch (const Error&) {
            takes = false;
        }
        if (!takes) return false;
        *out = family_name(f, p);
        return true;
    }
    case LinearFamily::linear_direct: *out = family_name(f, p); return true;
    }
    return false;
}

} // namespace

bool zero_taps_matter(const LinearPlan& p) {
    if (p.in != PixelType::f32 || p.exact) return false;
    for (double w : p.step.mask.weights)
        if (float(w) == 0.0f) return true;
    return false;
}

const ArchPolicy& policy_for(int arch) { return arch >= 90 ? sm90 : fallback; }

// The family that runs the plan, bound: the executor calls its launcher by the index (bound_linear_family).
KernelChoice choose_linear(const LinearPlan& p, const ImageShape& shape, int arch) {
    const ArchPolicy& policy = policy_for(arch);
    KernelChoice k;
    LinearFamily chosen = LinearFamily::linear_direct;
    for (LinearFamily f : policy.linear_order)
        if (try_family(f, p, shape, policy, &k)) {
            chosen = f;
            break;
        }
    if (chosen == LinearFamily::linear_direct) k = family_name(chosen, p);
    k.bound_backend = Backend::cuda;
    k.launcher = int(chosen);
    return k;
}

LinearFamily bound_linear_family(const LinearPlan& p, const ImageShape& shape) {
    const KernelChoice& k = p.kernel.bound_backend == Backend::cuda && p.kernel.launcher >= 0 ? p.kernel
                                                                                              : choose_linear(p, shape, cuda_device_arch());
    return k.launcher >= 0 && k.launcher < linear_family_count ? LinearFamily(k.launcher) : LinearFamily::linear_direct;
}

namespace {

// The family's name and form, bound (the executor calls its launcher by the index: bound_morph_family).
KernelChoice bound(MorphFamily f, std::string detail) { return {name_of(f), std::move(detail), Backend::cuda, int(f)}; }

} // namespace

MorphFamily bound_morph_family(const MorphPlan& p, const ImageShape& shape) {
    const KernelChoice& k = p.kernel.bound_backend == Backend::cuda && p.kernel.launcher >= 0 ? p.kernel
                                                                                              : choose_morph(p, shape, cuda_device_arch());
    return k.launcher >= 0 && k.launcher <= int(MorphFamily::morph_direct) ? MorphFamily(k.launcher) : MorphFamily::morph_direct;
}

KernelChoice choose_morph(const MorphPlan& p, const ImageShape& shape, int arch) {
    (void)arch;  // one policy so far: measured on sm_90 only
    // 1. morph_rect: any full rectangle (morph_rect_supports). Up to 64 a side the fused tiled kernel: u8
    //    3x3-31x31 at 68-21 % of the roofline, 1.9x NPP at 3x3, 10-15x CuPy; its fast interior path (u8/u16,
    //    1-4 channels, W <= 16/14/9/7, H <= 64, aligned views) ~5.5 thread-instructions per pixel against 63
    //    for the general kernel at 3x3 (H200, u8 gray rect 7x7: 930 Gpix/s). Beyond 64, two separable passes.
    if (morph_rect_supports(p)) return bound(MorphFamily::morph_rect, morph_rect_form(p, shape.channels));
    // 2. morph_chords: any flat element up to 64x64 and 128 runs as chords (Urbach-Wilkinson run tables in
    //    shared memory, morph_chords.cu); disk:7 u8 4.8 Gpix/s through morph_direct before it.
    if (p.algorithm == MorphAlgorithm::chords && morph_chords_supports(p))
        return bound(MorphFamily::morph_chords, std::string("schedule=") + name_of(chords_schedule_for(p, shape.channels)));
    // 3. morph_direct: every cell of the element per sample (disk:7 u8 4.3 Gpix/s on the H200).
    return bound(MorphFamily::morph_direct, "");
}

// H200, 8192^2 u8, Gpix/s for 1 / 3 / 4 channels, thread_loads (tables built from per-thread global loads;
// "variant 0" in the measurements) against staged_rows (raw rows staged once in shared memory by whole
// warps, column-major tables, chord runs; "variant 6"): ellipse 7x7 177/52/26 -> 207/56/50; cross 15x15
// 158/42/22 -> 185/58/40; ellipse 15x15 144/39/21 -> 175/55/38; but one channel with 6 or more distinct
// chord lengths: disk:7 134 -> 97, random 15x15 103 -> 75 (thread_loads keeps those). Colour: staged_rows
// everywhere (disk:7 30/20 -> 37/28). The schedules measured between them are gone (docs/perf-notes.md).
ChordSchedule chords_schedule_for(const MorphPlan& p, int channels) {
    if (const int v = overrides().chords_variant; v >= 0 && v < int(std::size(chord_schedules)))
        return chord_schedules[v];
    if (channels > 1) return ChordSchedule::staged_rows;
    std::vector<int> lengths;
    for (const MorphChord& c : p.chords)
        if (std::find(lengths.begin(), lengths.end(), c.length) == lengths.end()) lengths.push_back(c.length);
    return lengths.size() >= 6 ? ChordSchedule::thread_loads : ChordSchedule::staged_rows;
}

// The affine form runs combine_kernel; the forms of NaN-aware linear filters run missing_form_kernel, named
// by their form ("cuda.combine form=ratio").
KernelChoice choose_combine(const CombinePlan& plan, const ImageShape&) {
    if (plan.step.form == CombineForm::affine) return {"cuda.combine", ""};
    return {"cuda.combine", std::string("form=") + to_string(plan.step.form)};
}

const char* name_of(LinearFamily f) {
    switch (f) {
    case LinearFamily::fft: return "cuda.fft";
    case LinearFamily::tensor: return "cuda.direct_imma";
    case LinearFamily::separable_fused: return "cuda.separable_fused";
    case LinearFamily::column: return "cuda.column";
    case LinearFamily::direct_tiled: return "cuda.direct_tiled";
    case LinearFamily::runtime_direct: return "cuda.runtime_direct";
    case LinearFamily::linear_direct: return "cuda.linear_direct";
    }
    return "cuda.?";
}

const char* name_of(MorphFamily f) {
    switch (f) {
    case MorphFamily::morph_rect: return "cuda.morph_rect";
    case MorphFamily::morph_chords: return "cuda.morph_chords";
    case MorphFamily::morph_direct: return "cuda.morph_direct";
    }
    return "cuda.?";
}

KernelChoice direct_form_name(const char* family, int k, int rx) {
    return {family, "k=" + std::to_string(k) + (rx ? " rx=" + std::to_string(rx) : "")};
}

KernelChoice fft_name(const FftTiling& t) {
    return {name_of(LinearFamily::fft), "tile=" + std::to_string(t.nx) + "x" + std::to_string(t.ny) +
                                            (t.f64 ? " f64" : " f32") + " batch=" + std::to_string(t.batch_tiles)};
}

KernelChoice family_name(LinearFamily f, const LinearPlan& p) {
    switch (f) {
    case LinearFamily::tensor:
        return {name_of(f), "k=" + std::to_string(p.step.mask.width) + "x" + std::to_string(p.step.mask.height)};
    case LinearFamily::runtime_direct: return {name_of(f), overrides().rtc_integer ? "integer" : ""};
    default: return {name_of(f), ""};
    }
}

} // namespace apron::cuda
