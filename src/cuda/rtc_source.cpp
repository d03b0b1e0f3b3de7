// The kernel generator (see rtc_source.hpp). The generated kernel follows the tiled kernel
// (direct_tiled_impl.cuh): a block of 32 x 8 threads stages its input tile with the halo in shared
// memory, converted once (f32, or int for integer accumulation); border maths (map_index) runs only in
// blocks whose tile reaches outside the image. Each thread then owns 4 consecutive output samples x RY
// rows. What differs is that the mask is known when the code is written:
//   - every weight is a literal operand (zero taps vanish, any W x H and anchor, odd or even);
//   - for each input row of the thread's window, the output rows it feeds are grouped by identical mask
//     rows, and the row's dot product is computed once per distinct mask row and added to each output
//     row that uses it (symmetric masks have pairs of equal rows: about half the FMAs; a box has one) -
//     for exact sums only: in float, which rows a thread shares depends on where the view starts, so an
//     output's rounding followed the tiling (a volume streamed in slabs differed from the whole run by 1);
//     float plans take one FMA per tap for every output row;
//   - integer accumulation sums the samples that share a weight before multiplying (IADD3 then one IMAD:
//     pairs in masks symmetric about the centre, whole rows in a box).
// With f32 accumulation the pairing would not save instructions (a+b then one FFMA costs as much as two
// FFMAs), so the float paths keep one FMA per tap.
#include "cuda/rtc_source.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "apron/errors.hpp"
#include "core/concat.hpp"

namespace apron::cuda::rtc {
namespace {

constexpr double two_pow_31 = 2147483648.0;
constexpr double two_pow_53 = 9007199254740992.0;
// Emitted multiply-adds per thread that the output rows per thread may reach (the tiled kernel's choices:
// 8 rows to 9x9, 4 to 17x17, 2 to 23x23, 1 beyond).
constexpr int op_budget = 5000;

const char* c_type(PixelType t) {
    return t == PixelType::u8 ? "unsigned char" : t == PixelType::u16 ? "unsigned short" : "float";
}
const char* vec4_type(PixelType t) { return t == PixelType::u8 ? "uchar4" : t == PixelType::u16 ? "ushort4" : "float4"; }

std::string float_literal(float v) {
    char b[48];
    std::snprintf(b, sizeof b, "%.9g", double(v));
    std::string s = b;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s + "f";
}

// The weights as the kernel uses them: literal text per tap ("" for a zero tap) and a comparable value.
struct Weights {
    int w = 0, h = 0;
    std::vector<std::string> text;
    std::vector<std::int64_t> key;  // integer weight, or the float's bits
    bool zero(int i, int j) const { return text[std::size_t(j) * w + i].empty(); }
    const std::string& at(int i, int j) const { return text[std::size_t(j) * w + i]; }
    std::int64_t key_at(int i, int j) const { return key[std::size_t(j) * w + i]; }
};

Weights literal_weights(const LinearPlan& p, Accumulate acc) {
    const Mask& m = p.step.mask;
    Weights w;
    w.w = m.width, w.h = m.height;
    const std::size_t n = m.weights.size();
    w.text.resize(n), w.key.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
        if (acc == Accumulate::f32) {
            const float f = p.exact ? float(p.integer_mask.weights[k]) : float(m.weights[k]);
            if (f == 0.0f) continue;  // -0 as well
            w.text[k] = float_literal(f);
            std::uint32_t bits;
            std::memcpy(&bits, &f, sizeof bits);
            w.key[k] = bits;
        } else {
            const std::int64_t v = p.integer_mask.weights[k];
            if (v == 0) continue;
            w.key[k] = v;
            w.text[k] = std::to_string(v) + (acc == Accumulate::i64 ? "LL" : "");
        }
    }
    return w;
}

// pattern[j]: the first mask row with the same weights as row j (-1: an all-zero row).
std::vector<int> row_patterns(const Weights& w) {
    std::vector<int> pattern(std::size_t(w.h), -1);
    for (int j = 0; j < w.h; ++j) {
        bool any = false;
        for (int i = 0; i < w.w; ++i) any = any || !w.zero(i, j);
        if (!any) continue;
        pattern[std::size_t(j)] = j;
        for (int k = 0; k < j; ++k) {
            bool same = true;
            for (int i = 0; i < w.w && same; ++i) same = w.key_at(i, j) == w.key_at(i, k) && w.zero(i, j) == w.zero(i, k);
            if (same) {
                pattern[std::size_t(j)] = k;
                break;
            }
        }
    }
    return pattern;
}

// Writes (or, with out == nullptr, only counts) the arithmetic of the thread's window for RY output
// rows; returns the number of multiply-adds and adds.
class ComputeWriter {
public:
    // shared_rows: equal mask rows share one dot product (exact sums only: a float output row's sum must
    // not depend on the thread row it falls on, or the bits would follow the tiling: bands, slabs, views).
    ComputeWriter(const Weights& w, Accumulate acc, int channels, int tile_pitch, bool shared_rows)
        : w_(w), acc_(acc), c_(channels), pitch_(tile_pitch), pattern_(row_patterns(w)), shared_rows_(shared_rows) {}

