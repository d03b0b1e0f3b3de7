#pragma once
// The cases users run, shared by bench_gpu and bench_cpu: 1, 3 and 4 interleaved channels, u8/u16/f32, and
// structuring elements of every shape (rect, ellipse, disk, cross, random 0/1). The peers (bench/peers/)
// build the same cases under the same names, so bench/report.py joins the rows on
// (op, channels, type, shape):
//   correlate      "3x3", "5x5"          random float weights in (-1, 1) / k, border nearest (NPP's replicate)
//   correlate_int  "3x3", "5x5"          integer weights -3..3 over 8 (exact plans on u8/u16), border nearest
//   gaussian       "sigma=S"             gaussian:sigma=S,border=nearest (width 2 ceil(3 S) + 1: 0.6 is 5x5 and
//                                        2 is 13x13, NPP's FilterGaussBorder 5x5 and 13x13)
//   box            "5x5"                 box:width=5,border=nearest
//   sharpen        "3x3"                 sharpen:border=nearest
//   sobel, correlate_int "3x3>f32"       u8 into f32 (an exact plan's double finish)
//   dilate, erode  "rect:7x7", "ellipse:7x7", "cross:7x7", "disk:3", "random:7x7", ... and the 15, 31, 63 sides
//                                        (disk:R is 2R+1 wide), outside pixels ignored
// param: the mask or element side (gaussian: sigma).
//
// The random element of side k is the one every peer builds: x = k, then per cell in row-major order
// x = (1103515245 x + 12345) mod 2^31, cell = (x >> 16) & 1; the centre cell is always set.
//
// Default (a GPU call of a few minutes): every family on u8 with 1, 3 and 4 channels; correlate with float
// masks and gaussian sigma 0.6 and 2 also on u16 and f32; elements of sides 7 and 15; erode only rect:15x15
// and disk:7. full: every family on u8, u16 and f32 (correlate_int: u8 and u16), erode on every element, and
// elements of sides 31 and 63 too.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "apron/image.hpp"
#include "apron/ops.hpp"

namespace apron::bench {

struct UserCase {
    std::string op, shape;
    double param = 0;      // mask or element side; gaussian: sigma
    int channels = 1;
    PixelType type = PixelType::u8;
    OpProgram program;
    double taps = 0;       // multiply-adds per sample of the direct algorithm; 0: bound by memory
    std::optional<PixelType> out = {};  // the output type, if not the input's (the shape names it)
};

inline Mask random_element(int k) {
    std::vector<double> w(std::size_t(k) * k);
    std::uint32_t x = std::uint32_t(k);
    for (double& v : w) {
        x = (1103515245u * x + 12345u) & 0x7fffffffu;
        v = double((x >> 16) & 1u);
    }
    w[std::size_t(k / 2) * k + k / 2] = 1;
    return Mask(k, k, w);
}

// Random float (|w| < 1/k) or integer (-3..3, scale 1/8) weights, border nearest: the peers' kernels.
inline OpProgram user_correlation(int k, bool integer) {
    std::mt19937 rng{unsigned(k)};
    std::uniform_real_distribution<double> real(-1, 1);
    std::vector<double> w(std::size_t(k) * k);
    for (double& v : w) v = integer ? int(rng() % 7) - 3 : real(rng) / k;
    LinearStep step{Mask(k, k, w), BorderMode::nearest};
    if (integer) step.scale = 0.125;
    const std::string side = std::to_string(k) + "x" + std::to_string(k);
    return OpProgram{(integer ? "correlate_int " : "correlate ") + side, {Step{step}}};
}

// An element's spec in the CSV's words ("disk:3", "random:7x7") and its program.
inline OpProgram user_morph(const std::string& op, const std::string& shape) {
    if (shape.rfind("random:", 0) == 0) {
        const int k = std::stoi(shape.substr(7));
        MorphStep m{random_element(k), op == "dilate" ? MorphKind::dilate : MorphKind::erode};
        return OpProgram{op + " " + shape, {Step{m}}};
    }
    return parse_operation(op + ":se=" + shape);
}

inline std::vector<UserCase> user_cases(bool full) {
    std::vector<UserCase> out;
    const std::vector<PixelType> all_types = {PixelType::u8, PixelType::u16, PixelType::f32};
    const std::vector<PixelType> u8_only = {PixelType::u8};
    auto add = [&](const std::string& op, const std::string& shape, double param, const OpProgram& program,
                   double taps, const std::vector<PixelType>& types) {
        for (PixelType t : types)
            for (int c : {1, 3, 4}) out.push_back({op, shape, param, c, t, program, taps});
    };
    for (int k : {3, 5}) {
        const std::string side = std::to_string(k) + "x" + std::to_string(k);
        add("correlate", side, k, user_correlation(k, false), double(k) * k, all_types);
        add("correlate_int", side, k, user_correlation(k, true), double(k) * k,
            full ? std::vector<PixelType>{PixelType::u8, PixelType::u16} : u8_only);
    }
    for (double s : {0.6, 1.0, 2.0, 4.0, 8.0}) {
        char shape[32], spec[64];
        std::snprintf(shape, sizeof shape, "sigma=%g", s);
        std::snprintf(spec, sizeof spec, "gaussian:%s,border=nearest", shape);
        add("gaussian", shape, s, parse_operation(spec), 0, full || s == 0.6 || s == 2.0 ? all_types : u8_only);
    }
    add("box", "5x5", 5, parse_operation("box:width=5,border=nearest"), 0, full ? all_types : u8_only);
    // Exact plans into f32 (derivatives of integer images; the intermediate steps of a pipeline): the
    // kernels' long finish (doubles), out of their unrolled stores.
    for (int c : {1, 3, 4}) {
        out.push_back({"sobel", "3x3>f32", 3, c, PixelType::u8, parse_operation("sobel:dx=1,border=nearest"), 9, PixelType::f32});
        out.push_back({"correlate_int", "3x3>f32", 3, c, PixelType::u8, user_correlation(3, true), 9, PixelType::f32});
    }
    add("sharpen", "3x3", 3, parse_operation("sharpen:border=nearest"), 9, full ? all_types : u8_only);
    std::vector<int> sides = {7, 15};
    if (full) sides.insert(sides.end(), {31, 63});
    for (const char* op : {"dilate", "erode"})
        for (int k : sides) {
            const std::string sq = std::to_string(k) + "x" + std::to_string(k);
            for (const std::string& shape : {"rect:" + sq, "ellipse:" + sq, "cross:" + sq,
                                             "disk:" + std::to_string(k / 2), "random:" + sq}) {
                const bool erode_default = k == 15 && (shape == "rect:15x15" || shape == "disk:7");
                if (std::string(op) == "erode" && !full && !erode_default) continue;
                add(op, shape, k, user_morph(op, shape), 0, full ? all_types : u8_only);
            }
        }
    return out;
}

} // namespace apron::bench
