// The last stage of the register-blocked kernels (direct register and tiled, fused separable): RY output
// rows of RX consecutive samples each, held in registers, finished (SPEC's rounding and saturation) and
// stored, in 4-sample vector stores where the view allows.
//
// The finish is inlined at every unrolled output sample, once per output type, so it is kept short there:
// the float plan's multiply-add, the exact plan's 32-bit integer division, and an exact plan's sum into f32
// (finish_is_scaled_sum: Sobel into f32, sums over a power of two). The exact plans' long forms (64-bit integers and doubles: a scale or
// delta that is not integral, large offsets, and exact plans into f32 that divide, such as a box as the
// intermediate step of a pipeline on an integer image) run once per output type, in a
// loop that is not unrolled, over the accumulators copied to local memory, behind a branch uniform across
// the launch. Inlined at every sample, the double form alone cost the u8 3x3 kernels on colour a fifth of
// their speed (registers), and with the 64-bit form it made most of ptxas's time.
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/linear_finish.hpp"
#include "core/pixel.hpp"

namespace apron::cuda {

// Where the kernel's outputs go and how they are finished.
struct OutputRows {
    std::byte* data;
    std::size_t pitch;
    PixelType type;
    int samples;       // samples per row (width * channels)
    int row_end;       // rows at and past it are not stored
    bool vec;          // rows 4-sample aligned: vector stores
    bool exact;        // float accumulator holding exact integers: the exact finish
    const LinearFinish& finish;
};

namespace store_detail {

// The finish of one sample: the short forms (see above), or with Long the exact plan's whole form. An int
// accumulator (exact sums past 2^24) always takes the 64-bit form.
template <class Out, bool Long, class Acc>
__device__ __forceinline__ Out finish_one(Acc a, const OutputRows& o) {
    if constexpr (std::is_same_v<Acc, int>) {
        return finish_exact<Out>(static_cast<std::int64_t>(a), o.finish);
    } else if constexpr (Long) {
        return finish_exact<Out>(static_cast<int>(a), o.finish);
    } else {
        if (o.exact) {  // the short exact forms (store_rows sends the others to Long)
            if constexpr (PixelTraits<Out>::integer) return finish_exact32_fitting<Out>(static_cast<int>(a), o.finish);
            else return finish_scaled_sum(a, o.finish);
        }
        return finish_float<Out, float>(a, o.finish);
    }
}

// Four consecutive samples of row y from sample xs (a multiple of 4): those below `samples`.
template <class Out, bool Long, class Acc>
__device__ __forceinline__ void store4(const OutputRows& o, int y, int xs, const Acc* a) {
    Out v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) v[q] = finish_one<Out, Long>(a[q], o);
    Out* row = reinterpret_cast<Out*>(o.data + std::size_t(y) * o.pitch) + xs;
    if (o.vec && xs + 4 <= o.samples) {
        if constexpr (sizeof(Out) == 1) *reinterpret_cast<uchar4*>(row) = make_uchar4(v[0], v[1], v[2], v[3]);
        else if constexpr (sizeof(Out) == 2) *reinterpret_cast<ushort4*>(row) = make_ushort4(v[0], v[1], v[2], v[3]);
        else *reinterpret_cast<float4*>(row) = make_float4(v[0], v[1], v[2], v[3]);
        return;
    }
#pragma unroll
    for (int q = 0; q < 4; ++q)
        if (xs + q < o.samples) row[q] = v[q];
}

template <bool Long, class Acc>
__device__ __forceinline__ void store4_any(const OutputRows& o, int y, int xs, const Acc* a) {
    switch (o.type) {
    case PixelType::u8: return store4<std::uint8_t, Long>(o, y, xs, a);
    case PixelType::u16: return store4<std::uint16_t, Long>(o, y, xs, a);
    case PixelType::f32: return store4<float, Long>(o, y, xs, a);
    }
}

} // namespace store_detail

