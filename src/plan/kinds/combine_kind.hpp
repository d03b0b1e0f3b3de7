#pragma once
// The combine step kind (plan/kinds/combine_kind.cpp; plan/step_kind.hpp says what each method answers).
#include "plan/kinds/kind_methods.hpp"

namespace apron {

struct CombineStepKind {
    using Action = CombineStep;
    using Plan = CombinePlan;
    APRON_STEP_KIND_METHODS
};

} // namespace apron
