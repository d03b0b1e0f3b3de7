// The planner's cost model (src/plan/cost_model.cpp): table parsing and its errors, interpolation and
// extrapolation, class fall-backs, and the planner taking the path a table predicts fastest (a table given
// through APRON_CALIBRATION), with `apron plan`'s candidate list.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/overrides.hpp"
#include "apron/errors.hpp"
#include "cpu/fft_linear.hpp"
#include "plan/cost_model.hpp"
#include "plan/plan.hpp"
#include "plan_support.hpp"

using namespace apron;

namespace {

const char* kTable = R"(# a test table
backend	cpu
arch	0
device	test machine
direct	f32	3	10
direct	f32	9	2
direct	f32	31	0.1
separable	f32	3	8
separable	f32	31	2
fft	f32	9	0.2
fft	f32	31	0.4
fft	f32	127	0.3
combine	f32	1	20
)";

TEST(CostModel, ParsesAndInterpolates) {
    const CostTable t = parse_cost_table(kTable, "t.tsv");
    EXPECT_EQ(t.backend, "cpu");
    EXPECT_EQ(t.device, "test machine");
    ASSERT_EQ(t.points.size(), 9u);
    const double n = 1e9;
    // At a measured side: 1e9 samples at 2 Gpix/s is 0.5 s.
    EXPECT_NEAR(*t.seconds("direct", "f32", 9, n), 0.5, 1e-12);
    // Between sides: log-log, so between the neighbours and monotonic.
    const double at5 = *t.seconds("direct", "f32", 5, n);
    EXPECT_GT(at5, 0.1);
    EXPECT_LT(at5, 0.5);
    EXPECT_LT(*t.seconds("direct", "f32", 7, n), *t.seconds("direct", "f32", 8, n));
    // Past the last side: the direct path grows as k^2.
    EXPECT_NEAR(*t.seconds("direct", "f32", 62, n), 10.0 * 4, 1e-9);
    // u8 and u16 fall back to f32 when the table has no point of theirs; unknown paths have none.
    EXPECT_NEAR(*t.seconds("direct", "u8-int", 9, n), 0.5, 1e-12);
    EXPECT_NEAR(*t.seconds("direct", "u16", 9, n), 0.5, 1e-12);
    EXPECT_FALSE(t.seconds("tensor", "u8-int", 9, n));
    // The format round-trips.
    const CostTable again = parse_cost_table(format_cost_table(t), "again");
    EXPECT_EQ(again.points.size(), t.points.size());
    EXPECT_NEAR(*again.seconds("fft", "f32", 50, n), *t.seconds("fft", "f32", 50, n), 1e-3);
}

// Colour classes: their own points where measured, else the same class on gray; u16 on colour borrows f32 on
// the same channels before gray u16.
TEST(CostModel, ColourClassesFallBackToGray) {
    const CostTable t = parse_cost_table(std::string(kTable) + "direct\tf32-c3\t9\t1\n", "t.tsv");
    const double n = 1e9;
    EXPECT_NEAR(*t.seconds("direct", "f32-c3", 9, n), 1.0, 1e-12);   // 1 Gsample/s
    EXPECT_NEAR(*t.seconds("direct", "u16-c3", 9, n), 1.0, 1e-12);
    EXPECT_NEAR(*t.seconds("direct", "u8-int-c3", 9, n), 1.0, 1e-12);
    EXPECT_NEAR(*t.seconds("direct", "f32-c4", 9, n), 0.5, 1e-12);   // no c4 point: gray's 2 Gpix/s
    EXPECT_NEAR(*t.seconds("direct", "f32", 9, n), 0.5, 1e-12);
    LinearPlan p;
    p.in = PixelType::u16;
    EXPECT_EQ(cost_class(p, 3), "u16-c3");
    EXPECT_EQ(cost_class(p, 1), "u16");
}

