#pragma once
// The morph step kind (plan/kinds/morph_kind.cpp; plan/step_kind.hpp says what each method answers).
#include "plan/kinds/kind_methods.hpp"

namespace apron {

struct MorphStepKind {
    using Action = MorphStep;
    using Plan = MorphPlan;
    APRON_STEP_KIND_METHODS
};

} // namespace apron
