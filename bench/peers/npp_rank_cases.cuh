// NPP on the rank-filter cases (bench/rank_cases.hpp gives the names): nppiFilterMedian, the median over a
// rectangle, 8u C1R / C3R at 3x3, 5x5, 7x7 and 31x31, 16u C1R and 32f C1R at 3x3 (NPP has no median over
// other shapes: no disk:15 row). NPP's median has no border mode: each call runs on the interior ROI, the
// image less k / 2 pixels on every side (source and destination pointers moved in by that much, anchor at the
// centre), as NPP users call it; the rows still count size x size pixels (the ROI is 0.07 % (3x3) to 0.7 %
// (31x31) smaller at 8192). The scratch buffer comes from nppiFilterMedianGetBufferSize, allocated once per
// case outside the timing.
#pragma once

#include <string>
#include <vector>

namespace rank_cases {

#define NPP_MEDIAN_OVERLOAD(T, SUFFIX)                                                                         \
    inline NppStatus median_buffer(const T*, int c, NppiSize roi, NppiSize mask, Npp32u* bytes,                  \
                                   const NppStreamContext& ctx) {                                              \
        return c == 1 ? nppiFilterMedianGetBufferSize_##SUFFIX##_C1R_Ctx(roi, mask, bytes, ctx)                  \
             : c == 3 ? nppiFilterMedianGetBufferSize_##SUFFIX##_C3R_Ctx(roi, mask, bytes, ctx)                  \
                      : nppiFilterMedianGetBufferSize_##SUFFIX##_C4R_Ctx(roi, mask, bytes, ctx);                 \
    }                                                                                                          \
    inline NppStatus median(const T* s, int ss, T* d, int ds, NppiSize roi, NppiSize mask, NppiPoint anchor,     \
                            Npp8u* buffer, int c, const NppStreamContext& ctx) {                               \
        return NPP_BY_CHANNELS(c, nppiFilterMedian_##SUFFIX##_, s, ss, d, ds, roi, mask, anchor, buffer, ctx);   \
    }
NPP_MEDIAN_OVERLOAD(Npp8u, 8u)
NPP_MEDIAN_OVERLOAD(Npp16u, 16u)
NPP_MEDIAN_OVERLOAD(Npp32f, 32f)
#undef NPP_MEDIAN_OVERLOAD

// Median k x k on a size x size image of c channels of T, for each k: rows through record(op, type, param,
// size, ms, channels, shape).
template <class T, class Record>
void run_median(const char* type, int c, const std::vector<int>& ks, int size, Timer& timer, const NppStreamContext& ctx,
                Record&& record) {
    user_cases::ColourImage<T> src(size, c, unsigned(size) + 7919u * unsigned(c)), dst(size, c, 1u);
    for (const int k : ks) {
        const int r = k / 2;
        const NppiSize roi{size - 2 * r, size - 2 * r}, mask{k, k};
        const NppiPoint anchor{r, r};
        const std::string shape = "rect:" + std::to_string(k) + "x" + std::to_string(k);
        const std::string what = "FilterMedian " + shape + " " + type + " C" + std::to_string(c) + " @" + std::to_string(size);
        Npp32u bytes = 0;
        if (median_buffer(src.ptr, c, roi, mask, &bytes, ctx) != NPP_SUCCESS) {
            std::fprintf(stderr, "npp_peers: %s: no buffer size, skipped\n", what.c_str());
            continue;
        }
        Npp8u* buffer = nullptr;
        CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&buffer), std::max<size_t>(bytes, 1)));
        const T* s = reinterpret_cast<const T*>(reinterpret_cast<const char*>(src.ptr) + size_t(r) * src.pitch) + size_t(r) * c;
        T* d = reinterpret_cast<T*>(reinterpret_cast<char*>(dst.ptr) + size_t(r) * dst.pitch) + size_t(r) * c;
        record("median", type, k, size, timer.median_ms(what, [&] {
            return median(s, src.step(), d, dst.step(), roi, mask, anchor, buffer, c, ctx);
        }), c, shape);
        CUDA_CHECK(cudaDeviceSynchronize());
        cudaFree(buffer);
    }
}

template <class Record>
void run_all(int size, Timer& timer, const NppStreamContext& ctx, Record&& record) {
    for (const int c : {1, 3}) run_median<Npp8u>("u8", c, {3, 5, 7, 31}, size, timer, ctx, record);
    run_median<Npp16u>("u16", 1, {3}, size, timer, ctx, record);
    run_median<Npp32f>("f32", 1, {3}, size, timer, ctx, record);
}

} // namespace rank_cases
