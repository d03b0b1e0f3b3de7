// The memory estimate of rank steps on the CPU backend: the fast kernels' histograms and rows of keys
// (src/cpu/fast_rank_*.cpp), counted per thread as plan/kinds/rank_scratch.cpp mirrors them. The bytes below
// are worked out from the kernels' own allocations, so an estimate under them lets a --memory budget pass a
// run that then takes more.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "apron/ops.hpp"
#include "plan/memory_estimate.hpp"
#include "plan/plan.hpp"

using namespace apron;

namespace {

ExecutionPlan cpu_plan(const std::string& spec, const ImageShape& shape) {
    return make_plan({parse_operation(spec)}, shape, shape.type, Backend::cpu);
}

const RankPlan& rank_step(const ExecutionPlan& plan) { return std::get<RankPlan>(plan.operations.at(0).steps.at(0).what); }

std::uint64_t scratch_of(const std::string& spec, const ImageShape& shape, int threads = 1) {
    return estimate_memory(cpu_plan(spec, shape), threads, false).scratch;
}

constexpr std::uint64_t histogram16_bytes = (65536 + 4096 + 256) * 4;  // fine, middle and coarse u32 counts
constexpr std::uint64_t low_xor_bytes = 65536 * 2;                      // f32: the low halves of each fine bin

// A ring of `rows` rows of one channel's u32 keys across W + 2 (mw + 1) padded columns, 1 KiB of slack each,
// rounded to cache lines (fast_rank_runs.cpp's KeyRing).
std::uint64_t key_ring_bytes(int rows, int width, int mw) {
    const std::uint64_t row = (std::uint64_t(width + 2 * (mw + 1)) * 4 + 1024 + 63) / 64 * 64;
    return std::uint64_t(rows) * row;
}

} // namespace

TEST(RankMemory, U16MedianCountsItsThreeHistogramTiers) {
    const ImageShape shape{8192, 64, 3, PixelType::u16};
    const ExecutionPlan plan = cpu_plan("median:se=rect:31x31", shape);
    ASSERT_EQ(rank_step(plan).kernel.family, "cpu.rank_histogram");
    ASSERT_EQ(rank_step(plan).kernel.detail, "u16 runs");
    const std::uint64_t gathered_keys = (31 * 31 + 64) * 4;
    const std::uint64_t one = estimate_memory(plan, 1, false).scratch;
    EXPECT_GE(one, histogram16_bytes + gathered_keys);
    EXPECT_EQ(estimate_memory(plan, 4, false).scratch, 4 * one);  // one histogram per participant
}

TEST(RankMemory, F32MedianCountsItsKeyRingWhichGrowsWithWidth) {
    const ImageShape narrow{8192, 64, 3, PixelType::f32};
    const ExecutionPlan plan = cpu_plan("median:se=rect:21x21", narrow);
    ASSERT_EQ(rank_step(plan).kernel.family, "cpu.rank_keyhist");
    const std::uint64_t ring = key_ring_bytes(21 + 1, 8192, 21);  // 730 KiB
    const std::uint64_t at_8192 = estimate_memory(plan, 1, false).scratch;
    EXPECT_GE(at_8192, histogram16_bytes + low_xor_bytes + ring);
    // Twice the width: every ring row holds 8192 more keys.
    const ImageShape wide{16384, 64, 3, PixelType::f32};
    EXPECT_GE(scratch_of("median:se=rect:21x21", wide), at_8192 + 22 * 8192 * 4);
}

TEST(RankMemory, U8RectangleCountsAStripOfColumnHistograms) {
    // fast_rank_columns.cpp: 288 u16 counts a padded column; Tiling (fast_rows.hpp) cuts 8192 columns into 5
    // strips of 1639 (1 MiB of records, less the halo, per strip), plus 30 columns of halo.
    const ImageShape shape{8192, 64, 3, PixelType::u8};
    const ExecutionPlan plan = cpu_plan("median:se=rect:31x31", shape);
    ASSERT_EQ(rank_step(plan).kernel.detail, "u8 columns");
    EXPECT_GE(estimate_memory(plan, 1, false).scratch, (1639 + 30) * 288 * 2);
    // A narrow image's strip is the image: fewer records.
    EXPECT_LT(scratch_of("median:se=rect:31x31", {300, 64, 3, PixelType::u8}), estimate_memory(plan, 1, false).scratch);
}

TEST(RankMemory, SmallWindowRowsFollowTheChannels) {
    // fast_rank_network.cpp: a ring of 5 + 1 padded rows and 1 + 5 sorted rows of f32 keys, the pixels'
    // channels interleaved; Tiling cuts 8192 columns into 2 strips of 4096 (1 MiB over 132 bytes a column).
    const ImageShape rgb{8192, 64, 3, PixelType::f32};
    const ExecutionPlan plan = cpu_plan("median:se=cross:5x5", rgb);
    ASSERT_EQ(rank_step(plan).kernel.family, "cpu.rank_network");
    const std::uint64_t rgb_scratch = estimate_memory(plan, 1, false).scratch;
    EXPECT_GE(rgb_scratch, 12 * std::uint64_t(4096 + 4) * 3 * 4);
    EXPECT_LT(scratch_of("median:se=cross:5x5", {256, 64, 1, PixelType::f32}), rgb_scratch);
}

// A volume's window (cpu.rank_volume, fast_rank_volume.cpp): a tiered histogram a participant (u8's 16 + 256
// bins, u16's and f32's to 65536, f32's low halves too), counted once a thread.
TEST(RankMemory, VolumeWindowsCountTheirTieredHistogramPerThread) {
    for (const PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
        const ImageShape shape{256, 256, 1, t, 64};
        const ExecutionPlan plan = cpu_plan("median:se=ball:2", shape);
        ASSERT_EQ(rank_step(plan).kernel.family, "cpu.rank_volume");
        const std::uint64_t histogram = t == PixelType::u8 ? (16 + 256) * 4 : (16 + 256 + 4096 + 65536) * 4;
        const std::uint64_t one = estimate_memory(plan, 1, false).scratch;
        EXPECT_GE(one, histogram + (t == PixelType::f32 ? low_xor_bytes : 0) + 33 * 4) << to_string(t);
        EXPECT_GT(estimate_memory(plan, 4, false).scratch, 3 * one) << to_string(t);
    }
}
