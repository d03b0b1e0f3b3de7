// The dispatch over the instantiated mask sizes (src/cuda/with_size.hpp over src/cuda/instantiated_sizes.hpp),
// without a GPU: every reach up to the largest bucket finds the smallest bucket that covers it, and a mask
// size only its own instance.
#include <gtest/gtest.h>

#include "cuda/with_size.hpp"

namespace apron::cuda {
namespace {

template <const auto& List>
void expect_smallest_covering_bucket() {
    for (int reach = 0; reach <= largest_size(List); ++reach) {
        int picked = -1, calls = 0;
        const bool found = with_bucket<List>(reach, [&]<int B>() { picked = B, ++calls; });
        EXPECT_TRUE(found) << "reach " << reach;
        EXPECT_EQ(calls, 1);
        int smallest = -1;
        for (const InstantiatedSize& s : List)
            if (s.size >= reach && (smallest < 0 || s.size < smallest)) smallest = s.size;
        EXPECT_EQ(picked, smallest) << "reach " << reach;
    }
    EXPECT_FALSE(with_bucket<List>(largest_size(List) + 1, [&]<int>() { ADD_FAILURE() << "called past the list"; }));
}

TEST(InstantiatedSizes, RadiusTakesTheSmallestBucketThatCoversIt) {
    expect_smallest_covering_bucket<separable_f32_radii>();
    expect_smallest_covering_bucket<separable_i32_radii>();
}

TEST(InstantiatedSizes, MaskSizeTakesItsOwnInstanceOnly) {
    for (int k = 0; k <= largest_size(direct_tiled_sizes) + 2; ++k) {
        int picked = -1;
        const bool found = with_size<direct_tiled_sizes>(k, [&]<int K>() { picked = K; });
        EXPECT_EQ(found, has_size(direct_tiled_sizes, k)) << k;
        EXPECT_EQ(picked, found ? k : -1) << k;
    }
}

// The direct kernels take odd square masks centred on their anchor: an even size would never be called.
TEST(InstantiatedSizes, DirectSizesAreOdd) {
    for (const InstantiatedSize& s : direct_tiled_sizes) EXPECT_EQ(s.size % 2, 1) << s.size;
}

} // namespace
} // namespace apron::cuda
