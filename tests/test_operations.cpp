// The fast CPU backend against the reference (see backend_sweep.hpp), pipelines and ROI views.
#include <gtest/gtest.h>

#include "backend_sweep.hpp"

using namespace apron;

TEST(Operations, FastCpuMatchesTheReferenceForEveryExample) { test::expect_backend_matches_reference(Backend::cpu); }

TEST(Operations, PipelinesEqualTheirOperationsRunOneByOne) {
    const Image in = test::random_image(29, 17, 3, PixelType::u8, 77);
    const std::vector<std::string> ops = {"gaussian:sigma=1.2", "sobel:dx=1,delta=128", "dilate:se=cross:3x3"};
    for (Backend b : {Backend::reference, Backend::cpu})
        for (PixelType out : {PixelType::u8, PixelType::f32}) {
            const Image all = Pipeline(ops).run(in, {.backend = b, .out_type = out});
            Image step = copy_of(in.view());
            for (const auto& op : ops) step = Pipeline({op}).run(step, {.backend = b, .out_type = out});
            EXPECT_TRUE(test::identical(all, step)) << to_string(b) << " " << to_string(out);
        }
}

TEST(Operations, RegionOfInterestViewsFilterOnlyTheirPixels) {
    // A view into a larger image filters as if it were the whole image (borders at the view's edges).
    const Image big = test::random_image(40, 30, 2, PixelType::u16, 9);
    const ConstImageView roi = big.view().roi(7, 5, 19, 11);
    const Image copy = copy_of(roi);
    for (Backend b : {Backend::reference, Backend::cpu}) {
        const Pipeline p({"box:width=5,height=3,border=mirror"});
        EXPECT_TRUE(test::identical(p.run(roi, {.backend = b}), p.run(copy, {.backend = b}))) << to_string(b);
    }
}
