// Rank filters on the CPU backend (SPEC.md "Rank"): median, percentile and rank over any flat element.
// The kernels are chosen by rank_kernel_for (the plan names the one that runs; fast_rank.hpp lists them);
// each gives the reference's value, which is one of the window's samples (core/rank_value.hpp orders
// them), so every kernel's result is bit-identical to the reference's whatever the threads.
//
// `cpu.rank_select`: every output gathers its window's keys (rows of the element's runs through the
// border) and selects the rank. Correct for every plan; what runs where no other kernel takes the plan
// (an element without cells).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "core/rank_value.hpp"
#include "cpu/fast_executor.hpp"
#include "cpu/fast_rank.hpp"

namespace apron::cpu {
namespace {

template <class T>
void rank_select_rows(const RankPlan& p, ConstImageView in, ImageView out, int y0, int y1, std::vector<std::uint32_t>& keys) {
    const T outside = store_pixel<T>(p.step.border_value);
    const int channels = in.channels(), width = in.width(), height = in.height();
    keys.reserve(std::size_t(p.count));
    for (int y = y0; y < y1; ++y)
        for (int x = 0; x < out.width(); ++x)
            for (int c = 0; c < channels; ++c) {
                keys.clear();
                for (const MorphChord& run : p.chords) {
                    const int yi = map_index(y + run.dy, height, p.step.border);
                    const T* row = yi < 0 ? nullptr : in.row<T>(yi);
                    for (int i = 0; i < run.length; ++i) {
                        const int xi = map_index(x + run.dx + i, width, p.step.border);
                        const T v = row && xi >= 0 ? row[std::size_t(xi) * channels + c] : outside;
                        const std::uint32_t k = rank_key(v);
                        if (k != rank_missing_key) keys.push_back(k);
                    }
                }
                T& o = out.row<T>(y)[std::size_t(x) * channels + c];
                if (keys.empty()) {
                    o = rank_value<T>(rank_missing_key);
                    continue;
                }
                const int r = rank_among(p.step.rank, int(keys.size()), p.count);
                std::nth_element(keys.begin(), keys.begin() + r, keys.end());
                o = rank_value<T>(keys[std::size_t(r)]);
            }
}

} // namespace

// The one choice both the plan (rank_kernel_for) and the run (run_rank) make: small windows take the
// network kernel, larger ones the histogram kernels; the plan's algorithm is the planner's view of the
// same split (plan/kinds/rank_kind.cpp), and every kernel gives the same bits, so the window decides.
KernelChoice rank_kernel_for(const RankPlan& p, const ImageShape&) {
    if (p.step.depth > 1) return {"cpu.rank_volume", ""};  // a volume's window
    if (p.step.rank < 0 || p.step.rank >= std::max(p.count, 1)) return {"cpu.rank_select", ""};  // not a rank of the window
    if (std::string d = rank_network_detail(p); !d.empty()) return {"cpu.rank_network", d};
    if (std::string d = rank_histogram_detail(p); !d.empty())
        return {p.type == PixelType::f32 ? "cpu.rank_keyhist" : "cpu.rank_histogram", d};
    return {"cpu.rank_select", ""};
}

void run_rank(ThreadPool& pool, const RankPlan& p, ConstImageView in, ImageView out) {
    const std::string kernel = rank_kernel_for(p, in.shape).family;
    if (kernel == "cpu.rank_volume") return run_rank_volume(pool, p, in, out);
    if (kernel == "cpu.rank_network") return run_rank_network(pool, p, in, out);
    if (kernel != "cpu.rank_select") return run_rank_histogram(pool, p, in, out);
    const int height = out.height();
    const int rows = std::max(1, std::min(64, height / (4 * pool.size()) + 1));
    const int tasks = (height + rows - 1) / rows;
    std::vector<std::vector<std::uint32_t>> scratch(std::size_t(pool.size()));
    pool.run(tasks, [&](int t, int who) {
        const int y0 = t * rows, y1 = std::min(height, y0 + rows);
        with_type(p.type, [&]<class T>() { rank_select_rows<T>(p, in, out, y0, y1, scratch[std::size_t(who)]); });
    });
}

} // namespace apron::cpu
