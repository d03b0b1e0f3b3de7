// The reference executor: SPEC.md in code. Plain loops, double accumulation (exact for integer masks),
// no cleverness. Every other backend is tested against it; it is not meant to be fast.
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <memory>
#include <vector>

#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/linear_finish.hpp"
#include "core/missing_sample.hpp"
#include "core/morph_value.hpp"
#include "core/pixel.hpp"
#include "core/rank_value.hpp"
#include "plan/plan.hpp"

namespace apron {
namespace {

// Reads sample (x, y, c) through the border; `outside` is returned for constant borders.
template <class T>
double sample(ConstImageView in, long long x, long long y, int c, BorderMode mode, double outside) {
    const int xi = map_index(x, in.width(), mode), yi = map_index(y, in.height(), mode);
    if (xi < 0 || yi < 0) return outside;
    return double(in.row<T>(yi)[std::size_t(xi) * in.channels() + c]);
}

class ReferenceExecutor final : public Executor {
public:
    void linear(const LinearPlan& p, ConstImageView in, ImageView out) override {
        with_type(p.in, [&]<class In>() { with_type(p.out, [&]<class Out>() { linear_typed<In, Out>(p, in, out); }); });
    }

    void morph(const MorphPlan& p, ConstImageView in, ImageView out) override {
        with_type(p.type, [&]<class T>() { morph_typed<T>(p, in, out); });
    }

    void combine(const CombinePlan& p, ConstImageView a, ConstImageView b, ImageView out) override {
        with_type(p.a_type, [&]<class A>() {
            with_type(p.b_type, [&]<class B>() {
                with_type(p.out, [&]<class Out>() {
                    for (int y = 0; y < out.height(); ++y)
                        for (int k = 0; k < out.width() * out.channels(); ++k) {
                            if (p.step.form != CombineForm::affine) {  // SPEC: NaN and nodata in linear filters
                                const B second = p.step.b != 0 ? b.row<B>(y)[k] : B(0);
                                out.row<Out>(y)[k] = missing_form_sample<A, B, Out>(p.step, a.row<A>(y)[k], second);
                                continue;
                            }
                            double v = p.step.a * double(a.row<A>(y)[k]);
                            if (p.step.b != 0) v += p.step.b * double(b.row<B>(y)[k]);
                            out.row<Out>(y)[k] = store_pixel<Out>(v + p.step.c);
                        }
                });
            });
        });
    }

    void rank(const RankPlan& p, ConstImageView in, ImageView out) override {
        if (p.step.depth > 1) return with_type(p.type, [&]<class T>() { rank_volume_typed<T>(p, in, out); });
        with_type(p.type, [&]<class T>() { rank_typed<T>(p, in, out); });
    }

private:
    template <class In, class Out>
    static void linear_typed(const LinearPlan& p, ConstImageView in, ImageView out) {
        const Mask& m = p.step.mask;
        const int channels = in.channels();
        // Constant border value as the sample type would hold it (SPEC: the border reads as a pixel).
        const double outside = double(store_pixel<In>(p.step.border_value));
        for (int y = 0; y < out.height(); ++y)
            for (int x = 0; x < out.width(); ++x)
                for (int c = 0; c < channels; ++c) {
                    double sum = 0;
                    for (int j = 0; j < m.height; ++j)
                        for (int i = 0; i < m.width; ++i) {
                            const double w = p.exact ? double(p.integer_mask.weights[std::size_t(j) * m.width + i])
                                                     : m.at(i, j);
                            if (w == 0) continue;
                            sum += w * sample<In>(in, x + i - m.anchor_x, y + j - m.anchor_y, c, p.step.border, outside);
                        }
                    out.row<Out>(y)[std::size_t(x) * channels + c] =
                        p.exact ? finish_exact<Out>(std::int64_t(sum), p.finish) : finish_float<Out, double>(sum, p.finish);
                }
    }

    template <class T>
    static void morph_typed(const MorphPlan& p, ConstImageView in, ImageView out) {
        const Mask& e = p.step.element;
        const bool dilate = p.step.kind == MorphKind::dilate;
        // SPEC: f32 NaN samples are missing; the NaN identity and fmax / fmin skip them (core/morph_value.hpp).
        const double identity = double(morph_identity<T>(dilate));
        const double outside = double(store_pixel<T>(p.step.border_value));
        const int channels = in.channels();
        for (int y = 0; y < out.height(); ++y)
            for (int x = 0; x < out.width(); ++x)
                for (int c = 0; c < channels; ++c) {
                    double best = identity;
                    for (int j = 0; j < e.height; ++j)
                        for (int i = 0; i < e.width; ++i) {
                            if (e.at(i, j) == 0) continue;
                            const long long sx = x + i - e.anchor_x, sy = y + j - e.anchor_y;
                            double v;
                            if (!p.step.border) {
                                if (sx < 0 || sy < 0 || sx >= in.width() || sy >= in.height()) continue;
                                v = double(in.row<T>(int(sy))[std::size_t(sx) * channels + c]);
                            } else {
                                v = sample<T>(in, sx, sy, c, *p.step.border, outside);
                            }
                            best = morph_pick(dilate, best, v);
                        }
                    out.row<T>(y)[std::size_t(x) * channels + c] = T(best);
                }
    }

