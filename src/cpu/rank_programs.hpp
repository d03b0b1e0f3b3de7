#pragma once
// Selection and sorting programs (rank_network.hpp) fixed at compile time, for the kernels that keep every
// value in a register (simd_rank.cpp): Compiled<make> holds make()'s operations and outputs in arrays, each
// program built once per translation unit whatever the SIMD targets.
#include <array>
#include <cstddef>

#include "cpu/rank_network.hpp"

namespace apron::cpu::rank_net {

template <Program (*Make)()>
struct Compiled {
    static constexpr int inputs = Make().inputs;
    static constexpr std::size_t op_count = Make().ops.size();
    static constexpr std::size_t output_count = Make().outputs.size();
    static constexpr std::array<Op, op_count> ops = [] {
        const Program p = Make();
        std::array<Op, op_count> a{};
        for (std::size_t i = 0; i < op_count; ++i) a[i] = p.ops[i];
        return a;
    }();
    static constexpr std::array<int, output_count> outputs = [] {
        const Program p = Make();
        std::array<int, output_count> a{};
        for (std::size_t i = 0; i < output_count; ++i) a[i] = p.outputs[i];
        return a;
    }();
};

template <int K, int R>
constexpr Program square_window() {
    return square_window_program(K, R);
}
template <int K, int R>
constexpr Program square_finish() {
    return square_finish_program(K, R);
}
template <int H>
constexpr Program column_sort() {
    return sort_program(H);
}

} // namespace apron::cpu::rank_net
