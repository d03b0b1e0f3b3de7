#pragma once
// Row kernels of the fast CPU executor, written once with Google Highway and compiled for every x86
// level (SSE4, AVX2, AVX-512; plus a portable fallback); the best one for the running machine is
// chosen at the first call (HWY_DYNAMIC_DISPATCH). Everything here works on plain rows of samples:
// interleaved channels are the caller's business (a horizontal tap is an offset of i * channels).
#include <cstddef>
#include <cstdint>

#include "apron/image.hpp"
#include "core/linear_finish.hpp"

namespace apron::cpu::simd {

// Kernels marked "over-computes" read and write whole vectors: up to `slack` elements past n must be
// addressable in every input and output row (their values are ignored).
constexpr std::size_t slack = 64;

// dst[k] = src[k] converted, for k < n; src holds samples of type t. Returns false when some sample is
// not finite (only f32 can be), so callers can keep such rows away from zero-weight products.
bool widen(PixelType t, const void* src, float* dst, std::size_t n);
bool widen(PixelType t, const void* src, double* dst, std::size_t n);

// out[s] = sum over k < count of w[k] * taps[k][s], for s < n, in fused multiply-adds, tap by tap
// in order. Over-computes. With count == 0, out is zero.
void weighted_sum(const float* const* taps, const float* w, std::size_t count, float* out, std::size_t n);
void weighted_sum(const double* const* taps, const double* w, std::size_t count, double* out, std::size_t n);

// True when every one of the n samples is finite.
bool all_finite(const float* p, std::size_t n);

// Several output rows at once (rows = R = 1..max_rows): entry k adds w[k * R + q] * taps[k][s] to
// output row q. Entries come by ring row; bounds (2R values) say where the ring rows that reach only
// part of the group lie: entries [bounds[i], bounds[i + 1]) for i < R - 1 reach rows 0..i, [bounds[R - 1],
// bounds[R]) reach every row, [bounds[R + i], bounds[R + i + 1]) for i < R - 1 reach rows i + 1..R - 1
// (bounds[2R - 1] = count). FMAs go in entry order, so each row gets the same bits as weighted_sum over
// its own taps whatever the group. Zero weights inside the reach add exact zeros, as long as the
// inputs are finite (0 * inf is NaN: callers sum rows near non-finite input one at a time).
constexpr int max_rows = 4;
template <class F>
struct GroupArgs {
    int rows = 1;
    const F* const* taps = nullptr;
    const F* w = nullptr;
    std::size_t count = 0;
    const std::size_t* bounds = nullptr;
};
// outs[q][s] = the sum, for s < n. Over-computes.
void weighted_sum_rows(const GroupArgs<float>& g, float* const* outs, std::size_t n);
void weighted_sum_rows(const GroupArgs<double>& g, double* const* outs, std::size_t n);
// The float path with the finish fused in: outs[q][s] = finish_float<Out, float>(sum, f) for s < n
// exactly (outs are rows of the output type `out`; no over-compute on the outputs). `stream`: see
// extremum.
void weighted_sum_rows_finish(const GroupArgs<float>& g, PixelType out, void* const* outs, std::size_t n,
                              const LinearFinish& f, bool stream = false);

// dst[s] = finish_exact<Out>(int64(sum[s]), f) for s < n, bit for bit. sum holds integers with
// |sum| <= bound; the kernel picks f32, f64 or scalar arithmetic from the bound so the result is exact.
void finish_exact_row(PixelType out, const float* sum, void* dst, std::size_t n, const LinearFinish& f, double bound,
                      bool stream = false);
void finish_exact_row(PixelType out, const double* sum, void* dst, std::size_t n, const LinearFinish& f, double bound,
                      bool stream = false);

// The 8-bit exact separable path. out[s] = sum over k < count of w[k] * src[offsets[k] + s], for s < n
// exactly (no over-compute), in u16 lanes: the caller guarantees 255 * sum(w) < 2^16.
void sum_taps_u8(const std::uint8_t* src, const std::size_t* offsets, const std::uint16_t* w, std::size_t count,
                 std::uint16_t* out, std::size_t n);
// out[s] = float(sum over k < count of w[k] * rows[k][s]), for s < n exactly; every sum < 2^16.
void sum_rows_u16(const std::uint16_t* const* rows, const std::uint16_t* w, std::size_t count, float* out, std::size_t n);
// The same sums finished into the output row dst (exactly n samples): dst[s] = finish_exact<Out>(sum, f)
// bit for bit. Only where u16_finish_fuses says so (u8/u16 output, integer rounding, every value of the
// finish below 2^22 given |sum| <= bound).
bool u16_finish_fuses(PixelType out, const LinearFinish& f, double bound);
void sum_rows_u16_finish(const std::uint16_t* const* rows, const std::uint16_t* w, std::size_t count, PixelType out,
                         void* dst, std::size_t n, const LinearFinish& f, bool stream);

// The 8-bit exact paths in 16-bit lanes (fast_linear_8bit.cpp, simd_small_int.cpp). Sums are formed
// modulo 2^16 (wrapping adds, subtracts and low-half products), so every partial sum may wrap: only the
// final sum S must be known to lie in a range [smin, smax] narrower than 2^16, which then recovers S
// from its 16 bits. Taps come in groups of one weight: sum over groups g of w[g] * (sum of the rows of
// g), the rows read at sample s (u8 or 16-bit samples, as the call says). Kernels read whole vectors:
// up to `slack` elements past n of every row must be readable.
struct Taps16 {
    const void* const* rows = nullptr;     // per tap: its first sample
    const std::uint32_t* end = nullptr;    // group g holds taps [end[g - 1], end[g]) (end[-1] = 0)
    const std::int16_t* w = nullptr;       // the weight of each group (modulo 2^16)
    std::size_t groups = 0;
};
// The exact finish (finish_exact of core/linear_finish.hpp) of a sum S in [smin, smax] in 16-bit lanes,
// without floats: m = S + add (mod 2^16) lies in [0, 65535] for every S of the range; the quotient
// q = floor(m / d) by a shift or a multiply-high by a reciprocal (exact for m <= mmax, see
// int_finish16); `tie` (d even) rounds the halves to even; then q + delta, clamped to the output.
struct IntFinish16 {
    int kind = 0;               // 0: q = m (d = 1), 1: q = m >> shift, 2: q = mulhi(m, magic) >> shift,
                                // 3: 17-bit reciprocal 2^16 + magic: t = mulhi(m, magic), q = (t + (m - t) / 2) >> (shift - 1)
    bool tie = false;
    std::uint16_t add = 0, d = 1, magic = 0;
    int shift = 0;
    std::uint16_t delta_add = 0, delta_sub = 0;  // q + delta = q + delta_add - delta_sub, saturating
    std::uint32_t mmax = 0;     // the largest m of the range
};
// The finish for sums in [smin, smax] into `out` (u8 or u16), or false where it does not apply (no
// integer rounding, a denominator past 2^16 - 1, a range too wide for one 16-bit value).
bool int_finish16(const LinearFinish& f, PixelType out, std::int64_t smin, std::int64_t smax, IntFinish16& r);
// out[s] = S (mod 2^16) for s < n; u8_in: the rows hold u8 samples, else 16-bit. Over-computes (up to
// slack elements past n of out are written).
void sum_taps16(bool u8_in, const Taps16& t, std::int16_t* out, std::size_t n);
// dst[s] = the finish of S for s < n exactly (dst is a row of `out`, u8 or u16); `sums`: when not
// null, also receives S (mod 2^16), over-computed as by sum_taps16.
void sum_taps16_finish(bool u8_in, const Taps16& t, const IntFinish16& f, PixelType out, void* dst, std::size_t n,
                       bool stream, std::int16_t* sums = nullptr);
// A running column sum (a box): sums[s] += add[s] - sub[s] (mod 2^16), then dst[s] = its finish, s < n.
void running_sum16_finish(std::int16_t* sums, const std::int16_t* add, const std::int16_t* sub, const IntFinish16& f,
                          PixelType out, void* dst, std::size_t n, bool stream);
// out[s] = float(S) where S = base + ((sums[s] - base) mod 2^16): the sums of a range [base, base + 65535].
void sums16_to_float(const std::int16_t* sums, std::int32_t base, float* out, std::size_t n);

// Boxes on u8 into u8 (fast_linear_8bit.cpp, Box16Job): the exact sums of the 16-bit forms with every
// weight 1, in blocks of box16_block() samples (one u8 vector; 1 on the scalar target) whose 16-bit rows
// keep each block's even samples, then its odd ones (simd_small_int.cpp). Blocks start at s0 + k B,
// s0 in (-B, 0] (the samples before 0 are computed and dropped); a 16-bit row holds block k at word k B
// (rows: 64-byte aligned, at least the blocks reaching n). u8 sources by segments of blocks: block s
// reads base[s + i step + t], i < taps, t < B, from the first segment with s < end.
std::size_t box16_block();
struct Box16Source {
    const std::uint8_t* base = nullptr;
    std::ptrdiff_t end = 0;
};
struct Box16Row {
    const Box16Source* src = nullptr;
    std::size_t taps = 1, step = 1;  // the box's width, the channels
    std::ptrdiff_t s0 = 0;
    std::size_t n = 0;               // samples of the output row
    std::size_t prefetch = 0;        // each block prefetches the u8 source this many bytes ahead
};
// out = the row sums (the row pass).
void box16_rows(const Box16Row& r, std::int16_t* out);
// sums = the sum of `count` 16-bit rows; dst[s] = its finish (u8) for s < n (r.src unused).
void box16_first(const Box16Row& r, const std::int16_t* const* rows, std::size_t count, std::int16_t* sums,
                 const IntFinish16& f, std::uint8_t* dst, bool stream);
// out = the row sums; sums += out - sub; dst[s] = the finish of sums, s < n.
void box16_running(const Box16Row& r, std::int16_t* out, const std::int16_t* sub, std::int16_t* sums,
                   const IntFinish16& f, std::uint8_t* dst, bool stream);

// The 8-bit float separable path in Q15 fixed point (fast_linear_8bit.cpp has the error bound).
// dst[s] = src[s] << 7 (Q7 pixels).
void widen_q7(const std::uint8_t* src, std::int16_t* dst, std::size_t n);
// out[s] = sum over k of round(src[offsets[k] + s] * w[k] / 2^15) in i16 (vpmulhrsw per product), for
// s < n exactly; the caller keeps every partial sum inside i16.
void sum_taps_q15(const std::int16_t* src, const std::size_t* offsets, const std::int16_t* w, std::size_t count,
                  std::int16_t* out, std::size_t n);
// The same over rows, then the Q7 sum rounded half up to a pixel and saturated to u8.
void sum_rows_q15(const std::int16_t* const* rows, const std::int16_t* w, std::size_t count, std::uint8_t* dst,
                  std::size_t n, bool stream);

// Morphology: dst[s] = min (or max) over k < count of rows[k][s], for s < n exactly (no over-compute).
// dst may be one of the rows (each element is read before it is written). Rows hold samples of type t.
// `stream`: dst is a row of a large output that nothing reads soon; written with non-temporal stores
// where aligned (call flush_streams before handing the output over).
void extremum(PixelType t, bool max, const void* const* rows, std::size_t count, void* dst, std::size_t n,
              bool stream = false);
void flush_streams();

// f32 morphology on order keys (core/morph_value.hpp): dst[s] = morph_key(src[s], max) for s < n.
void morph_keys(bool max, const float* src, std::int32_t* dst, std::size_t n);
// extremum over rows of order keys; `to_float`: dst is a row of f32 and gets morph_key_value of the
// result (NaN where every key was a missing sample), else a row of keys.
void extremum_keys(bool max, const void* const* rows, std::size_t count, void* dst, std::size_t n, bool to_float,
                   bool stream = false);

// Small rectangles in one pass over memory (simd_morph_rect-inl.h, instantiated per type in
// simd_morph_rect_*.cpp): one task of flat erode / dilate with a full mw x mh element, mw and mh <= max_small_rect. Output row o of the task is the extremum over the
// mh virtual rows o .. o + mh - 1 of `rows` and, in each, over the mw padded pixels of its window.
constexpr int max_small_rect = 8;
struct MorphRectTask {
    PixelType type = PixelType::u8;  // of input and output; f32 runs on order keys (morph_key)
    bool max = false;                // dilate
    bool stream = false;             // non-temporal stores for the output rows (see extremum)
    int channels = 1, mw = 1, mh = 1;
    int rows_out = 0;                // output rows
    const void* const* rows = nullptr;  // rows_out + mh - 1 input rows (their column 0), nullptr: all fill
    void* out = nullptr;             // first output sample of the task in its first row
    std::ptrdiff_t out_stride = 0;   // bytes from one output row to the next
    int width = 0;                   // of the image, pixels
    int pixels = 0;                  // output pixels per row: left, then middle, then the rest (right)
    int left = 0, middle = 0;        // middle: outputs whose window lies inside the image, read in place
    int first_col = 0;               // image column of output 0's first window pixel (may be < 0)
    const int* cols = nullptr;       // source column of each of the pixels + mw - 1 padded pixels, -1: fill
    std::int64_t fill = 0;           // padded value where a column is -1 or a row nullptr (f32: its key)
    void* ring = nullptr;            // (mh + 1) rows of ring_stride elements (int32 for f32, else the type)
    std::size_t ring_stride = 0;     // >= row_stride(pixels * channels)
    void* pad = nullptr;             // 2 rows of pad_stride elements of the ring's type
    std::size_t pad_stride = 0;      // >= max((pixels + mw - 1) * channels, 512)
    // A combine step fused into the stores (u8 / u16 only; gradient, top-hat, black-hat): with `other`, each
    // output sample is the saturated difference other - v (or v - other with `minus_other`), v the extremum
    // and other the sample of the image `other` at the same place: clamp(other - v, 0, max), exactly what
    // the combine 1*A - 1*B gives. Row o of `other` (its first sample of the task) at other + o * other_stride
    // bytes; `other` never overlaps the output.
    const void* other = nullptr;
    std::ptrdiff_t other_stride = 0;
    bool minus_other = false;
};
void morph_rect(const MorphRectTask& t);

} // namespace apron::cpu::simd
