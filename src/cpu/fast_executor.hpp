#pragma once
// Internal entry points of the fast CPU executor (make_cpu_executor in plan/plan.hpp is the public
// one). Each runs one step over the pool; views are host memory, in and out never alias.
#include "cpu/fast_pool.hpp"
#include "plan/plan.hpp"

namespace apron::cpu {

void run_linear(ThreadPool& pool, const LinearPlan& plan, ConstImageView in, ImageView out);
// Separable steps on u8 images in 16-bit lanes (fast_linear_8bit.cpp): exact small non-negative integer
// factors, or float factors in Q15 where the error bound proves SPEC's tolerance. Returns false (and
// does nothing) where neither applies.
bool run_separable_8bit(ThreadPool& pool, const LinearPlan& plan, ConstImageView in, ImageView out);
bool small_int_separable_applies(const LinearPlan& plan);
double fixed_point_separable_bound(const LinearPlan& plan);  // < 0.49: the Q15 form runs
double fixed_point_direct_bound(const LinearPlan& plan);     // the same for small direct masks
// The 16-bit form run_separable_8bit takes for this plan ("int16" exact, "q15" fixed point), or nullptr:
// the plan names it (cpu/capabilities.cpp).
const char* arithmetic_8bit(const LinearPlan& plan);
void run_morph(ThreadPool& pool, const MorphPlan& plan, ConstImageView in, ImageView out);
// The morphology step with a combine fused into its stores: out = clamp(other - morph(in), 0, max), or
// morph(in) - other with `minus_other` (u8 / u16, rectangles the one-pass kernel takes). Returns false (and
// does nothing) where the step takes another kernel.
bool run_morph_combine(ThreadPool& pool, const MorphPlan& plan, ConstImageView in, ConstImageView other, bool minus_other,
                       ImageView out);
void run_combine(ThreadPool& pool, const CombinePlan& plan, ConstImageView a, ConstImageView b, ImageView out);
// Rank filters (fast_rank.cpp), and the kernel they run for a plan (cpu/capabilities.cpp names it).
void run_rank(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out);
KernelChoice rank_kernel_for(const RankPlan& plan, const ImageShape& shape);

} // namespace apron::cpu
