// Direct 2D correlation of u8 images with byte-weight masks (exact plans, every weight in [-128, 127],
// masks 1..31 x 1..31) as integer matrix products on the tensor cores: mma.m16n8k32 multiplies 16 x 32
// unsigned bytes by 32 x 8 signed bytes into 16 x 8 int32 sums, exactly. The sum is the exact integer sum,
// so finish_exact32 gives the same bits as every other backend.
//
// The product. For mask row j, a 16 x 8 output tile (rows y_m, columns x0 + n) is
//     D[m][n] += sum_kk In[y_m + j - ay][x0 - ax + kk] * T_j[kk][n],   T_j[kk][n] = w[j][kk - n] (0 <= kk-n < kw),
// A = 16 image rows of 32 consecutive pixels, B = the Toeplitz band of the mask row. 8 + kw - 1 <= 32 columns
// fit one k32 product up to kw = 25; 26..31 add an m16n8k16 over the next 16 columns, and kw <= 9 needs only
// that k16 one ("span" 16, 32 or 48 columns).
//
// The tile rows are interleaved: fragment row m of tile t (0 <= t < 8) is output row y0 + 8m + t, so the
// A rows for (tile t, mask row j) are staged rows 8m + t + j, and every thread's A registers for "step"
// s = t + j serve all the (t, j) pairs on that diagonal: one fragment load feeds up to 8 mma. Mask rows go
// in groups of 8 whose B fragments stay in registers (8 x 1..3), so a group costs (8 + 8 - 1) A loads
// for 64 mma. A fragments are 32-bit LDS of 4 consecutive bytes (a0 row 8*gid + s, cols 4*tig; a1 row
// 8*(gid+8) + s; a2/a3 16 columns on), conflict-free because staged rows are skewed by 16 bytes every 8
// rows, so the eight rows 8*gid + s of one load start 4 banks apart.
//
// A block is 8 warps side by side: 64 output columns x 128 rows, staged once in shared memory with the
// apron (interior blocks by aligned word loads and a funnel shift for the column phase; edge blocks through
// map_index, one row and one column map per block). The B fragments of every mask row are built once per
// block in shared memory from the padded weight rows (a __grid_constant__ parameter).
//
// Cost per warp pass (1024 outputs: 8 tiles of 16 x 8), kh mask rows:
//   15x15: 120 k32 mma, 146 LDS.32 (1.2 per mma, 156 B of shared memory per mma, 18 B per output)
//   25x25: 200 k32 mma, 262 LDS.32 (1.3 per mma, 168 B per mma, 33 B per output)
//   31x31: 248 k32 + 248 k16 mma, 447 LDS.32 (1.2 per k32-equivalent, 154 B, 56 B per output)
// plus one finish_exact32 and half a 2-pixel store per output. At ~128 B/clk/SM shared memory carries
// ~0.8 mma/clk/SM, above what mma.sync issues on an H100 (~0.5 m16n8k32/clk/SM assumed): the tensor pipe,
// then the finish's issue slots, are the limits, not shared memory.
#include "core/overrides.hpp"
#include "cuda/direct_imma.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "apron/errors.hpp"
#include "core/border_index.hpp"
#include "core/linear_finish.hpp"
#include "core/pixel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_view.hpp"

