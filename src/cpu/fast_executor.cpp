// The fast CPU executor: all cores (a persistent pool), Highway SIMD kernels, and the same bits as the
// reference wherever the reference is exact (integer paths, morphology, combine).
#include <algorithm>
#include <memory>

#include "apron/errors.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "cpu/fast_executor.hpp"

namespace apron {
namespace cpu {

// Pixel-wise a*A + b*B + c in double, in the reference's order of operations; memory-bound, so plain
// loops over bands of rows.
void run_combine(ThreadPool& pool, const CombinePlan& plan, ConstImageView a, ConstImageView b, ImageView out) {
    if (out.empty()) return;
    const int height = out.height(), bands = std::min(height, 4 * pool.size());
    const std::size_t n = std::size_t(out.width()) * std::size_t(out.channels());
    const CombineStep s = plan.step;
    with_type(plan.a_type, [&]<class A>() {
        with_type(plan.b_type, [&]<class B>() {
            with_type(plan.out, [&]<class Out>() {
                pool.run(bands, [&](int band, int) {
                    for (int y = int((long long)height * band / bands); y < int((long long)height * (band + 1) / bands); ++y) {
                        const A* pa = a.row<A>(y);
                        const B* pb = s.b != 0 ? b.row<B>(y) : nullptr;
                        Out* po = out.row<Out>(y);
                        for (std::size_t k = 0; k < n; ++k) {
                            double v = s.a * double(pa[k]);
                            if (pb) v += s.b * double(pb[k]);
                            po[k] = store_pixel<Out>(v + s.c);
                        }
                    }
                });
            });
        });
    });
}

namespace {

void require_host(const char* what, ConstImageView v) {
    if (!v.empty() && v.memory != Memory::host) fail(what, "the cpu backend needs images in host memory");
}

class FastCpuExecutor final : public Executor {
public:
    explicit FastCpuExecutor(int threads) : pool_(threads) {}

    void linear(const LinearPlan& plan, ConstImageView in, ImageView out) override {
        require_host("linear input", in);
        require_host("linear output", apron::as_const(out));
        run_linear(pool_, plan, in, out);
    }
    void morph(const MorphPlan& plan, ConstImageView in, ImageView out) override {
        require_host("morphology input", in);
        require_host("morphology output", apron::as_const(out));
        run_morph(pool_, plan, in, out);
    }
    void combine(const CombinePlan& plan, ConstImageView a, ConstImageView b, ImageView out) override {
        require_host("combine input", a);
        require_host("combine input", b);
        require_host("combine output", apron::as_const(out));
        run_combine(pool_, plan, a, b, out);
    }

private:
    ThreadPool pool_;
};

} // namespace
} // namespace cpu

std::unique_ptr<Executor> make_cpu_executor(int threads) { return std::make_unique<cpu::FastCpuExecutor>(threads); }

} // namespace apron
