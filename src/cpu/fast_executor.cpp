// The fast CPU executor: all cores (a persistent pool), Highway SIMD kernels, and the same bits as the
// reference wherever the reference is exact (integer paths, morphology, combine).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "apron/errors.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "cpu/fast_executor.hpp"
#include "cpu/host_blocks.hpp"
#include "cpu/simd_combine.hpp"

namespace apron {
namespace cpu {

namespace {

// Whether a*A + b*B + c is an exact integer for every integer sample, and fits int32 with room: integer
// coefficients (gradient, top-hat and black-hat are 1 and -1, c 0), at most 2^14 in size, c at most 2^24.
bool integer_combine(const CombineStep& s) {
    auto small = [](double v, double limit) { return v == std::nearbyint(v) && std::fabs(v) <= limit; };
    return small(s.a, 16384) && small(s.b, 16384) && small(s.c, 16777216);
}

// The integer form: the sum is exact in int32, and clamping it to the output's range is what store_pixel does
// to an integer value (rint of an integer is itself). Plain int loops the compiler vectorises: the double
// form's conversion and rint per sample cost 3 ns a sample, ten times the opening it follows.
template <class A, class B, class Out>
void combine_integer_row(const A* pa, const B* pb, Out* po, std::size_t n, int a, int b, int c) {
    constexpr int top = int(PixelTraits<Out>::max);
    if (pb) {
        for (std::size_t k = 0; k < n; ++k) po[k] = Out(std::clamp(a * int(pa[k]) + b * int(pb[k]) + c, 0, top));
    } else {
        for (std::size_t k = 0; k < n; ++k) po[k] = Out(std::clamp(a * int(pa[k]) + c, 0, top));
    }
}

// The forms of NaN- and nodata-aware linear filters (fill, valid, ratio, mark): the shared per-sample rule
// (core/missing_sample.hpp) in double SIMD lanes, bands of rows over the pool (memory-bound).
void run_missing_form(ThreadPool& pool, const CombinePlan& plan, ConstImageView a, ConstImageView b, ImageView out) {
    const int height = out.height(), bands = std::min(height, 4 * pool.size());
    const std::size_t n = std::size_t(out.width()) * std::size_t(out.channels());
    const CombineStep s = plan.step;
    pool.run(bands, [&](int band, int) {
        for (int y = int((long long)height * band / bands); y < int((long long)height * (band + 1) / bands); ++y)
            simd::combine_missing(plan.a_type, plan.b_type, plan.out, a.row_bytes(y), s.b != 0 ? b.row_bytes(y) : nullptr,
                                  out.row_bytes(y), n, s);
    });
}

} // namespace

// Pixel-wise a*A + b*B + c in double, in the reference's order of operations (in int32 where that is exact:
// integer samples and coefficients), in SIMD lanes; memory-bound, so bands of rows.
void run_combine(ThreadPool& pool, const CombinePlan& plan, ConstImageView a, ConstImageView b, ImageView out) {
    if (out.empty()) return;
    if (plan.step.form != CombineForm::affine) return run_missing_form(pool, plan, a, b, out);
    const int height = out.height(), bands = std::min(height, 4 * pool.size());
    const std::size_t n = std::size_t(out.width()) * std::size_t(out.channels());
    const CombineStep s = plan.step;
    const bool exact_int = integer_combine(s);
    with_type(plan.a_type, [&]<class A>() {
        with_type(plan.b_type, [&]<class B>() {
            with_type(plan.out, [&]<class Out>() {
                constexpr bool integers =
                    PixelTraits<A>::integer && PixelTraits<B>::integer && PixelTraits<Out>::integer;
                pool.run(bands, [&](int band, int) {
                    for (int y = int((long long)height * band / bands); y < int((long long)height * (band + 1) / bands); ++y) {
                        const A* pa = a.row<A>(y);
                        const B* pb = s.b != 0 ? b.row<B>(y) : nullptr;
                        Out* po = out.row<Out>(y);
                        if constexpr (integers && std::is_same_v<A, Out> && std::is_same_v<B, Out>) {
                            if (exact_int) {
                                simd::combine_integer(plan.out, pa, pb, po, n, int(s.a), int(s.b), int(s.c));
                                continue;
                            }
                        }
                        if constexpr (integers) {
                            if (exact_int) {
                                combine_integer_row(pa, pb, po, n, int(s.a), int(s.b), int(s.c));
                                continue;
                            }
                        }
                        simd::combine_double(plan.a_type, plan.b_type, plan.out, pa, pb, po, n, s.a, s.b, s.c);
                    }
                });
            });
        });
    });
}

namespace {

// A fresh output (the CLI's result, a pipeline's intermediate) is first touched by the step that writes
// it, and with 4 KiB pages that first touch costs more than the filter: 12288 faults for a 4096^2
// RGB u8 image, 123 ms of a dilate 9x9 step whose writes take 36 ms (2 threads of the EPYC VM, where
// transparent huge pages are `madvise` only). Advising huge pages for the output's whole 2 MiB pages
// first cuts the faults 512-fold (the same step: 45 ms). A hint only: memory already present, or
// memory the kernel will not back with huge pages, is left as it is.
constexpr std::size_t huge_page = std::size_t(2) << 20;

void advise_huge_pages(ImageView out) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (out.empty() || out.memory != Memory::host) return;
    const auto begin = reinterpret_cast<std::uintptr_t>(out.row_bytes(0));
    const std::uintptr_t end = begin + out.pitch * std::size_t(out.height() - 1) + out.shape.row_bytes();
    const std::uintptr_t first = (begin + huge_page - 1) / huge_page * huge_page, last = end / huge_page * huge_page;
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
    (void)out;
#endif
}

void require_host(const char* what, ConstImageView v) {
    if (!v.empty() && v.memory != Memory::host) fail(what, "the cpu backend needs images in host memory");
}

class FastCpuExecutor final : public Executor {
public:
    explicit FastCpuExecutor(int threads) : lease_(borrow_pool(threads)), pool_(*lease_) {}

