#pragma once
// The linear step kind (plan/kinds/linear_kind.cpp; plan/step_kind.hpp says what each method answers).
#include "plan/kinds/kind_methods.hpp"

namespace apron {

struct LinearStepKind {
    using Action = LinearStep;
    using Plan = LinearPlan;
    APRON_STEP_KIND_METHODS
};

} // namespace apron
