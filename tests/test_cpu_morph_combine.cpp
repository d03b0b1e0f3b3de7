// The combine step fused into the last morphology pass of gradient, top-hat and black-hat (Executor::
// morph_combine; on the CPU the one-pass small-rectangle kernel stores the saturated difference with the
// other image instead of the extremum), against the reference executor bit for bit: u8 / u16 (and f32,
// which keeps the separate combine), 1-4 channels, odd sizes, one pixel, elements larger than the image,
// every border and the ignored outside, packed rows at every offset, every SIMD target, thread counts 1, 2,
// 3 and 7; and that the fusion runs where it applies and is refused where it does not.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

namespace apron {
namespace {

constexpr const char* kOps[] = {"tophat", "blackhat", "gradient"};

// "tophat:se=rect:5x3,border=constant,value=9"; border < 0: ignore.
std::string spec(const char* op, int w, int h, int border) {
    std::string s = std::string(op) + ":se=rect:" + std::to_string(w) + "x" + std::to_string(h);
    if (border >= 0) {
        s += std::string(",border=") + to_string(test::all_borders[border]);
        if (test::all_borders[border] == BorderMode::constant) s += ",value=200";
    }
    return s;
}

std::string describe(const std::string& s, const Image& in, int threads) {
    return s + " " + to_string(in.type()) + " " + std::to_string(in.width()) + "x" + std::to_string(in.height()) + "x" +
           std::to_string(in.channels()) + " threads " + std::to_string(threads);
}

// The pipeline on the CPU backend (input and output views as given) against the reference on a plain copy.
void check(const std::string& s, ConstImageView in, ImageView out, int threads, const std::string& what) {
    const Pipeline p({s});
    const Image want = p.run(in, {.backend = Backend::reference});
    p.run(in, out, {.backend = Backend::cpu, .threads = threads});
    EXPECT_TRUE(test::same_samples(want.view(), ConstImageView(out)))
        << what << ": differs by " << test::max_abs_diff(want.view(), ConstImageView(out));
}

void check(const std::string& s, const Image& in, int threads) {
    Image got(in.shape());
    check(s, in.view(), got.view(), threads, describe(s, in, threads));
}

// Labels of the steps a CPU run timed.
std::vector<std::string> timed_steps(const std::string& s, const Image& in, std::optional<PixelType> out_type = {}) {
    std::vector<StageTiming> timings;
    Pipeline({s}).run(in, {.backend = Backend::cpu, .out_type = out_type, .timings = &timings});
    std::vector<std::string> names;
    for (const StageTiming& t : timings) names.push_back(t.stage);
    return names;
}

bool fused(const std::vector<std::string>& steps) {
    for (const std::string& n : steps)
        if (n.find(" + combine") != std::string::npos) return true;
    return false;
}

} // namespace

// u8 and u16 rectangles up to 8x8 end in one pass (one timing for the last erosion or dilation and the
// combine); f32, larger elements, other output types and non-rectangles keep the separate combine.
TEST(CpuMorphCombine, FusedWhereItApplies) {
    for (PixelType t : {PixelType::u8, PixelType::u16})
        for (const char* op : kOps) {
            const Image in = test::random_image(40, 9, 3, t, 1);
            const std::vector<std::string> steps = timed_steps(spec(op, 5, 5, 2), in);
            EXPECT_TRUE(fused(steps)) << op << " " << to_string(t);
            EXPECT_EQ(steps.size(), 2u) << op;  // three steps, the last two in one
            EXPECT_TRUE(fused(timed_steps(spec(op, 3, 8, -1), in))) << op;
            EXPECT_FALSE(fused(timed_steps(spec(op, 9, 9, 2), in))) << op << " 9x9";
            EXPECT_FALSE(fused(timed_steps(std::string(op) + ":se=cross:5x5", in))) << op << " cross";
            EXPECT_FALSE(fused(timed_steps(spec(op, 5, 5, 2), in, PixelType::f32))) << op << " to f32";
        }
    for (const char* op : kOps)
        EXPECT_FALSE(fused(timed_steps(spec(op, 5, 5, 2), test::random_image(40, 9, 1, PixelType::f32, 2)))) << op;
}

// The executor itself: both directions (the result as A or as B, either sign), and refusals.
TEST(CpuMorphCombine, ExecutorFusesOnlySaturatedDifferences) {
    auto fast = make_cpu_executor(3);
    auto reference = make_reference_executor();
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int size : {3, 8, 9}) {
            const Image in = test::random_image(77, 15, 2, t, 10 + size), other = test::random_image(77, 15, 2, t, 20 + size);
            Step step;
            MorphStep m;
            m.element = Mask(size, size, std::vector<double>(std::size_t(size) * size, 1.0));
            m.kind = size == 8 ? MorphKind::erode : MorphKind::dilate;
            m.border = BorderMode::reflect;
            step.action = m;
            const MorphPlan mp = std::get<MorphPlan>(test::plan_step(step, in.shape(), t).what);
            Image morphed(in.shape());
            reference->morph(mp, in.view(), morphed.view());
            for (CombineStep c : {CombineStep{1, -1, 0}, CombineStep{-1, 1, 0}, CombineStep{2, -1, 0}, CombineStep{1, -1, 3},
                                  CombineStep{1, 1, 0}})
                for (bool result_is_a : {true, false}) {
                    const CombinePlan cp{c, t, t, t};
                    Image want(in.shape()), got(in.shape());
                    if (result_is_a) reference->combine(cp, morphed.view(), other.view(), want.view());
                    else reference->combine(cp, other.view(), morphed.view(), want.view());
                    const bool can = t != PixelType::f32 && size <= 8 && c.c == 0 && c.a == -c.b && (c.a == 1 || c.a == -1);
                    EXPECT_FALSE(reference->morph_combine(mp, cp, in.view(), other.view(), result_is_a, got.view()));
                    const bool done = fast->morph_combine(mp, cp, in.view(), other.view(), result_is_a, got.view());
                    const std::string what = std::string(to_string(t)) + " " + std::to_string(size) + " combine " + std::to_string(c.a) +
                                             " " + std::to_string(c.b) + " " + std::to_string(c.c) + (result_is_a ? " A" : " B");
                    EXPECT_EQ(done, can) << what;
                    if (done) EXPECT_TRUE(test::identical(want.view(), got.view())) << what;
                }
            // A combine into another type is not fused.
            if (t == PixelType::u8) {
                Image wide(in.width(), in.height(), in.channels(), PixelType::u16);
                EXPECT_FALSE(fast->morph_combine(mp, CombinePlan{CombineStep{1, -1, 0}, t, t, PixelType::u16}, in.view(),
                                                 other.view(), false, wide.view()));
            }
        }
}

