// Border index maths against SPEC.md's table, and its behaviour far outside the image.
#include <gtest/gtest.h>

#include "core/border_index.hpp"

using apron::BorderMode;
using apron::map_index;

namespace {

// Extends a row of n pixels to indices [-k, n + k) and returns the source index of each position.
std::vector<int> extend(int n, int k, BorderMode m) {
    std::vector<int> out;
    for (int i = -k; i < n + k; ++i) out.push_back(map_index(i, n, m));
    return out;
}

} // namespace

TEST(Border, SpecTableRowOfFour) {
    // a b c d = 0 1 2 3, extended by 4 on each side (SPEC.md "Borders").
    EXPECT_EQ(extend(4, 4, BorderMode::constant), (std::vector<int>{-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1}));
    EXPECT_EQ(extend(4, 4, BorderMode::nearest), (std::vector<int>{0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3}));
    EXPECT_EQ(extend(4, 4, BorderMode::reflect), (std::vector<int>{3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0}));
    EXPECT_EQ(extend(4, 3, BorderMode::mirror), (std::vector<int>{3, 2, 1, 0, 1, 2, 3, 2, 1, 0}));
    EXPECT_EQ(extend(4, 4, BorderMode::wrap), (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
}

TEST(Border, ExtensionRepeatsForMasksLargerThanTheImage) {
    // reflect of [0 1]: period 4 (a b b a): ... 1 1 0 | 0 1 | 1 0 0 1 1 0 ...
    EXPECT_EQ(extend(2, 6, BorderMode::reflect),
              (std::vector<int>{1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0}));
    // mirror of [0 1 2]: period 4: 0 1 2 1 0 1 2 1 ...
    EXPECT_EQ(extend(3, 5, BorderMode::mirror), (std::vector<int>{1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1}));
    EXPECT_EQ(map_index(-1000001, 7, BorderMode::wrap), ((-1000001 % 7) + 7) % 7);
}

TEST(Border, OnePixelRowRepeatsThatPixelInEveryMode) {
    for (BorderMode m : {BorderMode::nearest, BorderMode::reflect, BorderMode::mirror, BorderMode::wrap})
        for (int i = -9; i <= 9; ++i) EXPECT_EQ(map_index(i, 1, m), 0) << apron::to_string(m) << " i=" << i;
}

TEST(Border, NamesAndAliases) {
    EXPECT_EQ(apron::parse_border_mode("replicate"), BorderMode::nearest);
    EXPECT_EQ(apron::parse_border_mode("reflect101"), BorderMode::mirror);
    EXPECT_EQ(apron::parse_border_mode("symmetric"), BorderMode::reflect);
    EXPECT_EQ(apron::parse_border_mode("periodic"), BorderMode::wrap);
    EXPECT_EQ(apron::parse_border_mode("zero"), BorderMode::constant);
    EXPECT_FALSE(apron::parse_border_mode("Reflect"));
}