    void linear(const LinearPlan& plan, ConstImageView in, ImageView out) override {
        require_host("linear input", in);
        require_host("linear output", apron::as_const(out));
        advise_huge_pages(out);
        run_linear(pool_, plan, in, out);
    }
    void morph(const MorphPlan& plan, ConstImageView in, ImageView out) override {
        require_host("morphology input", in);
        require_host("morphology output", apron::as_const(out));
        advise_huge_pages(out);
        run_morph(pool_, plan, in, out);
    }
    void combine(const CombinePlan& plan, ConstImageView a, ConstImageView b, ImageView out) override {
        require_host("combine input", a);
        require_host("combine input", b);
        require_host("combine output", apron::as_const(out));
        advise_huge_pages(out);
        run_combine(pool_, plan, a, b, out);
    }

    void rank(const RankPlan& plan, ConstImageView in, ImageView out) override {
        require_host("rank input", in);
        require_host("rank output", apron::as_const(out));
        advise_huge_pages(out);
        run_rank(pool_, plan, in, out);
    }

    // Only the saturated differences of same-type u8 / u16 images (coefficients 1 and -1, no constant: the
    // derived morphology ops), which the one-pass small-rectangle kernel applies before its stores.
    bool morph_combine(const MorphPlan& m, const CombinePlan& c, ConstImageView in, ConstImageView other, bool result_is_a,
                       ImageView out) override {
        if (c.step.form != CombineForm::affine || m.type == PixelType::f32 || c.a_type != m.type || c.b_type != m.type ||
            c.out != m.type || c.step.c != 0)
            return false;
        const double k_result = result_is_a ? c.step.a : c.step.b, k_other = result_is_a ? c.step.b : c.step.a;
        if (!((k_result == 1 && k_other == -1) || (k_result == -1 && k_other == 1))) return false;
        require_host("morphology input", in);
        require_host("combine input", other);
        require_host("combine output", apron::as_const(out));
        advise_huge_pages(out);
        return run_morph_combine(pool_, m, in, other, k_result == 1, out);
    }

    // Intermediates from the process's cache of freed blocks: already backed by memory after the first call.
    // A volume's rows are packed (pitch = row bytes), so that its z view, a row per plane, is one image and a
    // step along z one call (run/plan_runner.hpp).
    Buffer allocate(const ImageShape& shape) override {
        validate_shape(shape, "image");
        const std::size_t pitch = shape.depth > 1 ? shape.row_bytes() : (shape.row_bytes() + 63) / 64 * 64;
        std::shared_ptr<std::byte> block = take_host_block(pitch * std::size_t(shape.rows()));
        return Buffer{ImageView{block.get(), shape, pitch, Memory::host}, std::move(block)};
    }

private:
    std::shared_ptr<ThreadPool> lease_;  // the process's idle pool of this size, given back when this executor ends
    ThreadPool& pool_;
};

} // namespace
} // namespace cpu

std::unique_ptr<Executor> make_cpu_executor(int threads) { return std::make_unique<cpu::FastCpuExecutor>(threads); }

} // namespace apron
