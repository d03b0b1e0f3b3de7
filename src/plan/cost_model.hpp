#pragma once
// The planner's cost model: the measured throughput of each linear path, per pixel class and mask size,
// on one device (a calibration table, written by `apron calibrate`), interpolated between the measured
// mask sizes. Tables for the GPUs apron was calibrated on are checked in
// under calibration/ and compiled in; APRON_CALIBRATION=FILE replaces them (a table of this machine).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apron/pipeline.hpp"

namespace apron {

struct LinearPlan;

// Paths as the table names them: "direct", "separable", "fft", "tensor", and "combine" (adding two f32
// images, what each further low-rank term costs).
struct CostPoint {
    std::string path, cls;  // cls: pixel class, see cost_class()
    double k = 0;           // mask side (square masks)
    double gpix = 0;        // measured throughput, 1e9 output samples per second
};

struct CostTable {
    std::string backend;    // "cuda" or "cpu"
    int arch = 0;           // CUDA compute capability x 10 (90 for sm_90); 0 for the CPU
    std::string device;     // the GPU or CPU it was measured on
    std::string source;     // where it came from (a file, or "built in: calibration/NAME")
    std::vector<CostPoint> points;

    // Seconds for `samples` output samples (pixels x channels) through `path` with a mask of side k
    // (log-log interpolation between the measured sides, and the path's growth law past them: k^2 for
    // direct and tensor, k for separable, k^0.3 for the FFT); nullopt when the table has no point for the
    // path in this class or a class it falls back to.
    std::optional<double> seconds(std::string_view path, std::string_view cls, double k, double samples) const;
};

CostTable parse_cost_table(std::string_view text, const std::string& source);
std::string format_cost_table(const CostTable& t);  // the file format parse_cost_table reads

// The table for a backend: APRON_CALIBRATION when set (a file; a bad file fails naming it), else the
// built-in table measured on this very GPU model (`device`, as the driver names it: "NVIDIA H200"), else one
// of this CUDA architecture, else the nearest one (an H100's table on an H200 ranks the paths alike but
// predicts other times). nullptr when none (the CPU: fixed preferences).
const CostTable* cost_table_for(Backend backend, int cuda_arch, const std::string& device = "");

// The pixel class of a plan: "f32", "u16", "u8", or "u8-int" (an exact u8 plan whose integer weights all
// fit in a signed byte: the byte dot-product and tensor-core kernels). u16 classes fall back to f32. On
// `channels` > 1 interleaved channels the class gets "-cN" ("u8-c3"): the kernels' time per sample is not the
// same on colour (a 5x5 Gaussian on the H200: direct beats separable on gray, loses on RGB). A colour class
// falls back to its gray class where the table has no colour point.
std::string cost_class(const LinearPlan& p, int channels = 1);

// Built-in tables (generated from calibration/*.tsv at configure time).
const std::vector<std::pair<std::string, std::string>>& builtin_cost_tables();  // {name, text}

} // namespace apron
