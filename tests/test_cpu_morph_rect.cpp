// Small rectangles on the fast CPU executor (src/cpu/simd_morph_rect.cpp: one pass, a ring of horizontal
// rows, square elements fused with the vertical pass) against the reference, bit for bit: every size up
// to 8 x 8, 1-4 channels, u8 / u16 / f32, every border and the ignored outside, anchors at the corners,
// rows wide enough for the vector sweeps (with the left / right edge copies) and narrow ones, inputs and
// outputs off vector boundaries, strips, large (streamed) outputs, every SIMD target, any thread count.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "plan_support.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

constexpr PixelType kTypes[] = {PixelType::u8, PixelType::u16, PixelType::f32};

Executor& reference() { return test::reference_executor(); }
Executor& fast() { return test::fast_cpu_executor(); }

MorphPlan morph_plan(const MorphStep& s, const ImageShape& shape) { return test::kind_plan<MorphPlan>(s, shape); }

Mask rect(int w, int h, int ax = -1, int ay = -1) {
    Mask m(w, h, std::vector<double>(std::size_t(w) * h, 1.0));
    if (ax >= 0) m.anchor_x = ax;
    if (ay >= 0) m.anchor_y = ay;
    return m;
}

std::string name(const MorphStep& s, const Image& in, int k) {
    return std::to_string(s.element.width) + "x" + std::to_string(s.element.height) + " anchor " +
           std::to_string(s.element.anchor_x) + "," + std::to_string(s.element.anchor_y) + " " +
           (s.kind == MorphKind::dilate ? "dilate " : "erode ") + to_string(in.type()) + " " +
           std::to_string(in.width()) + "x" + std::to_string(in.height()) + "x" + std::to_string(in.channels()) +
           " border " + (s.border ? to_string(*s.border) : std::string("ignore")) + " case " + std::to_string(k);
}

// The input is a view into a larger image at (1, 1) (rows off vector boundaries, pitch not the row size);
// the output too when `framed_out` (at (3, 2): a different offset from the input's).
void check(const MorphStep& s, const Image& in, const std::string& what, Executor& ex = fast(), bool framed_out = true) {
    const MorphPlan p = morph_plan(s, in.shape());
    Image want(in.shape());
    reference().morph(p, in.view(), want.view());
    Image src_store(in.width() + 3, in.height() + 2, in.channels(), in.type());
    ConstImageView src = ConstImageView(src_store.view()).roi(1, 1, in.width(), in.height());
    for (int y = 0; y < in.height(); ++y)
        std::memcpy(const_cast<std::byte*>(src.row_bytes(y)), in.view().row_bytes(y), in.shape().row_bytes());
    Image out_store(in.width() + 5, in.height() + 3, in.channels(), in.type());
    Image plain(in.shape());
    ImageView out = framed_out ? out_store.view().roi(3, 2, in.width(), in.height()) : plain.view();
    ex.morph(p, src, out);
    EXPECT_TRUE(test::same_samples(want.view(), out)) << what << ": differs by " << test::max_abs_diff(want.view(), out);
}

} // namespace

// Every small rectangle (square ones take the fused sweep) on rows long enough for the vector paths and
// on short ones, cycling types, channels, borders, kinds and anchors.
TEST(CpuMorphRect, SmallRectanglesMatchReference) {
    int k = 0;
    for (int mw = 1; mw <= 8; ++mw)
        for (int mh = 1; mh <= 8; ++mh) {
            if (mw * mh == 1) continue;
            for (int variant = 0; variant < 3; ++variant) {
                const PixelType t = kTypes[(k + variant) % 3];
                const int c = 1 + (k + 2 * variant) % 4;
                const int widths[] = {211, 67, 5};
                const int heights[] = {23, 14, 9};
                const Image in = test::random_image(widths[variant], heights[variant] + mh % 3, c, t, 500 + k);
                MorphStep s;
                s.element = rect(mw, mh);
                if (variant == 1) s.element = rect(mw, mh, 0, mh - 1);
                if (variant == 2) s.element = rect(mw, mh, mw - 1, 0);
                s.kind = (k + variant) % 2 ? MorphKind::dilate : MorphKind::erode;
                const int b = (k + variant) % 6 - 1;
                if (b >= 0) s.border = test::all_borders[b];
                s.border_value = 77;
                check(s, in, name(s, in, k));
                ++k;
            }
        }
}

