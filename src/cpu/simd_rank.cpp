// Highway kernels of the rank filters (simd_rank.hpp): f32 order keys, the column sorts (one compiled network
// per height, values in registers) and the interpreter of selection programs for small windows without a
// compiled kernel, and the vector steps of the histogram kernels (column histograms' rows, the f32 gather).
// Compiled once per SIMD target.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu/simd_rank.hpp"

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/simd_rank.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include "cpu/simd_rank-inl.h"

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {

bool F32RankKeys(const float* HWY_RESTRICT src, std::uint32_t* HWY_RESTRICT dst, std::size_t n) {
    const hn::ScalableTag<std::uint32_t> du;
    const hn::RebindToFloat<decltype(du)> df;
    const std::size_t N = hn::Lanes(du);
    auto missing = hn::Zero(du);
    std::size_t s = 0;
    for (; s + N <= n; s += N) {
        const auto k = F32Keys(du, hn::LoadU(df, src + s));
        missing = hn::Or(missing, hn::VecFromMask(du, hn::Eq(k, hn::Set(du, rank_missing_key))));
        hn::StoreU(k, du, dst + s);
    }
    bool any = !hn::AllTrue(du, hn::Eq(missing, hn::Zero(du)));
    for (; s < n; ++s) {
        dst[s] = rank_key(src[s]);
        any = any || dst[s] == rank_missing_key;
    }
    return any;
}

// Program Prog over rows: its inputs are rows[i][s], its outputs go to out[o][s], for s < n. Rows are read
// exactly (they may be the image's own rows): whole vectors, then the last vector again where n is not a
// multiple; rows shorter than a vector are scratch rows with slack, read past n. Outputs are scratch rows.
template <class Prog, class T, class D>
HWY_INLINE void ColumnsAt(D d, const T* const* rows, T* const* out, std::size_t s) {
    hn::Vec<D> v[std::size_t(Prog::inputs) + Prog::op_count];
    for (int i = 0; i < Prog::inputs; ++i) v[i] = hn::LoadU(d, rows[i] + s);
    RunCompiled<Prog>(v, std::make_index_sequence<Prog::op_count>());
    for (std::size_t o = 0; o < Prog::output_count; ++o) hn::StoreU(v[Prog::outputs[o]], d, out[o] + s);
}

template <class Prog, class T>
HWY_NOINLINE void ColumnsT(const void* const* row_ptrs, void* const* out_ptrs, std::size_t n) {
    const hn::ScalableTag<T> d;
    const std::size_t N = hn::Lanes(d);
    // Local copies: stores of u8 keys may alias anything, so pointers read through the callers' arrays would
    // be read again after every store.
    const T* rows[Prog::inputs];
    T* out[Prog::output_count];
    for (int i = 0; i < Prog::inputs; ++i) rows[i] = static_cast<const T*>(row_ptrs[i]);
    for (std::size_t o = 0; o < Prog::output_count; ++o) out[o] = static_cast<T*>(out_ptrs[o]);
    std::size_t s = 0;
    for (; s + N <= n; s += N) ColumnsAt<Prog>(d, rows, out, s);
    if (s < n) ColumnsAt<Prog>(d, rows, out, n >= N ? n - N : s);
}

template <class T>
void SortColumnsT(int h, const void* const* rows, void* const* out, std::size_t n) {
    using namespace rank_net;
    switch (h) {
    case 2: return ColumnsT<Compiled<column_sort<2>>, T>(rows, out, n);
    case 3: return ColumnsT<Compiled<column_sort<3>>, T>(rows, out, n);
    case 4: return ColumnsT<Compiled<column_sort<4>>, T>(rows, out, n);
    case 5: return ColumnsT<Compiled<column_sort<5>>, T>(rows, out, n);
    case 6: return ColumnsT<Compiled<column_sort<6>>, T>(rows, out, n);
    case 7: return ColumnsT<Compiled<column_sort<7>>, T>(rows, out, n);
    default: std::memcpy(out[0], rows[0], n * sizeof(T));  // one row: the column is the row
    }
}

void SortColumns(int key_bytes, int h, const void* const* rows, void* const* out, std::size_t n) {
    if (key_bytes == 1) SortColumnsT<std::uint8_t>(h, rows, out, n);
    else if (key_bytes == 2) SortColumnsT<std::uint16_t>(h, rows, out, n);
    else SortColumnsT<std::uint32_t>(h, rows, out, n);
}

// The interpreter: each operation runs over a block of rank_block_bytes per value, so its dispatch costs
// little against the vectors it processes; operands are the input rows at the block, or slots.
template <class T, bool kFloat>
void RunProgramT(const RankProgramRun& r) {
    const hn::ScalableTag<T> d;
    constexpr std::size_t B = rank_block_bytes / sizeof(T);
    const std::size_t N = hn::Lanes(d);
    std::vector<const T*> value(std::size_t(r.inputs + r.op_count));
    T* slots = static_cast<T*>(r.slots);
    for (int k = 0; k < r.op_count; ++k) value[std::size_t(r.inputs + k)] = slots + std::size_t(r.slot_of[k]) * B;
    using Out = std::conditional_t<kFloat, float, T>;
    Out* out = static_cast<Out*>(r.out);
    for (std::size_t s = 0; s < r.n; s += B) {
        for (int i = 0; i < r.inputs; ++i) value[std::size_t(i)] = static_cast<const T*>(r.input_rows[i]) + s;
        for (int k = 0; k < r.op_count; ++k) {
            const rank_net::Op op = r.ops[k];
            const T* a = value[op.a];
            const T* b = value[op.b];
            T* o = const_cast<T*>(value[std::size_t(r.inputs + k)]);
            if (op.kind == rank_net::Kind::min) {
                for (std::size_t j = 0; j < B; j += N) hn::Store(hn::Min(hn::LoadU(d, a + j), hn::LoadU(d, b + j)), d, o + j);
            } else {
                for (std::size_t j = 0; j < B; j += N) hn::Store(hn::Max(hn::LoadU(d, a + j), hn::LoadU(d, b + j)), d, o + j);
            }
        }
        const T* result = value[std::size_t(r.output)];
        if (s + B <= r.n) {
            for (std::size_t j = 0; j < B; j += N) PutKeys<kFloat>(d, hn::LoadU(d, result + j), out + s + j);
        } else {
            for (std::size_t j = 0; s + j < r.n; ++j) {
                if constexpr (kFloat) out[s + j] = rank_value<float>(result[j]);
                else out[s + j] = result[j];
            }
        }
    }
}

// Perreault-Hebert's row: the window histogram slides by whole column records (vectors of counts), then the
// rank is found by the 16 coarse counts, then the 16 counts of that coarse bin.
template <class Count>
void ColumnsRowT(const Count* records, int mw, int count, int rank, Count* window, std::uint8_t* out, std::size_t step) {
    const hn::ScalableTag<Count> d;
    const std::size_t N = hn::Lanes(d);
    constexpr std::size_t R = rank_column_record;
    for (std::size_t i = 0; i < R; i += N) {
        auto sum = hn::Zero(d);
        for (int c = 0; c < mw; ++c) sum = hn::Add(sum, hn::LoadU(d, records + std::size_t(c) * R + i));
        hn::Store(sum, d, window + i);
    }
    const Count r = Count(rank);
    for (int x = 0; x < count; ++x) {
        if (x > 0) {
            const Count* add = records + std::size_t(x + mw - 1) * R;
            const Count* sub = records + std::size_t(x - 1) * R;
            for (std::size_t i = 0; i < R; i += N)
                hn::Store(hn::Sub(hn::Add(hn::Load(d, window + i), hn::LoadU(d, add + i)), hn::LoadU(d, sub + i)), d, window + i);
        }
        Count below = 0;
        int c = 0;
        while (below + window[256 + c] <= r) below = Count(below + window[256 + c++]);
        int v = c * 16;
        while (below + window[v] <= r) below = Count(below + window[v++]);
        out[std::size_t(x) * step] = std::uint8_t(v);
    }
}

void ColumnsRowU16(const std::uint16_t* records, int mw, int count, int rank, std::uint16_t* window, std::uint8_t* out, std::size_t step) {
    ColumnsRowT(records, mw, count, rank, window, out, step);
}
void ColumnsRowU32(const std::uint32_t* records, int mw, int count, int rank, std::uint32_t* window, std::uint8_t* out, std::size_t step) {
    ColumnsRowT(records, mw, count, rank, window, out, step);
}

std::size_t KeysInBin(const std::uint32_t* HWY_RESTRICT keys, std::size_t n, std::uint32_t high, std::uint32_t* HWY_RESTRICT out) {
    const hn::ScalableTag<std::uint32_t> d;
    const std::size_t N = hn::Lanes(d);
    const auto want = hn::Set(d, high);
    std::size_t found = 0;
    for (std::size_t s = 0; s < n; s += N) {
        const auto k = hn::LoadU(d, keys + s);
        auto m = hn::Eq(hn::ShiftRight<16>(k), want);
        if (s + N > n) m = hn::And(m, hn::FirstN(d, n - s));
        if (!hn::AllFalse(d, m)) found += hn::CompressStore(k, m, d, out + found);
    }
    return found;
}

void RunProgram(const RankProgramRun& r) {
    if (r.key_bytes == 1) RunProgramT<std::uint8_t, false>(r);
    else if (r.key_bytes == 2) RunProgramT<std::uint16_t, false>(r);
    else if (r.to_float) RunProgramT<std::uint32_t, true>(r);
    else RunProgramT<std::uint32_t, false>(r);
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace apron::cpu::simd {

HWY_EXPORT(F32RankKeys);
HWY_EXPORT(SortColumns);
HWY_EXPORT(RunProgram);
HWY_EXPORT(ColumnsRowU16);
HWY_EXPORT(ColumnsRowU32);
HWY_EXPORT(KeysInBin);

bool f32_rank_keys(const float* src, std::uint32_t* dst, std::size_t n) { return HWY_DYNAMIC_DISPATCH(F32RankKeys)(src, dst, n); }
void rank_sort_columns(int key_bytes, int h, const void* const* rows, void* const* out, std::size_t n) {
    HWY_DYNAMIC_DISPATCH(SortColumns)(key_bytes, h, rows, out, n);
}
void rank_run_program(const RankProgramRun& r) { HWY_DYNAMIC_DISPATCH(RunProgram)(r); }
std::size_t rank_keys_in_bin(const std::uint32_t* keys, std::size_t n, std::uint32_t high, std::uint32_t* out) {
    return HWY_DYNAMIC_DISPATCH(KeysInBin)(keys, n, high, out);
}
void rank_columns_row_u16(const std::uint16_t* records, int mw, int count, int rank, std::uint16_t* window, std::uint8_t* out,
                          std::size_t step) {
    HWY_DYNAMIC_DISPATCH(ColumnsRowU16)(records, mw, count, rank, window, out, step);
}
void rank_columns_row_u32(const std::uint32_t* records, int mw, int count, int rank, std::uint32_t* window, std::uint8_t* out,
                          std::size_t step) {
    HWY_DYNAMIC_DISPATCH(ColumnsRowU32)(records, mw, count, rank, window, out, step);
}

} // namespace apron::cpu::simd
#endif