// Every element up to 8x8 (square ones take the fused sweep, others the ring with a vertical pass per pair),
// 1-4 channels, every border and the ignored outside, odd sizes, u8 / u16 / f32.
TEST(CpuMorphCombine, EveryRectangleBorderAndChannelCount) {
    int k = 0;
    for (int mw = 1; mw <= 8; ++mw)
        for (int mh = 1; mh <= 8; ++mh) {
            const PixelType t = k % 5 == 4 ? PixelType::f32 : k % 2 ? PixelType::u16 : PixelType::u8;
            const int widths[] = {211, 67, 5, 130};
            const Image in = test::random_image(widths[k % 4], 9 + k % 6, 1 + k % 4, t, 300 + k);
            check(spec(kOps[k % 3], mw, mh, k % 6 - 1), in, 1 + k % 3);
            ++k;
        }
    for (const char* op : kOps)
        for (PixelType t : {PixelType::u8, PixelType::u16})
            for (int c = 1; c <= 4; ++c)
                for (int b = -1; b < 5; ++b)
                    for (int size : {3, 5}) {
                        const Image in = test::random_image(97 + 2 * c, 11 + c % 2, c, t, 400 + k++);
                        check(spec(op, size, size, b), in, 2);
                    }
}

// One pixel, one row, one column, and elements larger than the image.
TEST(CpuMorphCombine, TinyImagesAndLargeElements) {
    int k = 0;
    for (auto [w, h] : {std::pair{1, 1}, std::pair{1, 7}, std::pair{9, 1}, std::pair{3, 2}, std::pair{6, 6}, std::pair{2, 9}})
        for (PixelType t : {PixelType::u8, PixelType::u16})
            for (const char* op : kOps)
                for (int b = -1; b < 5; ++b) {
                    const Image in = test::random_image(w, h, 1 + k % 4, t, 40 + k);
                    check(spec(op, 8 - k % 3, 7 + k % 2, b), in, 1 + k % 2);
                    ++k;
                }
}

