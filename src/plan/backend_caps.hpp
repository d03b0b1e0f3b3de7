#pragma once
// What the planner asks of a backend, and nothing more: which of the optional linear paths (FFT, tensor
// cores) it can run for a plan on an image, whether its fast rectangle morphology takes an element, and
// which kernel it would run for each planned step. Each backend implements it in its own folder
// (src/cpu/capabilities.cpp, src/cuda/capabilities.cpp); the run layer (src/run/backends.cpp) hands the
// chosen backend's to make_plan. So the planner never calls into src/cpu/ or src/cuda/, and the plan
// records what will run (`apron plan` prints it).
#include <string>

#include "plan/plan.hpp"

namespace apron {

class BackendCaps {
public:
    virtual ~BackendCaps() = default;
    virtual Backend backend() const = 0;
    // The key of the calibration table for this backend (CUDA: compute capability x 10); 0: any.
    virtual int cost_arch() const { return 0; }
    // The device the calibration table should have been measured on ("NVIDIA H200"); "": any of cost_arch.
    virtual std::string cost_device() const { return ""; }

    // Why this backend cannot run the FFT / tensor-core path for `plan` on an image of `shape` ("" when it
    // can). Direct, separable and low-rank run on every backend.
    virtual std::string fft_unavailable(const LinearPlan& plan, const ImageShape& shape) const = 0;
    virtual std::string tensor_unavailable(const LinearPlan& plan, const ImageShape& shape) const = 0;
    // The rows of the FFT path's transforms for `plan` on an image of `shape` (0: no FFT here).
    virtual int fft_tile_rows(const LinearPlan&, const ImageShape&) const { return 0; }
    // Whether the fast rectangle kernel takes this element (a full rectangle); false: the planner plans the
    // direct form, so the plan says what runs.
    virtual bool morph_rect_supported(const MorphPlan& plan, const ImageShape& shape) const = 0;

    // The kernel this backend runs for a step whose algorithm the planner has set.
    virtual KernelChoice linear_kernel(const LinearPlan& plan, const ImageShape& shape) const = 0;
    virtual KernelChoice morph_kernel(const MorphPlan& plan, const ImageShape& shape) const = 0;
    virtual KernelChoice combine_kernel(const CombinePlan& plan, const ImageShape& shape) const = 0;
    virtual KernelChoice rank_kernel(const RankPlan& plan, const ImageShape& shape) const = 0;
};

// Each backend's capabilities (one object each, for the program's life). Defined by the backends;
// cuda_caps() without the CUDA toolkit by src/run/no_cuda.cpp (every optional path unavailable).
const BackendCaps& reference_caps();  // src/plan/backend_caps.cpp: every sum direct, nothing optional
const BackendCaps& cpu_caps();        // src/cpu/capabilities.cpp
const BackendCaps& cuda_caps();       // src/cuda/capabilities.cpp

// The tensor-core path's conditions on the plan alone (CUDA's IMMA kernel: u8 image, weights in -128..127,
// an f32 accumulator, masks up to 31x31), "" when they hold; shared by every CUDA capability object.
std::string tensor_plan_unavailable(const LinearPlan& plan, const ImageShape& shape);

} // namespace apron
