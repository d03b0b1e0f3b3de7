// The memory budget: its text form, what a pipeline is estimated to need, and the tables its steps share.
#include <gtest/gtest.h>

#include <string>

#include "apron/errors.hpp"
#include "apron/memory.hpp"
#include "apron/pipeline.hpp"
#include "test_support.hpp"

using namespace apron;

namespace {

std::string message_of(auto&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(MemoryBudget, ParsesSizesWithBinaryUnitsAndShares) {
    EXPECT_EQ(parse_memory_size("800000000"), 800000000u);
    EXPECT_EQ(parse_memory_size("512M"), 512ull << 20);
    EXPECT_EQ(parse_memory_size("8G"), 8ull << 30);
    EXPECT_EQ(parse_memory_size("8g"), 8ull << 30);
    EXPECT_EQ(parse_memory_size("1.5GiB"), 3ull << 29);
    EXPECT_EQ(parse_memory_size("2KB"), 2048u);
    EXPECT_EQ(parse_memory_size("1T"), 1ull << 40);
    if (physical_memory_bytes()) {
        EXPECT_EQ(parse_memory_size("100%"), physical_memory_bytes());
        EXPECT_EQ(default_memory_budget(), physical_memory_bytes() / 4 * 3);
    }
    for (const char* bad : {"", "0", "-1G", "+1G", "G", "1X", "1GG", "nan", "inf", "101%", "1e30", "0.1"}) {
        const std::string m = message_of([&] { parse_memory_size(bad, "--memory"); });
        EXPECT_EQ(m.rfind("--memory: ", 0), 0u) << "'" << bad << "' gave '" << m << "'";
    }
}

TEST(MemoryBudget, FormatsBytesForMessages) {
    EXPECT_EQ(format_bytes(0), "0 bytes");
    EXPECT_EQ(format_bytes(1), "1 byte");
    EXPECT_EQ(format_bytes(1023), "1023 bytes");
    EXPECT_EQ(format_bytes(1536), "1.50 KiB");
    EXPECT_EQ(format_bytes(100ull << 20), "100 MiB");
    EXPECT_EQ(format_bytes(3ull << 29), "1.50 GiB");
}

TEST(MemoryBudget, RequireMemoryNamesWhatAndTheBytes) {
    EXPECT_NO_THROW(require_memory(100, 100, "x", ""));
    const std::string m = message_of([] { require_memory(3ull << 30, 1ull << 30, "in.png", "image 3.00 GiB"); });
    EXPECT_EQ(m, "in.png: needs 3.00 GiB of host memory (image 3.00 GiB), over the memory budget of 1.00 GiB "
                 "(raise it with --memory)");
}

TEST(SharedValues, CopiesShareUntilOneIsWritten) {
    SharedValues<double> a(std::vector<double>{1, 2, 3});
    SharedValues<double> b = a;
    EXPECT_TRUE(b.shares_storage_with(a));
    const SharedValues<double>& cb = b;
    EXPECT_EQ(cb[1], 2);  // a const read keeps the storage shared
    EXPECT_TRUE(b.shares_storage_with(a));
    b[1] = 7;  // a write copies first
    EXPECT_FALSE(b.shares_storage_with(a));
    EXPECT_EQ(a, (std::vector<double>{1, 2, 3}));
    EXPECT_EQ(b, (std::vector<double>{1, 7, 3}));
    SharedValues<double> empty;
    EXPECT_TRUE(empty.empty());
    empty.push_back(4);
    EXPECT_EQ(empty, (std::vector<double>{4}));
}

TEST(PipelineMemory, StepsShareOneElementWhateverTheIterations) {
    const Pipeline p({"dilate:se=rect:4097x4097,iterations=50"});
    const auto& steps = p.operations()[0].steps;
    ASSERT_EQ(steps.size(), 50u);
    const Mask& first = std::get<MorphStep>(steps[0].action).element;
    for (const Step& s : steps) EXPECT_TRUE(std::get<MorphStep>(s.action).element.weights.shares_storage_with(first.weights));
    // One 4097^2 table (134 MB of doubles, plus the executor's per-step table), two small images: well
    // under what fifty copies would take (6.7 GB).
    const std::uint64_t need = p.memory_needed({80, 64, 1, PixelType::u8}, {.backend = Backend::cpu});
    EXPECT_LT(need, 600ull << 20);
    EXPECT_GT(need, 134ull << 20);
}

TEST(PipelineMemory, EqualMasksOfDifferentOperationsShareOneTable) {
    std::vector<std::string> specs(10, "box:width=2049");
    specs.push_back("box:width=2047");
    const Pipeline p(specs);
    auto mask_of = [&](std::size_t k) -> const Mask& { return std::get<LinearStep>(p.operations()[k].steps[0].action).mask; };
    for (std::size_t k = 1; k < 10; ++k) EXPECT_TRUE(mask_of(k).weights.shares_storage_with(mask_of(0).weights)) << k;
    EXPECT_FALSE(mask_of(10).weights.shares_storage_with(mask_of(0).weights));
    EXPECT_EQ(mask_of(10).width, 2047);
}

TEST(PipelineMemory, IntermediatesAreCountedWhileAlive) {
    const ImageShape shape{1000, 1000, 1, PixelType::f32};  // 4 MB an image
    const RunOptions cpu{.backend = Backend::cpu};
    // A chain of 40 steps holds its input, at most two intermediates and the result at once (a cross: the
    // passes of a full rectangle would merge into one step).
    const std::uint64_t chain = Pipeline({"erode:se=cross:3x3,iterations=40"}).memory_needed(shape, cpu);
    EXPECT_LE(chain, 3 * 4000000ull + (1 << 20));
    EXPECT_GE(chain, 2 * 4000000ull);
    // Writing into the caller's image: one step then allocates nothing but its tables.
    const Pipeline one({"erode:se=rect:3x3"});
    EXPECT_GE(one.memory_needed(shape, cpu, true), 4000000ull);
    EXPECT_LT(one.memory_needed(shape, cpu, false), 4096u);
    // gradient keeps the dilation alive while it erodes: three images plus the result.
    const std::uint64_t gradient = Pipeline({"gradient:se=rect:3x3"}).memory_needed(shape, cpu);
    EXPECT_GE(gradient, 3 * 4000000ull);
}

TEST(PipelineMemory, RunRefusesAPipelineOverTheBudgetBeforeAllocating) {
    const Image in = test::random_image(301, 207, 3, PixelType::u16, 5);
    const Pipeline p({"gaussian:sigma=2", "dilate:se=ellipse:5x5,iterations=3"});
    const RunOptions tight{.backend = Backend::cpu, .out_type = PixelType::f32, .memory_budget = 100000};
    const std::string m = message_of([&] { p.run(in, tight); });
    EXPECT_EQ(m.rfind("pipeline: needs ", 0), 0u) << m;
    EXPECT_NE(m.find("over the memory budget of 97.7 KiB (raise it with --memory)"), std::string::npos) << m;
    // With room, the same bits as without a budget.
    RunOptions roomy = tight;
    roomy.memory_budget = 1ull << 30;
    RunOptions none = tight;
    none.memory_budget = 0;
    EXPECT_TRUE(test::identical(p.run(in, roomy), p.run(in, none)));
}

TEST(PipelineMemory, FreeingIntermediatesKeepsEveryOperandResult) {
    // gradient, tophat and blackhat read a step's result after others ran: freeing by last reader must not
    // free it early. Reference backend against CPU, both through the runner.
    const Image in = test::random_image(37, 23, 2, PixelType::u8, 9);
    for (const char* op : {"gradient:se=ellipse:5x3,iterations=2", "tophat:se=cross:3x5", "blackhat:se=rect:3x3,iterations=3",
                           "laplacian"}) {
        const Pipeline p({op, "dilate:se=rect:3x1"});
        EXPECT_TRUE(test::identical(p.run(in, {.backend = Backend::cpu}), p.run(in, {.backend = Backend::reference}))) << op;
    }
}