    long long write(int ry, std::ostringstream* out) {
        out_ = out;
        long long ops = 0;
        for (int t = 0; t < ry + w_.h - 1; ++t) {
            // Output rows r fed by input row t through mask row j = t - r, grouped by that row's weights.
            std::map<int, std::vector<int>> groups;  // pattern -> output rows
            for (int r = 0; r < ry; ++r) {
                const int j = t - r;
                if (j >= 0 && j < w_.h && pattern_[std::size_t(j)] >= 0) groups[pattern_[std::size_t(j)]].push_back(r);
            }
            if (groups.empty()) continue;
            loaded_.assign(std::size_t(outputs_x + (w_.w - 1) * c_ + 3) / 4, false);
            if (out_) *out_ << "    {  // input row " << t << "\n        const Tile* p = base + " << t * pitch_ << ";\n";
            int g = 0;
            for (const auto& [pat, rows] : groups) {
                std::string targets[outputs_x];
                if (rows.size() == 1 || !shared_rows_) {
                    for (int r : rows) {
                        for (int q = 0; q < outputs_x; ++q) targets[q] = acc_name(r, q);
                        ops += row_terms(pat, targets);
                    }
                } else {
                    // One dot product per distinct mask row, added to every output row that uses it.
                    for (int q = 0; q < outputs_x; ++q) targets[q] = concat({"h", std::to_string(g), "_", std::to_string(q)});
                    if (out_) *out_ << "        Acc " << targets[0] << " = 0, " << targets[1] << " = 0, " << targets[2]
                                    << " = 0, " << targets[3] << " = 0;\n";
                    ops += row_terms(pat, targets);
                    for (int r : rows)
                        for (int q = 0; q < outputs_x; ++q) {
                            if (out_) *out_ << "        " << acc_name(r, q) << " += " << targets[q] << ";\n";
                            ++ops;
                        }
                    ++g;
                }
            }
            if (out_) *out_ << "    }\n";
        }
        return ops;
    }

    static std::string acc_name(int r, int q) { return concat({"a", std::to_string(r), "_", std::to_string(q)}); }

private:
    // A window value; its 16-byte chunk is loaded from shared memory just before the first statement that
    // reads it (loading a whole wide window up front keeps it all live: spills at 4 channels x 63 taps).
    std::string value(int k) {
        static constexpr std::string_view lanes = "xyzw";
        const std::size_t chunk = std::size_t(k) / 4;
        if (!loaded_[chunk]) {
            loaded_[chunk] = true;
            pending_ += "        const Tile4 c" + std::to_string(chunk) + " = *reinterpret_cast<const Tile4*>(p + " +
                        std::to_string(4 * chunk) + ");\n";
        }
        return concat({"c", std::to_string(chunk), ".", lanes.substr(std::size_t(k) % 4, 1)});
    }

    void line(const std::string& statement) {
        *out_ << pending_ << "        " << statement << "\n";
        pending_.clear();
    }

    // targets[q] += sum over the taps of mask row `j` of weight * window value, for the 4 output samples q
    // (independent chains, interleaved).
    long long row_terms(int j, const std::string (&targets)[outputs_x]) {
        long long ops = 0;
        if (acc_ == Accumulate::f32) {
            for (int i = 0; i < w_.w; ++i) {
                if (w_.zero(i, j)) continue;
                for (int q = 0; q < outputs_x; ++q) {
                    if (out_) line(targets[q] + " = fmaf(" + w_.at(i, j) + ", " + value(q + i * c_) + ", " + targets[q] + ");");
                    ++ops;
                }
            }
            return ops;
        }
        // Integers: the samples sharing a weight are added first, then multiplied once. Over the whole row
        // when its window fits in registers; over spans of 32 window values when it does not (4 channels x
        // 63 taps: row-wide groups kept the whole window live and spilled kilobytes).
        const int span = outputs_x + (w_.w - 1) * c_ <= 64 ? w_.w : std::max(1, 32 / c_);
        for (int i0 = 0; i0 < w_.w; i0 += span) ops += grouped_terms(j, i0, std::min(w_.w, i0 + span), targets);
        return ops;
    }

