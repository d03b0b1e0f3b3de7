// The pipeline API around the filters: running into the caller's image, shape and overlap checks, device
// memory refused by host backends, and pinned host images (pageable where no CUDA device is present).
#include <gtest/gtest.h>

#include <algorithm>

#include "apron/errors.hpp"
#include "apron/pipeline.hpp"
#include "test_support.hpp"

using namespace apron;

TEST(PipelineApi, RunsIntoTheCallersImageWithTheSameBitsAsTheReturningForm) {
    const Image in = test::random_image(97, 41, 3, PixelType::u8, 11);
    for (Backend b : {Backend::cpu, Backend::reference}) {
        const Pipeline p({"gaussian:sigma=1.5", "dilate:se=rect:3x5"});
        const RunOptions o{.backend = b, .out_type = PixelType::f32};
        Image out(p.output_shape(in.shape(), o));
        p.run(in, out.view(), o);
        EXPECT_TRUE(test::identical(out, p.run(in, o))) << to_string(b);
        // An ROI of a larger image as the destination: only its pixels change.
        Image canvas(120, 60, 3, PixelType::f32);
        for (int y = 0; y < 60; ++y)
            for (int x = 0; x < 360; ++x) canvas.row<float>(y)[x] = -7;
        p.run(in, canvas.view().roi(5, 9, 97, 41), o);
        EXPECT_TRUE(test::identical(copy_of(canvas.view().roi(5, 9, 97, 41)), out));
        EXPECT_EQ(canvas.row<float>(8)[20], -7);
        EXPECT_EQ(canvas.row<float>(50)[5 * 3 + 97 * 3], -7);
    }
}

TEST(PipelineApi, NoOperationConvertsIntoTheCallersImage) {
    const Image in = test::random_image(13, 7, 1, PixelType::u16, 3);
    Image out(13, 7, 1, PixelType::f32);
    Pipeline().run(in, out.view(), {.backend = Backend::cpu, .out_type = PixelType::f32});
    for (int y = 0; y < 7; ++y)
        for (int x = 0; x < 13; ++x) EXPECT_EQ(out.row<float>(y)[x], float(in.row<std::uint16_t>(y)[x]));
}

TEST(PipelineApi, RejectsAWrongOutputShapeOrType) {
    const Image in = test::random_image(16, 8, 1, PixelType::u8, 1);
    const Pipeline p({"box:width=3"});
    for (const ImageShape bad : {ImageShape{16, 9, 1, PixelType::u8}, ImageShape{16, 8, 2, PixelType::u8},
                                 ImageShape{16, 8, 1, PixelType::u16}}) {
        Image out(bad);
        try {
            p.run(in, out.view(), {.backend = Backend::cpu});
            ADD_FAILURE() << "no error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("output image"), std::string::npos) << e.what();
        }
    }
}

TEST(PipelineApi, RefusesToFilterInPlace) {
    Image img = test::random_image(16, 8, 1, PixelType::u8, 1);
    const Pipeline p({"box:width=3"});
    EXPECT_THROW(p.run(img.view(), img.view(), {.backend = Backend::cpu}), Error);
    // Overlapping ROIs of one image, too; disjoint ones are fine.
    EXPECT_THROW(p.run(img.view().roi(0, 0, 8, 8), img.view().roi(4, 0, 8, 8), {.backend = Backend::cpu}), Error);
    EXPECT_NO_THROW(p.run(img.view().roi(0, 0, 8, 8), img.view().roi(8, 0, 8, 8), {.backend = Backend::cpu}));
}

TEST(PipelineApi, HostBackendsRefuseDeviceMemory) {
    Image img = test::random_image(16, 8, 1, PixelType::u8, 1);
    Image out(16, 8, 1, PixelType::u8);
    const ConstImageView device{img.view().data, img.shape(), img.pitch(), Memory::device};
    try {
        Pipeline({"box:width=3"}).run(device, out.view(), {.backend = Backend::cpu});
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("device memory"), std::string::npos) << e.what();
    }
}

TEST(PipelineApi, PinnedImagesHoldPixelsLikeAnyOther) {
    // Pinned where a CUDA device is present, pageable otherwise: the same image either way.
    Image pinned(31, 17, 2, PixelType::u16, HostMemory::pinned);
    const auto backends = available_backends();
    EXPECT_EQ(pinned.pinned(), std::find(backends.begin(), backends.end(), "cuda") != backends.end());
    const Image in = test::random_image(31, 17, 2, PixelType::u16, 5);
    const Pipeline p({"sobel:dx=1,delta=1000"});
    p.run(in, pinned.view(), {.backend = Backend::cpu});
    EXPECT_TRUE(test::identical(pinned, p.run(in, {.backend = Backend::cpu})));
    Image moved = std::move(pinned);
    EXPECT_TRUE(test::identical(moved, p.run(in, {.backend = Backend::cpu})));
}
