#pragma once
// The methods every step kind module declares, in one list (plan/step_kind.hpp's StepKindModule concept says
// what each answers and checks that a kind defines them all). A kind's struct names its Action and Plan types
// and then APRON_STEP_KIND_METHODS.
#include <cstdint>
#include <optional>
#include <string>

#include "plan/plan.hpp"
#include "plan/plan_context.hpp"

// clang-format off
#define APRON_STEP_KIND_METHODS \
    static int plan(const Action& action, PlanContext& context); \
    static int operands(const Action& action); \
    static void tables(Action& action, const MaskVisitor& visit); \
    static std::string parameters(const Action& action); \
    static StepWork work(const Action& action); \
    static double gain(const Action& action); \
    static std::string label(const Plan& plan); \
    static bool bit_exact(const Plan& plan); \
    static Reach reach(const Plan& plan); \
    static bool wraps(const Plan& plan); \
    static void tables(const Plan& plan, const TableVisitor& visit); \
    static std::uint64_t executor_table_bytes(const Plan& plan); \
    static std::uint64_t host_scratch_per_thread(const Plan& plan, const ImageShape& input); \
    static bool repeats(const Plan& plan, const Plan& next); \
    static std::optional<Plan> in_band(const Plan& plan, int first_row, int image_height); \
    static const KernelChoice& choose_kernel(Plan& plan, const BackendCaps& caps, const ImageShape& shape, std::string& label); \
    static void run(Executor& ex, const Plan& plan, ConstImageView in, ConstImageView second, ImageView out); \
    static bool run_overlapped(Executor& ex, const Plan& plan, ConstImageView host_in, ImageView host_out);
// clang-format on