    long long grouped_terms(int j, int i_begin, int i_end, const std::string (&targets)[outputs_x]) {
        long long ops = 0;
        std::vector<std::int64_t> order;
        std::map<std::int64_t, std::vector<int>> taps;
        for (int i = i_begin; i < i_end; ++i) {
            if (w_.zero(i, j)) continue;
            const std::int64_t v = w_.key_at(i, j);
            if (!taps.count(v)) order.push_back(v);
            taps[v].push_back(i);
        }
        for (std::int64_t v : order) {
            const std::vector<int>& is = taps[v];
            ops += outputs_x * (1 + std::int64_t(is.size()) / 2);
            if (!out_) continue;
            for (int q = 0; q < outputs_x; ++q) {
                std::string sum;
                for (std::size_t n = 0; n < is.size(); ++n) sum += (n ? " + " : "") + value(q + is[n] * c_);
                // acc_mad is opaque to the compiler: integer sums would otherwise be reassociated into one
                // tree over the whole mask, with every window load hoisted (kilobytes of spills at 63x63).
                line(targets[q] + " = acc_mad(" + std::to_string(v) + (acc_ == Accumulate::i64 ? "LL, " : ", ") + sum + ", " +
                     targets[q] + ");");
            }
        }
        return ops;
    }

    const Weights& w_;
    Accumulate acc_;
    int c_, pitch_;
    std::vector<int> pattern_;
    bool shared_rows_;
    std::ostringstream* out_ = nullptr;
    std::vector<bool> loaded_;  // chunks of the current input row already loaded
    std::string pending_;       // their loads, written before the next statement
};

struct Geometry {
    int ry, tile_w, tile_h, tile_pitch;
};

Geometry geometry(const Mask& m, int channels, int ry) {
    Geometry g;
    g.ry = ry;
    g.tile_w = block_x * outputs_x + (m.width - 1) * channels;
    g.tile_h = block_y * ry + m.height - 1;
    g.tile_pitch = (g.tile_w + 3) / 4 * 4;  // 16-byte aligned rows for the vector reads
    return g;
}

// The most output rows per thread (8 at most) whose code stays within the budget.
int choose_rows(const Weights& w, Accumulate acc, int channels, bool shared_rows) {
    ComputeWriter cw(w, acc, channels, 0, shared_rows);  // the pitch only matters to the text
    int ry = 1;
    while (ry < 8 && cw.write(ry + 1, nullptr) <= op_budget) ++ry;  // the count grows with the rows
    return ry;
}

// Whether equal mask rows may share a dot product: where the sums are exact (integers, or the f32
// accumulator of an exact plan), the grouping changes no bit.
bool shares_rows(const LinearPlan& p, Accumulate acc) { return acc != Accumulate::f32 || p.exact; }

bool has_finish_exact32() {
    for (const EmbeddedHeader& h : embedded_headers())
        if (std::strcmp(h.name, "core/linear_finish.hpp") == 0) return std::strstr(h.text, "finish_exact32(") != nullptr;
    return false;
}

} // namespace

bool choose_accumulate(const LinearPlan& p, Accumulate* out) {
    const Mask& m = p.step.mask;
    if (m.width < 1 || m.height < 1 || m.width > max_side || m.height > max_side) return false;
    if (m.weights.size() != std::size_t(m.width) * std::size_t(m.height)) return false;
    if (m.anchor_x < 0 || m.anchor_x >= m.width || m.anchor_y < 0 || m.anchor_y >= m.height) return false;
    Accumulate a = Accumulate::f32;
    if (p.exact) {
        if (p.integer_mask.weights.size() != m.weights.size()) return false;
        const double bound = double(p.integer_mask.abs_sum) * type_max(p.in);
        if (p.accumulator == Accumulator::f32) a = Accumulate::f32;
        else if (bound < two_pow_31) a = Accumulate::i32;
        else if (bound < two_pow_53) a = Accumulate::i64;
        else return false;
        // Integer code compiles slowly (63x63: about a minute in NVRTC, against 12 s for f32): up to 33x33
        // taps; larger integer sums are left to the baseline kernel.
        if (a != Accumulate::f32) {
            std::size_t taps = 0;
            for (std::int64_t w : p.integer_mask.weights) taps += w != 0;
            if (taps > max_integer_taps) return false;
        }
    } else {
        for (double v : m.weights)
            if (!std::isfinite(v) || !std::isfinite(float(v))) return false;
    }
    if (out) *out = a;
    return true;
}

