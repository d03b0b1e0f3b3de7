#pragma once
// Step kinds as modules. Every kind of step (linear, morphology, combine, rank) is one struct
// in src/plan/kinds/ holding everything the rest of apron asks of a step of that kind: how it is planned,
// how far it reads (the stream halo), whether it wraps, its tables (interning, memory, fingerprint), its
// label, its kernel choice and how an executor runs it. The rest of apron calls the functions below, which
// dispatch on the step's variant; the StepKindModule concept makes a kind that lacks a method fail to
// compile instead of being skipped at run time.
//
// A new kind touches: its action in apron/ops.hpp (the Step variant) and its parser (src/ops/ops_*.cpp),
// its plan in plan/plan.hpp (the StepPlan variant, in the same order), its module src/plan/kinds/NAME.hpp
// and .cpp (named in the list below and in src/plan/CMakeLists.txt), and one executor method and one
// capability method per backend (docs/structure.md).
#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <variant>

#include "plan/kinds/combine_kind.hpp"
#include "plan/kinds/linear_kind.hpp"
#include "plan/kinds/morph_kind.hpp"
#include "plan/kinds/rank_kind.hpp"
#include "plan/plan.hpp"
#include "plan/plan_context.hpp"

namespace apron {

// What every kind provides. K::Action is the kind's program step (apron/ops.hpp), K::Plan its planned step.
template <class K>
concept StepKindModule = requires(const typename K::Action& action, typename K::Action& owned,
                                  const typename K::Plan& plan, typename K::Plan& planned, PlanContext& context,
                                  const BackendCaps& caps, const ImageShape& shape, std::string& label, Executor& ex,
                                  ConstImageView in, ImageView out, const TableVisitor& visit,
                                  const MaskVisitor& visit_masks) {
    // Program level.
    { K::plan(action, context) } -> std::same_as<int>;  // appends its plan steps; returns the result's index
    { K::operands(action) } -> std::same_as<int>;       // images it reads: 1, or 2 (a combine with b != 0)
    K::tables(owned, visit_masks);                      // its masks or elements (Pipeline::add interns them)
    { K::parameters(action) } -> std::same_as<std::string>;  // what its result depends on (resume fingerprint)
    { K::work(action) } -> std::same_as<StepWork>;      // taps per sample (the reference backend's time)
    { K::gain(action) } -> std::same_as<double>;        // |result| / max |input| at most (float tolerances)
    // Plan level.
    { K::label(plan) } -> std::same_as<std::string>;
    { K::bit_exact(plan) } -> std::same_as<bool>;       // the same bits on every backend (SPEC.md)
    { K::reach(plan) } -> std::same_as<Reach>;
    { K::wraps(plan) } -> std::same_as<bool>;
    K::tables(plan, visit);                             // its tables (memory estimate)
    { K::executor_table_bytes(plan) } -> std::same_as<std::uint64_t>;  // what an executor builds from them
    { K::host_scratch_per_thread(plan, shape) } -> std::same_as<std::uint64_t>;  // host scratch per thread, input of `shape`
    { K::repeats(plan, plan) } -> std::same_as<bool>;   // the very same function of its input (fixed points)
    { K::in_band(plan, 0, 0) } -> std::same_as<std::optional<typename K::Plan>>;  // placed in a band's rows
    { K::choose_kernel(planned, caps, shape, label) } -> std::same_as<const KernelChoice&>;
    K::run(ex, plan, in, in, out);
    { K::run_overlapped(ex, plan, in, out) } -> std::same_as<bool>;
};

// The kinds, in the order of Step::action and StepPlan::what.
template <class... K>
struct KindList {};
using StepKinds = KindList<LinearStepKind, MorphStepKind, CombineStepKind, RankStepKind>;

namespace kind_detail {
template <class T, class List>
struct Find;
template <class T, class K, class... Rest>
struct Find<T, KindList<K, Rest...>> {
    using type = std::conditional_t<std::is_same_v<T, typename K::Action> || std::is_same_v<T, typename K::Plan>, K,
                                    typename Find<T, KindList<Rest...>>::type>;
};
template <class T>
struct Find<T, KindList<>> {
    using type = void;
};
template <class... K>
constexpr bool all_modules(KindList<K...>) {
    return (StepKindModule<K> && ...);
}
template <class... K>
constexpr bool in_variant_order(KindList<K...>) {
    return std::is_same_v<std::variant<typename K::Action...>, decltype(Step::action)> &&
           std::is_same_v<std::variant<typename K::Plan...>, decltype(StepPlan::what)>;
}
} // namespace kind_detail

static_assert(kind_detail::all_modules(StepKinds{}), "a step kind lacks a method of StepKindModule");
static_assert(kind_detail::in_variant_order(StepKinds{}), "StepKinds, Step::action and StepPlan::what list the kinds alike");

// The kind module of an action or plan type.
template <class T>
using KindOf = typename kind_detail::Find<std::decay_t<T>, StepKinds>::type;

// Calls f(Kind{}, alternative) on a step's action (Step) or plan (StepPlan), const or not.
inline auto& alternatives(Step& s) { return s.action; }
inline const auto& alternatives(const Step& s) { return s.action; }
inline auto& alternatives(StepPlan& s) { return s.what; }
inline const auto& alternatives(const StepPlan& s) { return s.what; }
template <class S, class F>
decltype(auto) on_kind(S& s, F&& f) {
    return std::visit([&](auto& x) -> decltype(auto) { return f(KindOf<decltype(x)>{}, x); }, alternatives(s));
}

// The calls the rest of apron makes.
inline Reach reach_of(const StepPlan& s) {
    return on_kind(s, [](auto k, const auto& p) { return decltype(k)::reach(p); });
}
inline bool wraps(const StepPlan& s) {
    return on_kind(s, [](auto k, const auto& p) { return decltype(k)::wraps(p); });
}
inline std::string label_of(const StepPlan& s) {
    return on_kind(s, [](auto k, const auto& p) { return decltype(k)::label(p); });
}
inline void visit_tables(const StepPlan& s, const TableVisitor& visit) {
    on_kind(s, [&](auto k, const auto& p) { decltype(k)::tables(p, visit); });
}
inline void visit_tables(Step& s, const MaskVisitor& visit) {
    on_kind(s, [&](auto k, auto& a) { decltype(k)::tables(a, visit); });
}
inline int operands_of(const Step& s) {
    return on_kind(s, [](auto k, const auto& a) { return decltype(k)::operands(a); });
}
inline std::string parameters_of(const Step& s) {
    return on_kind(s, [](auto k, const auto& a) { return decltype(k)::parameters(a); });
}
inline StepWork work_of(const Step& s) {
    return on_kind(s, [](auto k, const auto& a) { return decltype(k)::work(a); });
}
inline double gain_of(const Step& s) {
    return on_kind(s, [](auto k, const auto& a) { return decltype(k)::gain(a); });
}
inline bool bit_exact(const StepPlan& s) {
    return on_kind(s, [](auto k, const auto& p) { return decltype(k)::bit_exact(p); });
}
inline bool repeats(const StepPlan& a, const StepPlan& b) {
    return a.what.index() == b.what.index() &&
           on_kind(a, [&](auto k, const auto& p) { return decltype(k)::repeats(p, std::get<std::decay_t<decltype(p)>>(b.what)); });
}
// The step placed in a band whose row 0 is image row `first_row` (steps whose plan says where the image
// lies: the FFT's grid); nullopt when the step needs no placing.
inline std::optional<StepPlan> in_band(const StepPlan& s, int first_row, int image_height) {
    return on_kind(s, [&](auto k, const auto& p) -> std::optional<StepPlan> {
        auto placed = decltype(k)::in_band(p, first_row, image_height);
        if (!placed) return std::nullopt;
        StepPlan copy = s;
        copy.what = std::move(*placed);
        return copy;
    });
}
inline void run_step_kind(Executor& ex, const StepPlan& s, ConstImageView in, ConstImageView second, ImageView out) {
    on_kind(s, [&](auto k, const auto& p) { decltype(k)::run(ex, p, in, second, out); });
}

} // namespace apron
