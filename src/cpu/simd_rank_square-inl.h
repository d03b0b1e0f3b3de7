// The square sweeps of the rank filters (simd_rank.hpp: rank_sweep_square), instantiated per key type in
// simd_rank_square_u8.cpp, _u16.cpp and _f32.cpp (one file each, so that a build compiles them side by side).
// Full k x k windows with the selection compiled in and every value in a register.
//
// The window's k rows are each sorted across their k horizontal samples (loads at 0, C, .., (k-1) C); a row
// is sorted once and kept in registers while the sweep goes down, for the k outputs whose windows hold it.
// Output rows go in pairs, which share k - 1 rows: the positions of those rows' union that can hold the
// rank (rank_network.hpp: square_window_program) are merged once, and each output of the pair finishes with
// its own row (the rank of the union of sorted lists does not depend on their order, so a new row simply
// takes the register slot of one no longer needed; the row loop is unrolled so that slots are fixed). Per
// output vector: k loads, a sort of k (3 x 3: 6 min / max, 5 x 5: 18), half the window (3 x 3 median: 2,
// 5 x 5 median: 44) and the finish (8, 10), one store; nothing is written in between. A sweep takes a few rows
// (fast_rank_square.cpp: chunk_rows) and starts by sorting k - 1 rows.
//
// Included once per SIMD target, after hwy/highway.h, as Highway's -inl.h headers are (the toggle guard below).
#if defined(APRON_CPU_SIMD_RANK_SQUARE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef APRON_CPU_SIMD_RANK_SQUARE_INL_H_
#undef APRON_CPU_SIMD_RANK_SQUARE_INL_H_
#else
#define APRON_CPU_SIMD_RANK_SQUARE_INL_H_
#endif

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "cpu/simd_rank-inl.h"
#include "cpu/simd_rank.hpp"

HWY_BEFORE_NAMESPACE();
namespace apron::cpu::simd {
namespace HWY_NAMESPACE {

// The sweeps go down columns, which the hardware prefetchers do not follow: each row read (and each output
// row written) asks for the row's samples this many vectors to the right, which a later column reads (5 x 5
// on 4096^2 u8: 2.65 ms against 3.0 without, 7 x 7: 5.4 against 8.2).
constexpr std::size_t kPrefetchVectors = 3;

template <class T, int K, int R, bool kFloat>
struct Sweep {
    using Sort = rank_net::Compiled<rank_net::column_sort<K>>;
    using Window = rank_net::Compiled<rank_net::square_window<K, R>>;
    using Finish = rank_net::Compiled<rank_net::square_finish<K, R>>;
    using D = hn::ScalableTag<T>;
    using V = hn::Vec<D>;
    using Out = std::conditional_t<kFloat, float, T>;
    static constexpr int kSlots = K + 1;  // rows in registers: the two outputs of a pair read K + 1
    static constexpr int kMaxRows = rank_sweep_rows + K - 1;

    const T* const* rows;
    std::size_t step;
    int rows_out;

    // Row `row`'s K samples, sorted, into slot kSlot of the state (kSlot * K + i: its i-th smallest).
    template <int kSlot>
    HWY_INLINE void LoadRow(D d, V* state, const T* const* at, int row, std::size_t step) const {
        const T* p = at[row];
        hwy::Prefetch(p + kPrefetchVectors * hn::Lanes(d) + std::size_t(K - 1) * step);
        V v[std::size_t(Sort::inputs) + Sort::op_count];
        for (int c = 0; c < K; ++c) v[c] = hn::LoadU(d, p + std::size_t(c) * step);
        RunCompiled<Sort>(v, std::make_index_sequence<Sort::op_count>());
        for (int i = 0; i < K; ++i) state[kSlot * K + i] = v[Sort::outputs[std::size_t(i)]];
    }

    // Output row o (at dst) from the shared window and the sorted row in slot kRowSlot.
    template <int kRowSlot>
    HWY_INLINE void Finish1(D d, const V* state, const V* window, Out* dst) const {
        V v[std::size_t(Finish::inputs) + Finish::op_count];
        for (std::size_t i = 0; i < Window::output_count; ++i) v[i] = window[Window::outputs[i]];
        for (int j = 0; j < K; ++j) v[Window::output_count + std::size_t(j)] = state[kRowSlot * K + j];
        RunCompiled<Finish>(v, std::make_index_sequence<Finish::op_count>());
        __builtin_prefetch(dst + kPrefetchVectors * hn::Lanes(d), 1);
        PutKeys<kFloat>(d, v[Finish::outputs[0]], dst);
    }