namespace apron::cuda {
namespace {

constexpr int warps = 8, threads = 32 * warps;
constexpr int tiles = 8;                  // m16n8 tiles per warp, rows interleaved with this stride
constexpr int group = 8;                  // mask rows whose B fragments are live at once
constexpr int block_w = 8 * warps;        // 64 output columns
constexpr int block_h = 16 * tiles;       // 128 output rows
constexpr int max_k = 31;
constexpr int max_rows = block_h + max_k - 1;  // staged rows
static_assert(tiles == 8, "the skew of the staged rows (16 bytes every 8 rows) assumes an interleave of 8");

// Staged layout for a span of 16, 32 or 48 columns per n8 tile.
template <int Span>
struct Layout {
    static constexpr int regs = Span / 16;                                   // B registers per mask row
    static constexpr int pitch = (8 * (warps - 1) + Span + 15) / 16 * 16;   // bytes per staged row: 80, 96, 112
    static constexpr int band = 8 * pitch + 16;                              // 8 rows and the skew
    static constexpr int bytes = (max_rows + 7) / 8 * band;
    static __device__ __forceinline__ int offset(int r, int c) { return (r >> 3) * band + (r & 7) * pitch + c; }
};

// Mask rows as signed bytes, weight i of row j at byte 8 + i (zero elsewhere), so that every Toeplitz
// window w[j][kk - n] is a plain byte of the row. 2 KB, a kernel parameter.
struct ImmaWeights {
    unsigned row[32][16];
};

template <int Span>
struct Shared {
    alignas(16) unsigned char tile[Layout<Span>::bytes];
    unsigned frag[32][Layout<Span>::regs][32];  // B fragments: mask row, register, lane
    unsigned wrow[32][16];
    int rowmap[max_rows], colmap[Layout<Span>::pitch];  // edge blocks: image row / column of each staged one
};

__device__ __forceinline__ unsigned lds(const unsigned char* p) { return *reinterpret_cast<const unsigned*>(p); }

__device__ __forceinline__ void mma_k32(int (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                        unsigned b1) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_k16(int (&d)[4], unsigned a0, unsigned a1, unsigned b0) {
    asm("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a0), "r"(a1), "r"(b0));
}

// G mask rows (one group) into the 8 tiles. `a`: this thread's byte of staged row 8*gid + first mask row
// of the group; `b`: its word of the group's first fragment. Step s loads the A rows 8m + s once and gives
// them to every tile t with mask row i = s - t in the group.
template <int Span, int G>
__device__ __forceinline__ void mask_rows(int (&acc)[tiles][4], const unsigned char* a, const unsigned* b) {
    using L = Layout<Span>;
    unsigned bf[G][L::regs];
#pragma unroll
    for (int i = 0; i < G; ++i)
#pragma unroll
        for (int r = 0; r < L::regs; ++r) bf[i][r] = b[(i * L::regs + r) * 32];
#pragma unroll
    for (int s = 0; s < tiles + G - 1; ++s) {
        const unsigned char* p = a + (s >> 3) * L::band + (s & 7) * L::pitch;
        const unsigned char* q = p + 8 * L::band;  // fragment rows gid + 8: staged rows 8 * 8 further
        unsigned a0, a1, a2 = 0, a3 = 0, a4 = 0, a5 = 0;
        if constexpr (Span == 16) {
            a0 = lds(p), a1 = lds(q);
        } else {
            a0 = lds(p), a1 = lds(q), a2 = lds(p + 16), a3 = lds(q + 16);
            if constexpr (Span == 48) a4 = lds(p + 32), a5 = lds(q + 32);
        }
#pragma unroll
        for (int t = 0; t < tiles; ++t) {
            const int i = s - t;
            if (i < 0 || i >= G) continue;
            if constexpr (Span == 16) {
                mma_k16(acc[t], a0, a1, bf[i][0]);
            } else {
                mma_k32(acc[t], a0, a1, a2, a3, bf[i][0], bf[i][1]);
                if constexpr (Span == 48) mma_k16(acc[t], a4, a5, bf[i][2]);
            }
        }
    }
}

// Two neighbouring outputs of one row (x even): one vector store when both exist and the row allows it.
template <class Out>
__device__ __forceinline__ void store2(std::byte* out, std::size_t pitch, int y, int x, int width, int v0, int v1,
                                       bool vec, const LinearFinish& f) {
    Out* row = reinterpret_cast<Out*>(out + std::size_t(y) * pitch) + x;
    const Out o0 = finish_exact32<Out>(v0, f);
    if (x + 1 >= width) {
        row[0] = o0;
        return;
    }
    const Out o1 = finish_exact32<Out>(v1, f);
    if (vec) {
        if constexpr (sizeof(Out) == 1)
            *reinterpret_cast<unsigned short*>(row) = (unsigned short)(unsigned(o0) | unsigned(o1) << 8);
        else if constexpr (sizeof(Out) == 2)
            *reinterpret_cast<unsigned*>(row) = unsigned(o0) | unsigned(o1) << 16;
        else
            *reinterpret_cast<float2*>(row) = make_float2(o0, o1);
        return;
    }
    row[0] = o0, row[1] = o1;
}

// Accumulator c of tile t holds output row y0 + 8 * (gid + 8 * (c / 2)) + t, column x + c % 2.
template <class Out>
__device__ __forceinline__ void store_tiles(const int (&acc)[tiles][4], std::byte* out, std::size_t pitch, int y0,
                                            int x, int width, int row_end, bool vec, const LinearFinish& f) {
    if (x >= width) return;
    const int gid = (threadIdx.x & 31) >> 2;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int t = 0; t < tiles; ++t) {
            const int y = y0 + tiles * (gid + 8 * h) + t;
            if (y < row_end) store2<Out>(out, pitch, y, x, width, acc[t][2 * h], acc[t][2 * h + 1], vec, f);
        }
}

template <int Span>
__global__ void __launch_bounds__(threads, 2)
    direct_imma(DeviceView in, std::byte* out, std::size_t out_pitch, PixelType out_type,
                const __grid_constant__ ImmaWeights w, int kh, int ax, int ay, BorderMode mode, int outside,
                LinearFinish finish, bool in_words, bool out_vec, int row_begin, int row_end) {
    using L = Layout<Span>;
    __shared__ Shared<Span> sm;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int bx0 = blockIdx.x * block_w, by0 = row_begin + blockIdx.y * block_h;
    const int gx0 = bx0 - ax, gy0 = by0 - ay;  // image position of staged byte (0, 0)
    const int rows = block_h + kh - 1;
    // Interior: every staged byte is in the image, and the word after each one too (the funnel shift reads it).
    const bool interior =
        in_words && gx0 >= 0 && gx0 + L::pitch + 4 <= in.width && gy0 >= 0 && gy0 + rows <= in.height;

    for (int i = tid; i < 32 * 16; i += threads) (&sm.wrow[0][0])[i] = w.row[i / 16][i % 16];
    if (!interior) {
        for (int r = tid; r < rows; r += threads) sm.rowmap[r] = map_index((long long)gy0 + r, in.height, mode);
        for (int c = tid; c < L::pitch; c += threads) sm.colmap[c] = map_index((long long)gx0 + c, in.width, mode);
    }
    __syncthreads();

    // B fragment register r of lane (gid, tig) for mask row j: T_j[16r + 4tig + e][gid] = byte 8 + 16r + 4tig + e - gid.
    for (int i = tid; i < 32 * L::regs * 32; i += threads) {
        const int l = i & 31, r = (i >> 5) % L::regs, j = (i >> 5) / L::regs;
        const unsigned char* src = reinterpret_cast<const unsigned char*>(sm.wrow[j]) + 8 + 16 * r + 4 * (l & 3) - (l >> 2);
        (&sm.frag[0][0][0])[i] = unsigned(src[0]) | unsigned(src[1]) << 8 | unsigned(src[2]) << 16 | unsigned(src[3]) << 24;
    }

    constexpr int words = L::pitch / 4;
    const unsigned char* image = reinterpret_cast<const unsigned char*>(in.data);
    if (interior) {
        // Rows start 4-byte aligned (in_words), so every staged row has the same column phase.
        const unsigned char* first = image + std::size_t(gy0) * in.pitch + gx0;
        const int shift = 8 * int(reinterpret_cast<std::uintptr_t>(first) & 3);
        const unsigned* aligned = reinterpret_cast<const unsigned*>(first - (reinterpret_cast<std::uintptr_t>(first) & 3));
        const std::size_t pitch_words = in.pitch / 4;
        for (int i = tid; i < rows * words; i += threads) {
            const int r = i / words, q = i % words;
            const unsigned* src = aligned + std::size_t(r) * pitch_words + q;
            *reinterpret_cast<unsigned*>(sm.tile + L::offset(r, 4 * q)) = __funnelshift_r(__ldg(src), __ldg(src + 1), shift);
        }
    } else {
        for (int i = tid; i < rows * words; i += threads) {
            const int r = i / words, q = i % words;
            const int sy = sm.rowmap[r];
            const unsigned char* src = image + std::size_t(sy < 0 ? 0 : sy) * in.pitch;
            unsigned v = 0;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int sx = sm.colmap[4 * q + e];
                const unsigned px = (sx < 0 || sy < 0) ? unsigned(outside) : unsigned(__ldg(src + sx));
                v |= px << (8 * e);
            }
            *reinterpret_cast<unsigned*>(sm.tile + L::offset(r, 4 * q)) = v;
        }
    }
    __syncthreads();

    int acc[tiles][4] = {};
    const unsigned char* a = sm.tile + ((lane >> 2) * L::band) + 8 * warp + 4 * (lane & 3);
    const unsigned* b = &sm.frag[0][0][lane];
    constexpr int group_words = group * L::regs * 32;
    int g = 0;
    for (; g < kh / group; ++g) mask_rows<Span, group>(acc, a + g * L::band, b + g * group_words);
    a += g * L::band, b += g * group_words;
    switch (kh % group) {
    case 1: mask_rows<Span, 1>(acc, a, b); break;
    case 2: mask_rows<Span, 2>(acc, a, b); break;
    case 3: mask_rows<Span, 3>(acc, a, b); break;
    case 4: mask_rows<Span, 4>(acc, a, b); break;
    case 5: mask_rows<Span, 5>(acc, a, b); break;
    case 6: mask_rows<Span, 6>(acc, a, b); break;
    case 7: mask_rows<Span, 7>(acc, a, b); break;
    default: break;
    }

    const int x = bx0 + 8 * warp + 2 * (lane & 3);
    switch (out_type) {
    case PixelType::u8: store_tiles<std::uint8_t>(acc, out, out_pitch, by0, x, in.width, row_end, out_vec, finish); break;
    case PixelType::u16: store_tiles<std::uint16_t>(acc, out, out_pitch, by0, x, in.width, row_end, out_vec, finish); break;
    case PixelType::f32: store_tiles<float>(acc, out, out_pitch, by0, x, in.width, row_end, out_vec, finish); break;
    }
}

ImmaWeights pack(const LinearPlan& p) {
    ImmaWeights w{};
    const Mask& m = p.step.mask;
    for (int j = 0; j < m.height; ++j)
        for (int i = 0; i < m.width; ++i) {
            const std::int64_t v = p.integer_mask.weights[std::size_t(j) * m.width + i];
            const int byte = 8 + i;
            w.row[j][byte / 4] |= unsigned(v & 0xFF) << (8 * (byte % 4));
        }
    return w;
}

template <int Span>
void launch_span(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream, int row_begin,
                 int row_end) {
    const Mask& m = p.step.mask;
    const int outside = int(store_pixel<std::uint8_t>(p.step.border_value));
    const bool in_words = reinterpret_cast<std::uintptr_t>(in.data) % 4 == 0 && in.pitch % 4 == 0;
    // Two outputs per store: the view's rows must start aligned to two pixels (an ROI may start anywhere).
    const std::size_t pair = 2 * bytes_per_sample(p.out);
    const bool out_vec = reinterpret_cast<std::uintptr_t>(out.data) % pair == 0 && out.pitch % pair == 0;
    const ImmaWeights w = pack(p);
    // grid.y is at most 65535 blocks of 128 rows: taller images (a 1 x 2^30 one) go in several launches.
    constexpr int launch_rows = 65535 * block_h;
    for (int y0 = row_begin; y0 < row_end; y0 += std::min(launch_rows, row_end - y0)) {
        const int y1 = y0 + std::min(launch_rows, row_end - y0);
        const dim3 grid(unsigned((in.width() + block_w - 1) / block_w), unsigned((y1 - y0 + block_h - 1) / block_h));
        direct_imma<Span><<<grid, threads, 0, stream>>>(device_view(in), out.data, out.pitch, p.out, w, m.height,
                                                        m.anchor_x, m.anchor_y, p.step.border, outside, p.finish,
                                                        in_words, out_vec, y0, y1);
        APRON_CUDA_CHECK_LAUNCH("direct_imma");
    }
}

bool disabled() { return overrides().imma_off; }

} // namespace

bool direct_imma_supports(const LinearPlan& p, ConstImageView in) {
    const Mask& m = p.step.mask;
    if (disabled() || !p.exact || p.accumulator != Accumulator::f32 || p.in != PixelType::u8 || in.channels() != 1)
        return false;
    if (m.width < 1 || m.width > max_k || m.height < 1 || m.height > max_k || m.anchor_x < 0 ||
        m.anchor_x >= m.width || m.anchor_y < 0 || m.anchor_y >= m.height)
        return false;
    if (p.integer_mask.weights.size() != std::size_t(m.width) * std::size_t(m.height)) return false;
    // The f32 accumulator bounds the sum by 2^24, so the int32 accumulators of the tensor cores are exact.
    for (std::int64_t v : p.integer_mask.weights)
        if (v < -128 || v > 127) return false;
    return true;
}

void launch_direct_imma(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream, int row_begin,
                        int row_end) {
    if (row_end < 0) row_end = in.height();
    if (row_begin >= row_end) return;
    const int kw = p.step.mask.width;
    if (kw <= 9) return launch_span<16>(p, in, out, stream, row_begin, row_end);
    if (kw <= 25) return launch_span<32>(p, in, out, stream, row_begin, row_end);
    if (kw <= max_k) return launch_span<48>(p, in, out, stream, row_begin, row_end);
    throw Error("direct_imma: unsupported mask size");
}

} // namespace apron::cuda