// The benchmark's sizes, every border, all channel counts and types, wide rows.
TEST(CpuMorphRect, SquaresEveryBorderChannelAndType) {
    int k = 0;
    for (int size : {3, 5, 7})
        for (PixelType t : kTypes)
            for (int c = 1; c <= 4; ++c)
                for (int b = -1; b < 5; ++b) {
                    const Image in = test::random_image(173 + 11 * c, 13, c, t, 900 + k);
                    MorphStep s;
                    s.element = rect(size, size);
                    s.kind = k % 2 ? MorphKind::dilate : MorphKind::erode;
                    if (b >= 0) s.border = test::all_borders[b];
                    s.border_value = t == PixelType::f32 ? -0.5 : 3;
                    check(s, in, name(s, in, k), fast(), k % 2 == 0);
                    ++k;
                }
}

// Images smaller than the element, one pixel, one row, one column.
TEST(CpuMorphRect, TinyImages) {
    int k = 0;
    for (auto [w, h] : {std::pair{1, 1}, std::pair{1, 7}, std::pair{9, 1}, std::pair{3, 2}, std::pair{6, 6}})
        for (PixelType t : kTypes)
            for (int b = -1; b < 5; ++b) {
                const Image in = test::random_image(w, h, 1 + k % 4, t, 40 + k);
                MorphStep s;
                s.element = rect(7, 8, k % 7, k % 8);
                s.kind = k % 2 ? MorphKind::dilate : MorphKind::erode;
                if (b >= 0) s.border = test::all_borders[b];
                s.border_value = 9;
                check(s, in, name(s, in, k));
                ++k;
            }
}

// f32: NaN is a missing sample, infinities are samples (SPEC.md), on the fused sweep's wide rows too.
TEST(CpuMorphRect, F32SpecialValues) {
    Image in = test::random_image(150, 21, 1, PixelType::f32, 8);
    for (int x = 40; x < 50; ++x)
        for (int y = 5; y < 14; ++y) in.row<float>(y)[x] = NAN;
    in.row<float>(0)[0] = NAN;
    in.row<float>(3)[77] = INFINITY;
    in.row<float>(7)[149] = -INFINITY;
    in.row<float>(20)[100] = -INFINITY;
    for (int x = 0; x < 150; ++x) in.row<float>(10)[x] = NAN;
    int k = 0;
    for (auto kind : {MorphKind::erode, MorphKind::dilate})
        for (int size : {2, 3, 5, 8})
            for (int b = -1; b < 2; ++b) {
                MorphStep s;
                s.element = rect(size, size);
                s.kind = kind;
                if (b == 0) {
                    s.border = BorderMode::constant;
                    s.border_value = NAN;
                } else if (b == 1) {
                    s.border = BorderMode::reflect;
                }
                check(s, in, "special values " + name(s, in, k++));
            }
}

// Every SIMD level compiled in gives the reference's results.
TEST(CpuMorphRect, EverySimdTargetMatchesReference) {
    for (std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        auto ex = make_cpu_executor(2);
        int k = 0;
        for (PixelType t : kTypes)
            for (int c : {1, 3, 4})
                for (int size : {2, 5, 8}) {
                    const Image in = test::random_image(131, 12, c, t, 70 + k);
                    MorphStep s;
                    s.element = rect(size, size);
                    s.kind = k % 2 ? MorphKind::dilate : MorphKind::erode;
                    s.border = k % 3 ? std::optional<BorderMode>(BorderMode::mirror) : std::nullopt;
                    check(s, in, std::string(hwy::TargetName(target)) + " " + name(s, in, k), *ex);
                    s.element = rect(size, 9 - size);
                    check(s, in, std::string(hwy::TargetName(target)) + " " + name(s, in, k), *ex);
                    ++k;
                }
    }
    hwy::SetSupportedTargetsForTest(0);
}

