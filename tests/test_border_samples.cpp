// map_sample and mapped_sample: the border of interleaved rows maps the pixel and keeps the channel, at any
// distance, in 64-bit and 32-bit indices; floor_div rounds toward minus infinity.
#include <gtest/gtest.h>

#include "core/border_index.hpp"

using apron::BorderMode;
using apron::map_index;
using apron::floor_div;
using apron::map_sample;
using apron::mapped_sample;

namespace {

const BorderMode every_mode[] = {BorderMode::constant, BorderMode::nearest, BorderMode::reflect, BorderMode::mirror,
                                 BorderMode::wrap};

} // namespace

TEST(BorderSamples, OneChannelIsMapIndex) {
    for (BorderMode m : every_mode)
        for (int n : {1, 2, 5})
            for (long long s = -23; s < n + 23; ++s) EXPECT_EQ(map_sample(s, n, 1, m), map_index(s, n, m)) << s;
}

TEST(BorderSamples, MapsThePixelAndKeepsTheChannel) {
    for (BorderMode m : every_mode)
        for (int c = 1; c <= 4; ++c)
            for (int n : {1, 3, 4})
                for (long long px = -17; px < n + 17; ++px)
                    for (int ch = 0; ch < c; ++ch) {
                        const int want = map_index(px, n, m) < 0 ? -1 : map_index(px, n, m) * c + ch;
                        EXPECT_EQ(map_sample(px * c + ch, n, c, m), want) << "px " << px << " ch " << ch << " c " << c;
                    }
}

TEST(BorderSamples, RgbRowOfTwoPixels) {
    // r0 g0 b0 r1 g1 b1, reflect: the sample left of r0 is b0 (pixel -1 reads pixel 0), right of b1 is r1.
    EXPECT_EQ(map_sample(-1, 2, 3, BorderMode::reflect), 2);
    EXPECT_EQ(map_sample(-3, 2, 3, BorderMode::reflect), 0);
    EXPECT_EQ(map_sample(6, 2, 3, BorderMode::reflect), 3);
    EXPECT_EQ(map_sample(-1, 2, 3, BorderMode::wrap), 5);
    EXPECT_EQ(map_sample(-4, 2, 3, BorderMode::mirror), 2);  // pixel -2 reads pixel 0
    EXPECT_EQ(map_sample(-1, 2, 3, BorderMode::constant), -1);
    EXPECT_EQ(map_sample(-1000000001LL, 7, 4, BorderMode::wrap) % 4, 3);
}

TEST(BorderSamples, FloorDivRoundsDown) {
    for (int c = 1; c <= 4; ++c)
        for (int s = -25; s <= 25; ++s) {
            const int q = floor_div(s, c);
            EXPECT_TRUE(q * c <= s && s < (q + 1) * c) << s << " / " << c;
            EXPECT_EQ(floor_div((long long)s, c), q);
        }
}

// The kernels' forms: 32-bit indices (map_sample<int>), and mapped_sample for the modes that map every pixel.
TEST(BorderSamples, NarrowAndMappedFormsAgree) {
    for (BorderMode m : every_mode)
        for (int c = 1; c <= 4; ++c)
            for (int n : {1, 3, 4})
                for (int s = -40; s < n * c + 40; ++s) {
                    const int want = map_sample(s, n, c, m);
                    EXPECT_EQ(map_sample<int>(s, n, c, m), want) << s;
                    if (m != BorderMode::constant) {
                        EXPECT_EQ(mapped_sample(s, n, c, m), want) << s;
                        EXPECT_EQ(mapped_sample<int>(s, n, c, m), want) << s;
                    }
                }
}