// Every SIMD level compiled in.
TEST(CpuMorphCombine, EverySimdTargetMatchesReference) {
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        int k = 0;
        for (PixelType t : {PixelType::u8, PixelType::u16})
            for (int c : {1, 3, 4})
                for (int size : {2, 5, 8})
                    for (const char* op : kOps) {
                        const Image in = test::random_image(131, 12 + k % 2, c, t, 70 + k);
                        SCOPED_TRACE(hwy::TargetName(target));
                        check(spec(op, size, size, k % 3 ? 3 : -1), in, 2);  // mirror or ignore
                        check(spec(op, size, 9 - size, k % 6 - 1), in, 2);
                        ++k;
                    }
    }
    hwy::SetSupportedTargetsForTest(0);
}

// The same bits whatever the thread count (tasks cut into bands and column strips differently).
TEST(CpuMorphCombine, ThreadCounts) {
    const Image u8 = test::random_image(701, 97, 3, PixelType::u8, 4);
    const Image u16 = test::random_image(3000, 23, 4, PixelType::u16, 5);
    for (const Image* in : {&u8, &u16})
        for (const char* op : kOps)
            for (int threads : {1, 2, 3, 7}) {
                check(spec(op, 5, 5, 4), *in, threads);
                check(spec(op, 3, 7, -1), *in, threads);
            }
}

// Rows packed as NumPy packs them (pitch = the row's bytes, each row at another offset from a vector
// boundary), input and output, starting on and off a vector boundary; and the input a view inside a larger
// image (the other operand of top-hat and black-hat then has another pitch than the output).
TEST(CpuMorphCombine, PackedRowsAndOffsets) {
    int k = 0;
    for (PixelType t : {PixelType::u8, PixelType::u16})
        for (int channels : {1, 3, 4})
            for (int width : {37, 130, 257})
                for (const char* op : kOps)
                    for (std::size_t start : {std::size_t(0), std::size_t(1), std::size_t(8)}) {
                        const Image in = test::random_image(width, 19, channels, t, 700 + k++);
                        const std::size_t sample = t == PixelType::u8 ? 1 : 2, pitch = in.shape().row_bytes();
                        std::vector<std::byte> in_store(pitch * 19 + 256), out_store(pitch * 19 + 256);
                        auto at = [&](std::vector<std::byte>& v, std::size_t extra) {
                            return v.data() + (64 - reinterpret_cast<std::uintptr_t>(v.data()) % 64) % 64 + extra;
                        };
                        const ImageView packed_in{at(in_store, start * sample), in.shape(), pitch, Memory::host};
                        for (int y = 0; y < 19; ++y) std::memcpy(packed_in.row_bytes(y), in.view().row_bytes(y), pitch);
                        const ImageView packed_out{at(out_store, (start + 3) * sample), in.shape(), pitch, Memory::host};
                        const std::string s = spec(op, k % 2 ? 5 : 4, k % 3 ? 5 : 3, k % 6 - 1);
                        check(s, ConstImageView(packed_in), packed_out, 2, describe(s, in, 2) + " start " + std::to_string(start));
                        // The input inside a larger image, into a plain output.
                        Image frame(width + 3, 21, channels, t);
                        const ImageView inner = frame.view().roi(2, 1, width, 19);
                        for (int y = 0; y < 19; ++y) std::memcpy(inner.row_bytes(y), in.view().row_bytes(y), pitch);
                        Image plain(in.shape());
                        check(s, ConstImageView(inner), plain.view(), 3, describe(s, in, 3) + " framed");
                    }
}

} // namespace apron
