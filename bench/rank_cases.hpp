#pragma once
// The rank-filter cases of the GPU benchmark (bench_gpu --cases rank), shared with the test that holds every
// plan to the kernel it runs (tests/gpu_test_rank.cpp). The peers build the same cases under the same names
// (op, type, channels, shape), so bench/report.py joins their rows:
//   median  "rect:3x3", "rect:5x5", "rect:7x7", "rect:31x31", "disk:15"   u8, 1 and 3 channels
//   median  "rect:3x3"                                                    u16 and f32, 1 channel
// apron's border is its default, reflect (SciPy's; CuPy's median_filter runs with mode='reflect'). NPP's
// nppiFilterMedian has no border mode: it is timed on the interior ROI (the image less the window's half on
// every side), as NPP users call it (bench/peers/npp_rank_cases.cuh).
// param: the element's side (disk:15 is 31 wide).
#include <string>
#include <vector>

#include "apron/image.hpp"
#include "apron/ops.hpp"

namespace apron::bench {

struct RankCase {
    std::string op, shape;
    int param = 0;
    int channels = 1;
    PixelType type = PixelType::u8;
    OpProgram program;
};

inline std::vector<RankCase> rank_cases() {
    std::vector<RankCase> out;
    auto add = [&](const std::string& shape, int side, int channels, PixelType t) {
        out.push_back({"median", shape, side, channels, t, parse_operation("median:se=" + shape)});
    };
    for (int c : {1, 3}) {
        for (int k : {3, 5, 7, 31}) add("rect:" + std::to_string(k) + "x" + std::to_string(k), k, c, PixelType::u8);
        add("disk:15", 31, c, PixelType::u8);
    }
    add("rect:3x3", 3, 1, PixelType::u16);
    add("rect:3x3", 3, 1, PixelType::f32);
    return out;
}

} // namespace apron::bench