TEST(CostModel, BadTablesNameTheFileAndLine) {
    auto message = [](const std::string& text) {
        try {
            parse_cost_table(text, "bad.tsv");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(message("backend\tcpu\ndirect\tf32\t3\n").find("bad.tsv: line 2"), std::string::npos);
    EXPECT_NE(message("backend\tcpu\ndirect\tf32\t0\t5\n").find("line 2"), std::string::npos);
    EXPECT_NE(message("backend\tcpu\ndirect\tf32\t3\t-1\n").find("line 2"), std::string::npos);
    EXPECT_NE(message("backend\tcpu\ndirect\tf32\t3\tnan\n").find("line 2"), std::string::npos);
    EXPECT_NE(message("direct\tf32\t3\t5\n").find("no 'backend"), std::string::npos);
    EXPECT_NE(message("backend\tgpu9\ndirect\tf32\t3\t5\n").find("no 'backend"), std::string::npos);
    EXPECT_NE(message("backend\tcpu\n").find("no measurements"), std::string::npos);
}

TEST(CostModel, BuiltInTablesParse) {
    for (const auto& [name, text] : builtin_cost_tables()) EXPECT_NO_THROW(parse_cost_table(text, name)) << name;
}

// Each GPU model gets its own table, then its architecture's, then the nearest one's.
TEST(CostModel, TheTableOfTheGpuModelFirst) {
    const CostTable* h200 = cost_table_for(Backend::cuda, 90, "NVIDIA H200");
    const CostTable* h100 = cost_table_for(Backend::cuda, 90, "NVIDIA H100 80GB HBM3");
    ASSERT_TRUE(h200 && h100);
    if (!overrides().calibration.empty()) GTEST_SKIP() << "APRON_CALIBRATION replaces the built-in tables";
    EXPECT_NE(h200->source.find("cuda-sm90-h200.tsv"), std::string::npos) << h200->source;
    EXPECT_NE(h100->source.find("cuda-sm90-h100.tsv"), std::string::npos) << h100->source;
    // Another sm_90 GPU (H800, GH200): a table of its architecture.
    const CostTable* other = cost_table_for(Backend::cuda, 90, "NVIDIA GH200 480GB");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->arch, 90);
    // An architecture without a table: the nearest one.
    EXPECT_EQ(cost_table_for(Backend::cuda, 89, "NVIDIA L40S")->arch, 90);
}

// The planner follows the table: direct where it is fastest, the FFT past the crossing, and every
// candidate's time in the plan.
TEST(CostModel, PlannerTakesThePredictedFastestPath) {
    const std::string path = ::testing::TempDir() + "apron_cost_table.tsv";
    std::ofstream(path) << kTable;
    Overrides with_table = overrides();
    with_table.calibration = path;
    std::optional<OverrideScope> scope(std::in_place, with_table);
    const ImageShape shape{512, 512, 1, PixelType::f32};
    auto chosen = [&](int k) {
        const auto plan = make_plan({test::correlation_op(test::random_mask(k, k, false, 7u + unsigned(k)))}, shape, PixelType::f32, Backend::cpu);
        return std::get<LinearPlan>(plan.operations[0].steps[0].what).algorithm;
    };
    EXPECT_EQ(chosen(3), LinearAlgorithm::direct);
    if (overrides().fft_path < 0 && cpu::fft_available()) {
        EXPECT_EQ(chosen(31), LinearAlgorithm::fft);  // 0.4 against 0.1 Gpix/s
        const auto plan = make_plan({test::correlation_op(test::random_mask(31, 31, false, 3))}, shape, PixelType::f32, Backend::cpu);
        const std::string text = plan.describe(true);
        EXPECT_NE(text.find("cost model: " + path), std::string::npos) << text;
        EXPECT_NE(text.find("* fft"), std::string::npos) << text;
        EXPECT_NE(text.find("direct"), std::string::npos) << text;
        EXPECT_NE(text.find("tensor cores are a CUDA path"), std::string::npos) << text;
    }
    with_table.calibration = path + ".missing";
    scope.reset();
    scope.emplace(with_table);
    EXPECT_THROW(make_plan({test::correlation_op(test::random_mask(5, 5, false, 1))}, shape, PixelType::f32, Backend::cpu), Error);
    scope.reset();
    std::remove(path.c_str());
}

} // namespace