// The same bits whatever the thread count (bands cut differently), and with strips: rows so wide that
// the task is cut into column strips whose inner edges read the input in place.
TEST(CpuMorphRect, ThreadCountsAndStrips) {
    const Image wide = test::random_image(9000, 19, 4, PixelType::f32, 3);
    const Image u8 = test::random_image(701, 97, 3, PixelType::u8, 4);
    std::vector<MorphStep> steps;
    for (int size : {3, 5, 8}) {
        MorphStep s;
        s.element = rect(size, size, size - 1, 0);
        s.kind = size == 5 ? MorphKind::erode : MorphKind::dilate;
        s.border = BorderMode::wrap;
        steps.push_back(s);
        s.element = rect(size, 8 - size + 1);
        s.border = std::nullopt;
        steps.push_back(s);
    }
    for (const Image* in : {&wide, &u8})
        for (const MorphStep& s : steps) {
            const MorphPlan p = morph_plan(s, in->shape());
            Image want(in->shape());
            reference().morph(p, in->view(), want.view());
            for (int threads : {1, 2, 3, 7}) {
                auto ex = make_cpu_executor(threads);
                Image got(in->shape());
                ex->morph(p, in->view(), got.view());
                EXPECT_TRUE(test::same_samples(want.view(), got.view())) << name(s, *in, threads) << " threads " << threads;
            }
        }
}

// Outputs of 32 MiB and more take non-temporal stores; same values as the (forced) direct path.
TEST(CpuMorphRect, LargeStreamedOutputs) {
    const Image u8 = test::random_image(2900, 2900, 4, PixelType::u8, 5);
    MorphStep s;
    s.element = rect(5, 5);
    s.border = BorderMode::mirror;
    MorphPlan p = morph_plan(s, u8.shape());
    Image got(u8.shape()), want(u8.shape());
    fast().morph(p, u8.view(), got.view());
    p.algorithm = MorphAlgorithm::direct;
    fast().morph(p, u8.view(), want.view());
    EXPECT_TRUE(test::identical(want.view(), got.view()));
}

// Rows packed as NumPy packs them (pitch = the row's bytes, so each row starts at another offset from a
// vector boundary) and the start 16 bytes past one: the rows cannot share the aligned run, and every sample
// must still be computed.
TEST(CpuMorphRect, PackedRowsAtEveryOffset) {
    int k = 0;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int channels : {1, 3, 4})
            for (int width : {37, 130, 257})
                for (auto [mw, mh] : {std::pair{3, 3}, std::pair{5, 5}, std::pair{8, 8}, std::pair{5, 3}})
                    for (std::size_t start : {std::size_t(0), std::size_t(16)}) {
                        const Image in = test::random_image(width, 19, channels, t, 700 + k++);
                        MorphStep s;
                        s.element = rect(mw, mh);
                        s.kind = k % 2 ? MorphKind::dilate : MorphKind::erode;
                        const MorphPlan p = morph_plan(s, in.shape());
                        Image want(in.shape());
                        reference().morph(p, in.view(), want.view());
                        const std::size_t pitch = in.shape().row_bytes();
                        std::vector<std::byte> store(pitch * 19 + 128);
                        const std::size_t base = (64 - reinterpret_cast<std::uintptr_t>(store.data()) % 64) % 64 + start;
                        const ImageView out{store.data() + base, in.shape(), pitch, Memory::host};
                        fast().morph(p, in.view(), out);
                        EXPECT_TRUE(test::same_samples(want.view(), out)) << name(s, in, k) << " start " << start;
                    }
}
