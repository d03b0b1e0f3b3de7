// Large rank windows on the fast CPU executor (fast_rank.hpp): sliding histograms, whose cost per output does
// not grow with the window's area. Full rectangles on u8 keep a histogram per column (fast_rank_columns.cpp);
// everything else slides one histogram over the element's runs (fast_rank_runs.cpp).
#include "cpu/fast_rank.hpp"
#include "plan/kinds/rank_kind.hpp"

namespace apron::cpu {
namespace {

// The windows the network kernel does not take (plan/kinds/rank_kind.cpp: more than 7 x 7 cells).
bool histogram_takes(const RankPlan& p) {
    const Mask& e = p.step.element;
    return p.count >= 1 && !(p.count <= rank_network_cells && e.width <= 7 && e.height <= 7);
}

bool full_rectangle(const RankPlan& p) { return p.count == p.step.element.width * p.step.element.height; }

} // namespace

std::string rank_histogram_detail(const RankPlan& plan) {
    if (!histogram_takes(plan)) return "";
    if (plan.type == PixelType::u8) return full_rectangle(plan) ? "u8 columns" : "u8 runs";
    return plan.type == PixelType::u16 ? "u16 runs" : "f32 runs";
}

void run_rank_histogram(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out) {
    if (plan.type == PixelType::u8 && full_rectangle(plan)) return run_rank_columns(pool, plan, in, out);
    run_rank_runs(pool, plan, in, out);
}

} // namespace apron::cpu
