#pragma once
// The rank kernels of the fast CPU executor and how fast_rank.cpp picks among them (rank_kernel_for names the
// one that runs, with its detail; run_rank runs it). Every one gives the reference's bits.
//   cpu.rank_network    windows of up to 7 x 7 cells, SIMD across outputs: "3x3", "5x5", "7x7" full squares
//                       with a compiled selection (fast_rank_square.cpp: 3 x 3 and 5 x 5 every rank, 7 x 7 the
//                       median), "cells=N" any other shape or rank (fast_rank_network.cpp);
//   cpu.rank_histogram  larger u8 and u16 windows: "u8 columns" (full rectangles, Perreault-Hebert column
//                       histograms: fast_rank_columns.cpp), "u8 runs", "u16 runs" (Huang's histogram over the
//                       element's runs: fast_rank_runs.cpp);
//   cpu.rank_keyhist    larger f32 windows, "f32 runs": a histogram of the order keys' high 16 bits, then the
//                       few samples of the one bin that holds the rank (fast_rank_runs.cpp);
//   cpu.rank_select     gather and select (fast_rank.cpp), for anything else (an element without cells);
//   cpu.rank_volume     a volume's window (Axes::volume): gather and select, border maths only near a face
//                       (fast_rank_volume.cpp).
// The memory estimate mirrors their per-participant scratch (plan/kinds/rank_scratch.cpp): change both together.
#include <string>

#include "cpu/fast_pool.hpp"
#include "plan/plan.hpp"

namespace apron::cpu {

// The network kernel's detail for this plan, or "" where it does not take the plan.
std::string rank_network_detail(const RankPlan& plan);
void run_rank_network(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out);
// The compiled squares of the network kernel (fast_rank_square.cpp): detail "3x3", "5x5", "7x7".
void run_rank_square(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out);

// The histogram kernels' detail for this plan, or "" where they do not take the plan.
std::string rank_histogram_detail(const RankPlan& plan);
void run_rank_histogram(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out);
// Its two kinds: column histograms of u8 full rectangles (fast_rank_columns.cpp), Huang's histogram over the
// element's runs (fast_rank_runs.cpp).
void run_rank_columns(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out);
void run_rank_runs(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out);
// A volume's window over the whole volume `in` (fast_rank_volume.cpp).
void run_rank_volume(ThreadPool& pool, const RankPlan& plan, ConstImageView in, ImageView out);

} // namespace apron::cpu