// The (exact, finish) pair a float-accumulator kernel takes for a plan: an exact plan whose finish has a
// float form of the same bits (exact_finish_as_float: power-of-two divisors, sharpen, Sobel into u8) runs
// that form, without the conversion unit.
struct KernelFinish {
    bool exact;
    LinearFinish finish;
    // The float finish into the input's own type (u8 -> u8, ...): the kernels' instantiation with a fixed
    // store (store_rows<In>) takes it.
    bool fixed_same_type(PixelType in, PixelType out) const { return !exact && in == out; }
};
inline KernelFinish kernel_finish(bool exact, const LinearFinish& f, PixelType out) {
    KernelFinish k{exact, f};
    if (exact && exact_finish_as_float(f, is_integer(out), k.finish)) k.exact = false;
    return k;
}

// Rows y0 .. y0 + RY - 1 (those below row_end), samples xs .. xs + RX - 1 (those below `samples`; xs a
// multiple of 4, RX of 4).
//
// Fixed (a sample type): the kernel was instantiated for a float finish into that type (o.type and o.exact
// are not read): one finish per sample, with no branch on the output type or the exact flag. Those
// branches, inlined at every one of a thread's 32 samples with the finishes of three types and two forms,
// were most of the register kernel's code (SASS, u8 3x3: the store about 11 instructions a sample against
// 16 for the whole window arithmetic). void: every type and form, chosen at run time.
template <class Fixed = void, int RY, int RX, class Acc>
__device__ __forceinline__ void store_rows(const OutputRows& o, int y0, int xs, const Acc (&acc)[RY][RX]) {
    static_assert(RX % 4 == 0);
    using namespace store_detail;
    constexpr int groups = RX / 4;  // of 4 samples, a row
    if constexpr (!std::is_void_v<Fixed>) {
        static_assert(std::is_same_v<Acc, float>);
#pragma unroll
        for (int r = 0; r < RY; ++r) {
            const int y = y0 + r;
            if (y >= o.row_end) break;
#pragma unroll
            for (int g = 0; g < groups; ++g) {
                const int x = xs + 4 * g;
                if (x >= o.samples) break;
                Fixed v[4];
#pragma unroll
                for (int q = 0; q < 4; ++q) v[q] = finish_float<Fixed, float>(acc[r][4 * g + q], o.finish);
                Fixed* row = reinterpret_cast<Fixed*>(o.data + std::size_t(y) * o.pitch) + x;
                if (o.vec && x + 4 <= o.samples) {
                    if constexpr (sizeof(Fixed) == 1) *reinterpret_cast<uchar4*>(row) = make_uchar4(v[0], v[1], v[2], v[3]);
                    else if constexpr (sizeof(Fixed) == 2) *reinterpret_cast<ushort4*>(row) = make_ushort4(v[0], v[1], v[2], v[3]);
                    else *reinterpret_cast<float4*>(row) = make_float4(v[0], v[1], v[2], v[3]);
                } else {
#pragma unroll
                    for (int q = 0; q < 4; ++q)
                        if (x + q < o.samples) row[q] = v[q];
                }
            }
        }
        return;
    }
    if constexpr (std::is_same_v<Acc, float>) {
        if (o.exact && (o.type == PixelType::f32 ? !finish_is_scaled_sum(o.finish) : !o.finish.fits_int32)) {
            float a[RY * RX];
#pragma unroll
            for (int r = 0; r < RY; ++r)
#pragma unroll
                for (int q = 0; q < RX; ++q) a[r * RX + q] = acc[r][q];
#pragma unroll 1
            for (int g = 0; g < RY * groups; ++g) {
                const int y = y0 + g / groups, x = xs + 4 * (g % groups);
                if (y < o.row_end && x < o.samples) store4_any<true>(o, y, x, a + 4 * g);
            }
            return;
        }
    }
#pragma unroll
    for (int r = 0; r < RY; ++r) {
        const int y = y0 + r;
        if (y >= o.row_end) break;
#pragma unroll
        for (int g = 0; g < groups; ++g) {
            const int x = xs + 4 * g;
            if (x >= o.samples) break;
            store4_any<false>(o, y, x, acc[r] + 4 * g);
        }
    }
}

} // namespace apron::cuda
