// Rank filters on the GPU. The families, in the order launch_rank tries them:
//  - rank_bits (this file): any element and type. One thread per output sample finds the rank-th key by a
//    radix select over the key's bits, most significant first: at each bit it counts the window's keys
//    below the trial prefix (a pass over the window), so it costs bits x n reads and needs no memory.
#include <cstdint>
#include <vector>

#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "core/rank_value.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_view.hpp"
#include "cuda/launch_record.hpp"
#include "cuda/rank_filter.hpp"

namespace apron::cuda {
namespace {

template <class T>
__device__ __forceinline__ std::uint32_t key_at(const DeviceView& v, long long x, long long y, int c, BorderMode mode,
                                                std::uint32_t outside) {
    const int xi = map_index(x, v.width, mode), yi = map_index(y, v.height, mode);
    if (xi < 0 || yi < 0) return outside;
    return rank_key(reinterpret_cast<const T*>(v.data + std::size_t(yi) * v.pitch)[std::size_t(xi) * v.channels + c]);
}

template <class T>
__global__ void rank_bits(DeviceView in, std::byte* out, std::size_t out_pitch, const int2* cells, int n, int rank,
                          BorderMode mode, std::uint32_t outside) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (k >= in.width * in.channels || y >= in.height) return;
    const int x = k / in.channels, c = k % in.channels;
    T* o = reinterpret_cast<T*>(out + std::size_t(y) * out_pitch) + k;
    int valid = n;
    if constexpr (std::is_same_v<T, float>) {
        valid = 0;
        for (int t = 0; t < n; ++t) valid += key_at<T>(in, x + cells[t].x, y + cells[t].y, c, mode, outside) != rank_missing_key;
        if (valid == 0) {
            *o = rank_value<T>(rank_missing_key);
            return;
        }
    }
    const int want = rank_among(rank, valid, n);
    std::uint32_t result = 0;
    for (int b = rank_key_bits<T> - 1; b >= 0; --b) {
        const std::uint32_t trial = result | (1u << b);
        int below = 0;
        for (int t = 0; t < n; ++t) below += key_at<T>(in, x + cells[t].x, y + cells[t].y, c, mode, outside) < trial;
        if (below <= want) result = trial;  // fewer than want + 1 keys lie below: the answer is at or above trial
    }
    *o = rank_value<T>(result);
}

void launch_rank_bits(const RankPlan& p, ConstImageView in, ImageView out, cudaStream_t stream) {
    std::vector<int2> cells;
    for (const MorphChord& run : p.chords)
        for (int i = 0; i < run.length; ++i) cells.push_back(make_int2(run.dx + i, run.dy));
    int2* d_cells = nullptr;
    APRON_CUDA_CHECK(cudaMallocAsync(&d_cells, cells.size() * sizeof(int2), stream));
    APRON_CUDA_CHECK(cudaMemcpyAsync(d_cells, cells.data(), cells.size() * sizeof(int2), cudaMemcpyHostToDevice, stream));
    const dim3 block(64, 4);
    const dim3 grid(unsigned((out.width() * out.channels() + 63) / 64), unsigned((out.height() + 3) / 4));
    with_type(p.type, [&]<class T>() {
        rank_bits<T><<<grid, block, 0, stream>>>(device_view(in), out.data, out.pitch, d_cells, int(cells.size()),
                                                 p.step.rank, p.step.border, rank_key(store_pixel<T>(p.step.border_value)));
    });
    const cudaError_t launched = cudaGetLastError();
    cudaFreeAsync(d_cells, stream);  // stream-ordered: after the kernel
    APRON_CUDA_CHECK(launched);
}

} // namespace

KernelChoice choose_rank(const RankPlan&, const ImageShape&) { return {"cuda.rank_bits", ""}; }

void launch_rank(const RankPlan& p, ConstImageView in, ImageView out, cudaStream_t stream) {
    record_launch(choose_rank(p, in.shape));
    launch_rank_bits(p, in, out, stream);
}

} // namespace apron::cuda