    // SPEC: the window's samples through the border, ordered by their keys (core/rank_value.hpp); NaN is
    // missing, and of the v valid samples the one of rank rank_among(rank, v, n) is taken.
    template <class T>
    static void rank_typed(const RankPlan& p, ConstImageView in, ImageView out) {
        const Mask& e = p.step.element;
        const T outside = store_pixel<T>(p.step.border_value);
        const int channels = in.channels();
        std::vector<std::uint32_t> keys;
        keys.reserve(std::size_t(p.count));
        for (int y = 0; y < out.height(); ++y)
            for (int x = 0; x < out.width(); ++x)
                for (int c = 0; c < channels; ++c) {
                    keys.clear();
                    for (int j = 0; j < e.height; ++j)
                        for (int i = 0; i < e.width; ++i) {
                            if (e.at(i, j) == 0) continue;
                            const int xi = map_index(x + i - e.anchor_x, in.width(), p.step.border);
                            const int yi = map_index(y + j - e.anchor_y, in.height(), p.step.border);
                            const T v = xi < 0 || yi < 0 ? outside : in.row<T>(yi)[std::size_t(xi) * channels + c];
                            const std::uint32_t k = rank_key(v);
                            if (k != rank_missing_key) keys.push_back(k);
                        }
                    T& o = out.row<T>(y)[std::size_t(x) * channels + c];
                    if (keys.empty()) {
                        o = rank_value<T>(rank_missing_key);  // NaN (only f32 has missing samples)
                        continue;
                    }
                    const int r = rank_among(p.step.rank, int(keys.size()), p.count);
                    std::nth_element(keys.begin(), keys.begin() + r, keys.end());
                    o = rank_value<T>(keys[std::size_t(r)]);
                }
    }

    // The same over a volume's window (Axes::volume): the element's planes (RankStep) about each voxel's plane,
    // every axis read through the border; `in` is the whole volume (a 2-D image: one plane).
    template <class T>
    static void rank_volume_typed(const RankPlan& p, ConstImageView in, ImageView out) {
        const RankStep& s = p.step;
        const Mask& e = s.element;
        const int rows = s.plane_rows(), depth = in.shape.depth, channels = in.channels();
        const T outside = store_pixel<T>(s.border_value);
        std::vector<std::uint32_t> keys;
        for (int z = 0; z < depth; ++z)
            for (int y = 0; y < in.height(); ++y)
                for (int x = 0; x < in.width(); ++x)
                    for (int c = 0; c < channels; ++c) {
                        keys.clear();
                        for (int k = 0; k < s.depth; ++k)
                            for (int j = 0; j < rows; ++j)
                                for (int i = 0; i < e.width; ++i) {
                                    if (e.at(i, k * rows + j) == 0) continue;
                                    const int zi = map_index(z + k - s.anchor_z(), depth, s.border);
                                    const int yi = map_index(y + j - s.anchor_row(), in.height(), s.border);
                                    const int xi = map_index(x + i - e.anchor_x, in.width(), s.border);
                                    const T v = xi < 0 || yi < 0 || zi < 0
                                                    ? outside
                                                    : in.plane(zi).row<T>(yi)[std::size_t(xi) * channels + c];
                                    const std::uint32_t key = rank_key(v);
                                    if (key != rank_missing_key) keys.push_back(key);
                                }
                        T& o = out.plane(z).row<T>(y)[std::size_t(x) * channels + c];
                        if (keys.empty()) {
                            o = rank_value<T>(rank_missing_key);
                            continue;
                        }
                        const int r = rank_among(s.rank, int(keys.size()), p.count);
                        std::nth_element(keys.begin(), keys.begin() + r, keys.end());
                        o = rank_value<T>(keys[std::size_t(r)]);
                    }
    }
};

} // namespace

std::unique_ptr<Executor> make_reference_executor() { return std::make_unique<ReferenceExecutor>(); }

} // namespace apron
