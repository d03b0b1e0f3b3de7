// The CPU backend's capabilities (plan/backend_caps.hpp): the FFT where this build has FFTW and its tile
// keeps an exact plan exact, no tensor cores, the van Herk rectangle for any full rectangle. Kernel names
// follow the fast executor's choice (fast_linear.cpp, fast_morph.cpp): `cpu.fft` (a tile of an f32 image
// holding a NaN or an infinity is summed directly there, a fact of the pixels the plan cannot know), `cpu.separable`
// (row then column passes of the Highway kernels), `cpu.direct` (`lanes=int16` / `lanes=q15`: u8 in 16-bit lanes, exact or fixed point under
// a proven bound, fast_linear_8bit.cpp), `cpu.morph_rect`, `cpu.morph_runs` (the
// element's runs of cells with a min/max table per run length), `cpu.combine`.
#include <cstdlib>

#include "cpu/fast_executor.hpp"
#include "cpu/fft_linear.hpp"
#include "plan/backend_caps.hpp"

namespace apron {
namespace {

class CpuCaps final : public BackendCaps {
public:
    Backend backend() const override { return Backend::cpu; }

    int fft_tile_rows(const LinearPlan& p, const ImageShape& shape) const override {
        return cpu::choose_fft_tile(p.step.mask.width, p.step.mask.height, shape.width, shape.height).ny;
    }
    std::string fft_unavailable(const LinearPlan& p, const ImageShape& shape) const override {
        if (!cpu::fft_available()) return "this build has no FFTW";
        const Mask& m = p.step.mask;
        const cpu::FftTile tile = cpu::choose_fft_tile(m.width, m.height, shape.width, shape.height);
        if (!tile.nx) return "the mask is wider than the largest transform";
        if (p.exact && !(cpu::fft_exact_error_bound(p, tile) < 0.25))
            return "the double transform's error bound could reach 1/4: the exact sum would not survive";
        return "";
    }
    std::string tensor_unavailable(const LinearPlan&, const ImageShape&) const override {
        return "tensor cores are a CUDA path";
    }
    bool morph_rect_supported(const MorphPlan&, const ImageShape&) const override { return true; }

    KernelChoice linear_kernel(const LinearPlan& p, const ImageShape& shape) const override {
        if (p.algorithm == LinearAlgorithm::fft) {
            const cpu::FftTile tile = cpu::choose_fft_tile(p.step.mask.width, p.step.mask.height, shape.width, shape.height);
            return {"cpu.fft", "tile=" + std::to_string(tile.nx) + "x" + std::to_string(tile.ny)};
        }
        const bool separable = p.algorithm == LinearAlgorithm::separable && (p.exact ? bool(p.integer_separable) : bool(p.separable));
        // u8 in 16-bit lanes where it applies (fast_linear_8bit.cpp): exact "int16" sums or "q15" fixed point.
        const char* lanes = p.algorithm == LinearAlgorithm::fft ? nullptr : cpu::arithmetic_8bit(p);
        return {separable ? "cpu.separable" : "cpu.direct", lanes ? std::string("lanes=") + lanes : ""};
    }
    KernelChoice morph_kernel(const MorphPlan& p, const ImageShape&) const override {
        return {p.algorithm == MorphAlgorithm::separable_rect ? "cpu.morph_rect" : "cpu.morph_runs", ""};
    }
    KernelChoice combine_kernel(const CombinePlan&, const ImageShape&) const override { return {"cpu.combine", ""}; }
    KernelChoice rank_kernel(const RankPlan& p, const ImageShape& shape) const override { return cpu::rank_kernel_for(p, shape); }
};

} // namespace

const BackendCaps& cpu_caps() {
    static const CpuCaps caps;
    return caps;
}

} // namespace apron
