#pragma once
// Internal entry points of the fast CPU executor (make_cpu_executor in plan/plan.hpp is the public
// one). Each runs one step over the pool; views are host memory, in and out never alias.
#include "cpu/fast_pool.hpp"
#include "plan/plan.hpp"

namespace apron::cpu {

void run_linear(ThreadPool& pool, const LinearPlan& plan, ConstImageView in, ImageView out);
// The exact separable path for u8 images with small non-negative integer factors (fast_linear_u16.cpp).
bool small_int_separable_applies(const LinearPlan& plan);
void run_small_int_separable(ThreadPool& pool, const LinearPlan& plan, ConstImageView in, ImageView out);
void run_morph(ThreadPool& pool, const MorphPlan& plan, ConstImageView in, ImageView out);
void run_combine(ThreadPool& pool, const CombinePlan& plan, ConstImageView a, ConstImageView b, ImageView out);

} // namespace apron::cpu
