// The CUDA backend's capabilities (plan/backend_caps.hpp): the FFT where cuFFT's tiling keeps the plan
// exact, the tensor cores for byte masks, the rectangle kernel up to 64x64, and the kernel of every step
// from the dispatch table for the current device's architecture.
#include "cuda/dispatch_table.hpp"
#include "cuda/fft_support.hpp"
#include "cuda/morph_rect.hpp"
#include "cuda/rank_filter.hpp"
#include "plan/backend_caps.hpp"

namespace apron {
namespace {

class CudaCaps final : public BackendCaps {
public:
    Backend backend() const override { return Backend::cuda; }
    int cost_arch() const override { return cuda_device_arch(); }
    std::string cost_device() const override { return cuda_device_name(); }

    int fft_tile_rows(const LinearPlan& p, const ImageShape& shape) const override {
        return cuda::choose_fft_tiling(p, shape).ny;
    }
    std::string fft_unavailable(const LinearPlan& p, const ImageShape& shape) const override {
        if (cuda_fft_supports(p, shape)) return "";
        return p.exact ? "the double transform's error bound could reach 1/4: the exact sum would not survive"
                       : "no transform size serves this mask";
    }
    std::string tensor_unavailable(const LinearPlan& p, const ImageShape& shape) const override {
        if (overrides().imma_off) return "APRON_IMMA=0";
        return tensor_plan_unavailable(p, shape);
    }
    bool morph_rect_supported(const MorphPlan& p, const ImageShape&) const override {
        return cuda::morph_rect_supports(p);
    }

    KernelChoice linear_kernel(const LinearPlan& p, const ImageShape& shape) const override {
        return cuda::choose_linear(p, shape, cuda_device_arch());
    }
    KernelChoice morph_kernel(const MorphPlan& p, const ImageShape& shape) const override {
        return cuda::choose_morph(p, shape, cuda_device_arch());
    }
    KernelChoice combine_kernel(const CombinePlan& p, const ImageShape& shape) const override {
        return cuda::choose_combine(p, shape);
    }
    KernelChoice rank_kernel(const RankPlan& p, const ImageShape& shape) const override { return cuda::choose_rank(p, shape); }
};

} // namespace

const BackendCaps& cuda_caps() {
    static const CudaCaps caps;
    return caps;
}

} // namespace apron