std::size_t shared_bytes_for(const LinearPlan& p, int channels) {
    Accumulate acc;
    if (!choose_accumulate(p, &acc)) return 0;
    // Most masks: at 8 rows per thread (the largest tile) it fits anyway, no need to count the code.
    const Geometry most = geometry(p.step.mask, channels, 8);
    const std::size_t upper = sizeof(float) * std::size_t(most.tile_h) * std::size_t(most.tile_pitch);
    if (upper <= 48 * 1024) return upper;
    const Weights w = literal_weights(p, acc);
    const Geometry g = geometry(p.step.mask, channels, choose_rows(w, acc, channels, shares_rows(p, acc)));
    return sizeof(float) * std::size_t(g.tile_h) * std::size_t(g.tile_pitch);
}

KernelSource generate_source(const LinearPlan& p, int channels, bool force_integer) {
    Accumulate acc;
    if (!choose_accumulate(p, &acc)) throw Error("runtime_direct: this mask cannot be compiled into a kernel");
    if (channels < 1 || channels > max_channels) throw Error("runtime_direct: 1 to 4 channels");
    if (force_integer && p.exact && acc == Accumulate::f32) acc = Accumulate::i32;  // bound < 2^24 < 2^31
    const Mask& m = p.step.mask;
    const Weights w = literal_weights(p, acc);
    const int ry = choose_rows(w, acc, channels, shares_rows(p, acc));
    const Geometry g = geometry(m, channels, ry);
    const bool integer_tile = acc != Accumulate::f32;

    KernelSource ks;
    ks.rows_per_thread = ry;
    ks.tile_w = g.tile_w, ks.tile_h = g.tile_h, ks.tile_pitch = g.tile_pitch;
    ks.shared_bytes = sizeof(float) * std::size_t(g.tile_h) * std::size_t(g.tile_pitch);
    ks.accumulate = acc;

    ComputeWriter cw(w, acc, channels, g.tile_pitch, shares_rows(p, acc));
    std::ostringstream body;
    cw.write(ry, &body);
    // Fewer registers for small windows (4 blocks of 256 threads per SM), up to 128 for large ones.
    const int window = outputs_x + (m.width - 1) * channels;
    // (measured with ptxas for sm_90: 2x2 to 9x3 at 8 rows spill under the 64 registers of 4 blocks)
    const int live = outputs_x * ry + window;
    const int min_blocks = live <= 24 ? 4 : live <= 72 ? 3 : 2;
    const int load_rows = (g.tile_h + block_y - 1) / block_y, load_cols = (g.tile_w + block_x - 1) / block_x;
    const int batch_rows = std::max(1, std::min(load_rows, 32 / load_cols));

    // Sums below 2^31 finish in 32-bit integers where the shared header has that finish (finish_exact32
    // falls back to finish_exact for plans it does not fit); 64-bit sums take the 64-bit finish.
    const bool finish32 = acc != Accumulate::i64 && has_finish_exact32();

    std::ostringstream s;
    const char* acc_name = acc == Accumulate::f32 ? "float" : acc == Accumulate::i32 ? "int" : "long long";
    s << "// apron: direct correlation compiled at run time (src/cuda/rtc_source.cpp)\n"
      << "// mask " << m.width << "x" << m.height << ", anchor (" << m.anchor_x << "," << m.anchor_y << "), "
      << to_string(p.in) << " -> " << to_string(p.out) << ", " << channels << " channel(s), "
      << (p.exact ? "exact" : "float") << ", accumulator " << acc_name << ", " << ry << " row(s) per thread\n"
      << "#include \"core/linear_finish.hpp\"\n"
      << "#include \"core/border_index.hpp\"\n\n"
      << "namespace {\n"
      << "using In = " << c_type(p.in) << ";\n"
      << "using Out = " << c_type(p.out) << ";\n"
      << "using Out4 = " << vec4_type(p.out) << ";\n"
      << "using Tile = " << (integer_tile ? "int" : "float") << ";\n"
      << "using Tile4 = " << (integer_tile ? "int4" : "float4") << ";\n"
      << "using Acc = " << acc_name << ";\n"
      << "constexpr int C = " << channels << ", BX = " << block_x << ", BY = " << block_y << ", RX = " << outputs_x
      << ", RY = " << ry << ";\n"
      << "constexpr int AX = " << m.anchor_x << ", AY = " << m.anchor_y << ";\n"
      << "constexpr int TW = " << g.tile_w << ", TH = " << g.tile_h << ", TP = " << g.tile_pitch << ";\n"
      << "constexpr int LOAD_ROWS = " << load_rows << ", LOAD_COLS = " << load_cols << ", BATCH = " << batch_rows
      << ";\n\n"
      << "__device__ __forceinline__ Tile load_sample(const unsigned char* in, unsigned long long pitch, int xs, int y) {\n"
      << "    const In v = reinterpret_cast<const In*>(in + (unsigned long long)y * pitch)[xs];\n"
      << (integer_tile ? "    return Tile(v);\n" : "    return apron::sample_to_float(v);\n")
      << "}\n\n"
      << "// acc + w * s in one instruction the compiler does not reassociate (integer accumulation).\n"
      << "__device__ __forceinline__ int acc_mad(int w, int s, int acc) {\n"
      << "    int r;\n"
      << "    asm(\"mad.lo.s32 %0, %1, %2, %3;\" : \"=r\"(r) : \"r\"(w), \"r\"(s), \"r\"(acc));\n"
      << "    return r;\n"
      << "}\n"
      << "__device__ __forceinline__ long long acc_mad(long long w, int s, long long acc) {\n"
      << "    long long r;\n"
      << "    asm(\"mad.lo.s64 %0, %1, %2, %3;\" : \"=l\"(r) : \"l\"(w), \"l\"((long long)s), \"l\"(acc));\n"
      << "    return r;\n"
      << "}\n\n"
      << "__device__ __forceinline__ Out finish_one(Acc a, const apron::LinearFinish& f) {\n"
      << (!p.exact ? "    return apron::finish_float<Out, float>(a, f);\n"
          : finish32 ? "    return apron::finish_exact32<Out>(static_cast<int>(a), f);\n"
                     : "    return apron::finish_exact<Out>(static_cast<std::int64_t>(a), f);\n")
      << "}\n\n"
      << "// Four consecutive outputs of one row: one vector store when the row allows it.\n"
      << "__device__ __forceinline__ void store4(unsigned char* out, unsigned long long pitch, int y, int xs, int samples,\n"
      << "                                       bool vec, Acc a0, Acc a1, Acc a2, Acc a3, const apron::LinearFinish& f) {\n"
      << "    Out* row = reinterpret_cast<Out*>(out + (unsigned long long)y * pitch) + xs;\n"
      << "    const Out v0 = finish_one(a0, f), v1 = finish_one(a1, f), v2 = finish_one(a2, f), v3 = finish_one(a3, f);\n"
      << "    if (vec && xs + 4 <= samples) {\n"
      << "        Out4 o;\n"
      << "        o.x = v0, o.y = v1, o.z = v2, o.w = v3;\n"
      << "        *reinterpret_cast<Out4*>(row) = o;\n"
      << "        return;\n"
      << "    }\n"
      << "    row[0] = v0;\n"
      << "    if (xs + 1 < samples) row[1] = v1;\n"
      << "    if (xs + 2 < samples) row[2] = v2;\n"
      << "    if (xs + 3 < samples) row[3] = v3;\n"
      << "}\n"
      << "} // namespace\n\n"
      << "extern \"C\" __global__ void __launch_bounds__(BX * BY, " << min_blocks << ")\n"
      << ks.entry << "(const unsigned char* in, unsigned long long in_pitch, int width, int height, unsigned char* out,\n"
      << "                 unsigned long long out_pitch, int mode_index, float outside_f, int outside_i,\n"
      << "                 apron::LinearFinish finish, int vec, int row_begin, int row_end) {\n"
      << "    extern __shared__ __align__(16) Tile tile[];\n"
      << "    const apron::BorderMode mode = static_cast<apron::BorderMode>(mode_index);\n"
      << "    const Tile outside = " << (integer_tile ? "Tile(outside_i)" : "outside_f") << ";\n"
      << "    const int samples = width * C;\n"
      << "    const int x0 = blockIdx.x * (BX * RX), y0 = row_begin + blockIdx.y * (BY * RY);\n"
      << "    const int gx0 = x0 - AX * C, gy0 = y0 - AY;  // first input sample and row of the tile\n"
      << "    const bool interior = gx0 >= 0 && gy0 >= 0 && gx0 + TW <= samples && gy0 + TH <= height;\n"
      << "    if (interior) {\n"
      << "        // A batch of loads in flight per thread before its shared stores.\n"
      << "#pragma unroll\n"
      << "        for (int a0 = 0; a0 < LOAD_ROWS; a0 += BATCH) {\n"
      << "            Tile v[BATCH][LOAD_COLS];\n"
      << "#pragma unroll\n"
      << "            for (int a = 0; a < BATCH; ++a)\n"
      << "#pragma unroll\n"
      << "                for (int b = 0; b < LOAD_COLS; ++b) {\n"
      << "                    const int r = threadIdx.y + (a0 + a) * BY, c = threadIdx.x + b * BX;\n"
      << "                    if (a0 + a < LOAD_ROWS && r < TH && c < TW) v[a][b] = load_sample(in, in_pitch, gx0 + c, gy0 + r);\n"
      << "                }\n"
      << "#pragma unroll\n"
      << "            for (int a = 0; a < BATCH; ++a)\n"
      << "#pragma unroll\n"
      << "                for (int b = 0; b < LOAD_COLS; ++b) {\n"
      << "                    const int r = threadIdx.y + (a0 + a) * BY, c = threadIdx.x + b * BX;\n"
      << "                    if (a0 + a < LOAD_ROWS && r < TH && c < TW) tile[r * TP + c] = v[a][b];\n"
      << "                }\n"
      << "        }\n"
      << "    } else {\n"
      << "        for (int r = threadIdx.y; r < TH; r += BY) {\n"
      << "            const int sy = apron::map_index(gy0 + r, height, mode);\n"
      << "            for (int c = threadIdx.x; c < TW; c += BX) {\n"
      << "                const int sx = apron::map_sample<int>(gx0 + c, width, C, mode);\n"
      << "                tile[r * TP + c] = (sx < 0 || sy < 0) ? outside : load_sample(in, in_pitch, sx, sy);\n"
      << "            }\n"
      << "        }\n"
      << "    }\n"
      << "    __syncthreads();\n\n"
      << "    const Tile* base = tile + threadIdx.y * (RY * TP) + threadIdx.x * RX;\n";
    for (int r = 0; r < ry; ++r) {
        s << "    Acc";
        for (int q = 0; q < outputs_x; ++q) s << (q ? ", " : " ") << ComputeWriter::acc_name(r, q) << " = 0";
        s << ";\n";
    }
    s << body.str();
    s << "\n    const int xs = x0 + threadIdx.x * RX;\n"
      << "    const int y = y0 + threadIdx.y * RY;\n";
    if (acc == Accumulate::i64 || ry == 1) {
        s << "    if (xs >= samples) return;\n";
        for (int r = 0; r < ry; ++r) {
            s << "    if (y + " << r << " < row_end) store4(out, out_pitch, y + " << r << ", xs, samples, vec != 0";
            for (int q = 0; q < outputs_x; ++q) s << ", " << ComputeWriter::acc_name(r, q);
            s << ", finish);\n";
        }
    } else {
        // The sums go through the (now free) tile so that one loop, not unrolled, finishes and stores the
        // rows: the finish is inlined 4 times instead of 4 x RY (the exact finish's 64-bit fallback is
        // large; unrolled it made the kernel 4x the size and the compile 4x as long).
        s << "    __syncthreads();\n"
          << "    Tile4* sums = reinterpret_cast<Tile4*>(tile) + threadIdx.y * BX + threadIdx.x;\n";
        for (int r = 0; r < ry; ++r) {
            s << "    sums[" << r * block_x * block_y << "] = " << (integer_tile ? "make_int4(" : "make_float4(");
            for (int q = 0; q < outputs_x; ++q) s << (q ? ", " : "") << ComputeWriter::acc_name(r, q);
            s << ");\n";
        }
        s << "    if (xs >= samples) return;\n"
          << "#pragma unroll 1\n"
          << "    for (int r = 0; r < RY && y + r < row_end; ++r) {\n"
          << "        const Tile4 v = sums[r * (BX * BY)];\n"
          << "        store4(out, out_pitch, y + r, xs, samples, vec != 0, v.x, v.y, v.z, v.w, finish);\n"
          << "    }\n";
    }
    s << "}\n";
    ks.text = s.str();
    return ks;
}

} // namespace apron::cuda::rtc