    // Output rows o = base + 2 kT and o + 1 (rows o .. o + K); row r of the chunk lives in slot r % kSlots, and
    // base is a multiple of kSlots, so every slot is known here. Returns false at the end of the chunk.
    template <int kT>
    HWY_INLINE bool Pair(D d, V* state, const T* const* at, std::size_t step, int base, Out* out, std::ptrdiff_t out_stride,
                         int rows_out) const {
        const int o = base + 2 * kT;
        if (o >= rows_out) return false;
        const bool two = o + 1 < rows_out;
        Out* dst = reinterpret_cast<Out*>(reinterpret_cast<char*>(out) + o * out_stride);
        LoadRow<(2 * kT + K - 1) % kSlots>(d, state, at, o + K - 1, step);
        if (two) LoadRow<(2 * kT + K) % kSlots>(d, state, at, o + K, step);
        V w[std::size_t(Window::inputs) + Window::op_count];
        for (int i = 0; i < K - 1; ++i)
            for (int j = 0; j < K; ++j) w[i * K + j] = state[((2 * kT + 1 + i) % kSlots) * K + j];
        RunCompiled<Window>(w, std::make_index_sequence<Window::op_count>());
        Finish1<(2 * kT) % kSlots>(d, state, w, dst);
        if (two) Finish1<(2 * kT + K) % kSlots>(d, state, w, reinterpret_cast<Out*>(reinterpret_cast<char*>(dst) + out_stride));
        return two;
    }

    template <std::size_t... I>
    HWY_INLINE void Warm(D d, V* state, const T* const* at, std::size_t step, std::index_sequence<I...>) const {
        (LoadRow<int(I)>(d, state, at, int(I), step), ...);
    }
    template <std::size_t... I>
    HWY_INLINE bool Group(D d, V* state, const T* const* at, std::size_t step, int base, Out* out, std::ptrdiff_t out_stride,
                          int rows_out, std::index_sequence<I...>) const {
        return (Pair<int(I)>(d, state, at, step, base, out, out_stride, rows_out) && ...);
    }

    // The vector of columns at sample s, every output row (row o at out + o * out_stride bytes, sample s). The
    // rows' pointers at s, the step and the row count are copied into locals first: u8 stores may alias
    // anything the compiler cannot see is private, which it would read again after every store. (Two vectors
    // side by side were slower: 1.68 ms against 1.45 for 3 x 3 on 4096^2 u8, registers spilling.)
    HWY_NOINLINE void Column(std::size_t s, Out* out, std::ptrdiff_t out_stride) const {
        const D d;
        const int last = rows_out;
        const std::size_t stride = step;
        const T* at[kMaxRows];
        for (int i = 0; i < last + K - 1; ++i) at[i] = rows[i] + s;
        V state[kSlots * K];
        Warm(d, state, at, stride, std::make_index_sequence<std::size_t(K - 1)>());
        for (int base = 0; base < last; base += kSlots)
            if (!Group(d, state, at, stride, base, out + s, out_stride, last, std::make_index_sequence<std::size_t(kSlots / 2)>()))
                break;
    }
};

template <class T, int K, int R, bool kFloat>
HWY_NOINLINE void SweepT(const RankSquareSweep& a) {
    using S = Sweep<T, K, R, kFloat>;
    using Out = typename S::Out;
    const typename S::D d;
    const std::size_t N = hn::Lanes(d);
    const S sweep{reinterpret_cast<const T* const*>(a.rows), a.step, a.rows_out};
    Out* out = static_cast<Out*>(a.out);
    if (a.n < N) {  // a short segment (an edge): one vector per row into a buffer, then n samples of each row
        const std::size_t lanes = hn::MaxLanes(d);
        Out tmp[rank_sweep_rows * hn::MaxLanes(d)];
        sweep.Column(0, tmp, std::ptrdiff_t(lanes * sizeof(Out)));
        for (int o = 0; o < a.rows_out; ++o)
            std::memcpy(reinterpret_cast<char*>(out) + o * a.out_stride, tmp + std::size_t(o) * lanes, a.n * sizeof(Out));
        return;
    }
    std::size_t s = 0;
    for (; s + N <= a.n; s += N) sweep.Column(s, out, a.out_stride);
    if (s < a.n) sweep.Column(a.n - N, out, a.out_stride);  // the last vector again, overlapping
}

using SweepFn = void (*)(const RankSquareSweep&);

template <class T, int K, bool kFloat, std::size_t... R>
constexpr std::array<SweepFn, sizeof...(R)> SweepTable(std::index_sequence<R...>) {
    return {&SweepT<T, K, int(R), kFloat>...};
}

template <class T, bool kFloat>
void SweepTyped(const RankSquareSweep& a) {
#if APRON_RANK_SQUARE_MEDIANS_ONLY  // sanitizer and fuzz builds (simd_rank.hpp: rank_square_compiled)
    if (a.k == 3) return SweepT<T, 3, 4, kFloat>(a);
    if (a.k == 5) return SweepT<T, 5, 12, kFloat>(a);
#else
    static constexpr auto three = SweepTable<T, 3, kFloat>(std::make_index_sequence<9>());
    static constexpr auto five = SweepTable<T, 5, kFloat>(std::make_index_sequence<25>());
    if (a.k == 3) return three[std::size_t(a.rank)](a);
    if (a.k == 5) return five[std::size_t(a.rank)](a);
#endif
    return SweepT<T, 7, 24, kFloat>(a);
}

}  // namespace HWY_NAMESPACE
}  // namespace apron::cpu::simd
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
