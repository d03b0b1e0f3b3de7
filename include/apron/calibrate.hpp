#pragma once
// Calibration of the planner's cost model (`apron calibrate`): every linear path the backend has is timed
// on one image for a range of square mask sizes and three pixel classes (f32; u8 with float weights; u8
// with integer weights in -128..127), and the throughputs become a table (calibration/*.tsv) the planner
// interpolates. A check then times held-out cases (mask sizes between the measured ones, low-rank masks,
// another image size) with every path, and reports how far the planner's choice is from the fastest.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "apron/pipeline.hpp"

namespace apron {

struct CalibrateOptions {
    Backend backend = Backend::automatic;
    int width = 0, height = 0;          // 0: 8192 x 8192 on CUDA, 1024 x 1024 on the CPU
    std::vector<int> sides;             // mask sides; empty: the default list of the backend
    double give_up_seconds = 1.0;       // a path is not timed at larger masks once one run takes longer
    std::function<void(const std::string&)> progress;  // one line per measurement
    // Host memory the run may take (images, the steps' tables and scratch), checked before anything is
    // allocated; 0: default_memory_budget(). `apron calibrate --memory`.
    std::uint64_t memory_budget = 0;
};

// The table text (parse_cost_table's format, with a header naming the device, the date and the image).
std::string calibrate(const CalibrateOptions& options);

struct PlannerCheck {
    std::string report;  // a Markdown table: case, each path's time, the choice, its ratio to the fastest
    double worst_ratio = 1;  // the chosen path's time over the fastest path's, worst case
};
// Times held-out cases with the planner's current table (APRON_CALIBRATION or the built-in one).
PlannerCheck check_planner(const CalibrateOptions& options);

} // namespace apron
