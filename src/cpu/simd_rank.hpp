#pragma once
// Highway kernels of the rank filters (simd_rank.cpp, simd_rank_square*.cpp), compiled once per SIMD target
// and chosen at the first call. They work on rows of order keys (core/rank_value.hpp): u8 and u16 samples are
// their own keys (key_bytes 1 and 2), f32 samples become uint32 keys (key_bytes 4) where NaN is the largest
// key. Every kernel is min / max only, so its result is one input key, bit for bit.
//
// Rows are scratch rows with room to over-read: every input row must be readable for
// rank_row_slack_bytes past the samples a kernel is asked for. Outputs are written exactly (n samples).
#include <cstddef>
#include <cstdint>

#include "cpu/rank_network.hpp"

namespace apron::cpu::simd {

constexpr std::size_t rank_row_slack_bytes = 1024;

// dst[s] = rank_key(src[s]) for s < n; returns whether some sample is NaN (a missing key).
bool f32_rank_keys(const float* src, std::uint32_t* dst, std::size_t n);

// Column sorts, h = 1 .. 7 rows: out[i][s] = the i-th smallest of rows[0][s] .. rows[h-1][s], s < n. Rows are
// read exactly where n is at least a vector (they may be the image's), past n otherwise; outs have slack.
void rank_sort_columns(int key_bytes, int h, const void* const* rows, void* const* out, std::size_t n);

// Full k x k squares in one sweep down each vector of columns (simd_rank_square-inl.h), every value in a
// register: each input row's k horizontal samples are sorted once (shared by the k outputs whose windows
// hold the row), and each pair of output rows selects its ranks from the rows' sorted lists by compiled
// programs. Whether this (k, rank) has one: 3 x 3 and 5 x 5 every rank, 7 x 7 the median. Sanitizer and fuzz
// builds (APRON_RANK_SQUARE_MEDIANS_ONLY) compile the medians alone: the sweeps are long straight-line code,
// and instrumented, 35 of them per key type took clang over an hour (the other ranks take the general path).
bool rank_square_compiled(int k, int rank);
constexpr int rank_sweep_rows = 32;  // the most output rows one sweep takes
struct RankSquareSweep {
    int key_bytes = 1, k = 3, rank = 4;
    bool to_float = false;     // f32 keys in, f32 values out
    const void* const* rows = nullptr;  // rows_out + k - 1 rows: output sample s of row o reads rows[o + j][s + c * step]
    std::size_t step = 1;      // channels
    void* out = nullptr;       // output row 0, sample 0
    std::ptrdiff_t out_stride = 0;  // bytes between output rows
    int rows_out = 0;          // 1 .. rank_sweep_rows
    std::size_t n = 0;         // output samples per row, written exactly; rows are read exactly where n >= a vector
};
void rank_sweep_square(const RankSquareSweep& s);

// Any program (rank_network.hpp), interpreted over blocks of rank_block_bytes of keys per value. Input v
// of output sample s is inputs[v][s]; op k's result goes to slot slot_of[k] of `slots` (rank_block_bytes
// each, 64-byte aligned; slots that are free again are reused). out[s] = the program's one output, s < n.
constexpr std::size_t rank_block_bytes = 256;
struct RankProgramRun {
    int key_bytes = 1;
    const rank_net::Op* ops = nullptr;
    int op_count = 0, inputs = 0, output = 0;
    const std::uint16_t* slot_of = nullptr;
    void* slots = nullptr;
    const void* const* input_rows = nullptr;
    void* out = nullptr;
    std::size_t n = 0;
    bool to_float = false;
};
void rank_run_program(const RankProgramRun& r);

// Column histograms of u8 samples (Perreault-Hebert, fast_rank_columns.cpp): each column's record holds
// 256 counts by value, then 16 by value / 16, then padding, rank_column_record counts in all, of type u16
// (windows of fewer than 65536 cells) or u32. One output row: the window histogram starts as the sum of
// records [0, mw), output x (x < count) is the sample of rank `rank` of the histogram after x slides, a slide
// adding record x + mw - 1 and taking away record x - 1. out[x * step] = that sample. `window`: scratch of
// one record, 64-byte aligned.
constexpr std::size_t rank_column_record = 288;
void rank_columns_row_u16(const std::uint16_t* records, int mw, int count, int rank, std::uint16_t* window, std::uint8_t* out,
                          std::size_t step);
void rank_columns_row_u32(const std::uint32_t* records, int mw, int count, int rank, std::uint32_t* window, std::uint8_t* out,
                          std::size_t step);

// The f32 key histograms' last step (fast_rank_runs.cpp): appends to out the keys of keys[0, n) whose high
// half is `high`, and returns how many. Reads whole vectors (keys has slack to read), writes up to a vector
// past the count.
std::size_t rank_keys_in_bin(const std::uint32_t* keys, std::size_t n, std::uint32_t high, std::uint32_t* out);

} // namespace apron::cpu::simd
