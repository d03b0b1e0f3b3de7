// The combine step (gradient, top-hat, black-hat, unsharp's sum) on every SIMD target against the
// reference executor, and the intermediates' block cache the CPU executor allocates from.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <iterator>
#include <memory>
#include <string>

#include "cpu/host_blocks.hpp"
#include "plan/plan.hpp"
#include "test_support.hpp"

namespace apron {
namespace {

ConstImageView cv(const Image& i) { return i.view(); }

// Same-type integer images with integer coefficients take the SIMD row kernel: every target, widths that
// leave every tail length, saturation at both ends, and b == 0 (one input).
TEST(CpuCombine, EverySimdTargetMatchesReference) {
    auto reference = make_reference_executor();
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        auto fast = make_cpu_executor(2);
        const std::string name = hwy::TargetName(target);
        int seed = 0;
        for (PixelType t : {PixelType::u8, PixelType::u16})
            for (int width : {1, 7, 15, 16, 17, 33, 64, 65, 127})
                for (int channels : {1, 3, 4}) {
                    const Image a = test::random_image(width, 5, channels, t, 100 + seed),
                                b = test::random_image(width, 5, channels, t, 200 + seed);
                    ++seed;
                    for (CombineStep s : {CombineStep{1, -1, 0}, CombineStep{-1, 1, 0}, CombineStep{2, -1, 0},
                                          CombineStep{1, 1, 0}, CombineStep{-2, 0, 300}, CombineStep{16384, -16384, 16777216},
                                          CombineStep{3, -2, -7}, CombineStep{1, 0, 0}}) {
                        const CombinePlan p{s, t, t, t};
                        Image want(width, 5, channels, t), got(width, 5, channels, t);
                        const ConstImageView bv = s.b != 0 ? b.view() : ConstImageView{};
                        reference->combine(p, a.view(), bv, want.view());
                        fast->combine(p, a.view(), bv, got.view());
                        ASSERT_TRUE(test::identical(cv(want), cv(got)))
                            << name << " " << to_string(t) << " width " << width << "x" << channels << " combine "
                            << s.a << " " << s.b << " " << s.c;
                    }
                }
    }
    hwy::SetSupportedTargetsForTest(0);
}

// Other coefficients and types take the double form in SIMD lanes: every target, every type triple, ties
// (1.5 times an odd sample), NaN, infinities and values past the output's range.
TEST(CpuCombine, DoubleFormOnEverySimdTargetMatchesReference) {
    auto reference = make_reference_executor();
    const PixelType types[] = {PixelType::u8, PixelType::u16, PixelType::f32};
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        auto fast = make_cpu_executor(2);
        const std::string name = hwy::TargetName(target);
        int seed = 0;
        for (PixelType ta : types)
            for (PixelType tb : types)
                for (PixelType tout : types)
                    for (int width : {1, 9, 37}) {
                        Image a = test::random_image(width, 3, 3, ta, 300 + seed), b = test::random_image(width, 3, 3, tb, 400 + seed);
                        ++seed;
                        if (ta == PixelType::f32) {  // the specials, at the start of a row and inside the vectors
                            float* r = a.view().row<float>(1);
                            const float specials[] = {std::nanf(""), INFINITY, -INFINITY, 1e30f, -1e30f, 65535.5f, 254.5f, 0.5f, -0.0f};
                            for (std::size_t k = 0; k < std::size(specials) && k < std::size_t(width) * 3; ++k) r[k] = specials[k];
                        }
                        for (CombineStep s : {CombineStep{1.5, -0.5, 0}, CombineStep{1.5, 0.25, 3.5}, CombineStep{-0.5, 0, 0},
                                              CombineStep{1.0000001, -1, 0}, CombineStep{2.5, -1.5, 0.5}, CombineStep{0.1, 0.2, 0.3}}) {
                            const CombinePlan p{s, ta, tb, tout};
                            Image want(width, 3, 3, tout), got(width, 3, 3, tout);
                            const ConstImageView bv = s.b != 0 ? b.view() : ConstImageView{};
                            reference->combine(p, a.view(), bv, want.view());
                            fast->combine(p, a.view(), bv, got.view());
                            // Which NaN an f32 result holds is not part of it (its sign and payload follow the
                            // operand order of each instruction set); every other bit is.
                            ASSERT_TRUE(test::same_samples(cv(want), cv(got)))
                                << name << " " << to_string(ta) << "," << to_string(tb) << " -> " << to_string(tout)
                                << " width " << width << " combine " << s.a << " " << s.b << " " << s.c;
                        }
                    }
    }
    hwy::SetSupportedTargetsForTest(0);
}

// A freed block comes back to the next request of its size; small ones and those past the limit do not stay.
TEST(CpuCombine, HostBlocksAreReused) {
    cpu::release_host_blocks();
    const std::size_t size = std::size_t(3) << 20;
    void* first = nullptr;
    {
        std::shared_ptr<std::byte> b = cpu::take_host_block(size);
        first = b.get();
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0u);
    }
    EXPECT_EQ(cpu::host_blocks_kept(), size);
    {
        std::shared_ptr<std::byte> again = cpu::take_host_block(size);
        EXPECT_EQ(again.get(), first);
        EXPECT_EQ(cpu::host_blocks_kept(), 0u);
        std::shared_ptr<std::byte> other = cpu::take_host_block(size);  // none left of that size: a new one
        EXPECT_NE(other.get(), first);
    }
    EXPECT_EQ(cpu::host_blocks_kept(), 2 * size);
    { std::shared_ptr<std::byte> small = cpu::take_host_block(1000); }
    EXPECT_EQ(cpu::host_blocks_kept(), 2 * size);
    EXPECT_LE(cpu::host_blocks_kept(), cpu::host_block_cache_limit());
    cpu::release_host_blocks();
    EXPECT_EQ(cpu::host_blocks_kept(), 0u);
}

} // namespace
} // namespace apron
