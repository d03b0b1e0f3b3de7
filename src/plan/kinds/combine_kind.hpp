#pragma once
// The combine step kind (see plan/step_kind.hpp for what each method answers).
#include <cstdint>
#include <optional>
#include <string>

#include "plan/plan.hpp"
#include "plan/plan_context.hpp"

namespace apron {

struct CombineStepKind {
    using Action = CombineStep;
    using Plan = CombinePlan;

    static int plan(const Action& action, PlanContext& context);
    static int operands(const Action& action);
    static void tables(Action& action, const MaskVisitor& visit);
    static std::string parameters(const Action& action);
    static StepWork work(const Action& action);
    static double gain(const Action& action);

    static std::string label(const Plan& plan);
    static bool bit_exact(const Plan& plan);
    static Reach reach(const Plan& plan);
    static bool wraps(const Plan& plan);
    static void tables(const Plan& plan, const TableVisitor& visit);
    static std::uint64_t executor_table_bytes(const Plan& plan);
    static std::uint64_t host_scratch_per_thread(const Plan& plan);
    static bool repeats(const Plan& plan, const Plan& next);
    static std::optional<Plan> in_band(const Plan& plan, int first_row, int image_height);
    static const KernelChoice& choose_kernel(Plan& plan, const BackendCaps& caps, const ImageShape& shape, std::string& label);
    static void run(Executor& ex, const Plan& plan, ConstImageView in, ConstImageView second, ImageView out);
    static bool run_overlapped(Executor& ex, const Plan& plan, ConstImageView host_in, ImageView host_out);
};

} // namespace apron
