// Rank filters over a volume's window on the GPU (Axes::volume; SPEC.md "Volumes", "Rank"): `rank_volume_bits`,
// one thread per output sample of the whole volume, finds the rank-th key by the radix select (rank_select.cuh)
// that rank_bits (rank_filter.cu) also runs: at each bit, most significant first, it counts the window's keys below the trial prefix in
// a pass over the window's cells read through the border in x, y and z (windows of up to 64 cells read once into
// the thread's local memory, larger ones read again each bit), so any window size runs; f32 first counts the valid (non-NaN) samples for the rank among them. The result
// is the rank-th sample in the order of core/rank_value.hpp: the reference's bits.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/border_index.hpp"
#include "core/dispatch.hpp"
#include "core/pixel.hpp"
#include "core/rank_value.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/launch_record.hpp"
#include "cuda/rank_filter.hpp"
#include "cuda/rank_select.cuh"

namespace apron::cuda {
namespace {

// The volume as a kernel reads it: plane z's row y starts at data + (z * height + y) * pitch.
struct VolumeView {
    const std::byte* data;
    std::size_t pitch;
    int width, height, depth, channels;
};

template <class T>
__device__ __forceinline__ std::uint32_t key_at(const VolumeView& v, long long x, long long y, long long z, int c, BorderMode mode,
                                                std::uint32_t outside) {
    const int xi = map_index(x, v.width, mode), yi = map_index(y, v.height, mode), zi = map_index(z, v.depth, mode);
    if (xi < 0 || yi < 0 || zi < 0) return outside;
    const std::byte* row = v.data + (std::size_t(zi) * v.height + std::size_t(yi)) * v.pitch;
    return rank_key(reinterpret_cast<const T*>(row)[std::size_t(xi) * v.channels + c]);
}

// Windows of at most this many cells keep their keys in the thread's local memory (read once); larger ones
// read the window again for every bit.
constexpr int kept_keys = 64;

// Thread (k, r): sample k of row r of the volume's rows (r = z * height + y), rows from row0.
template <class T>
__global__ void rank_volume_bits(VolumeView in, std::byte* out, std::size_t out_pitch, const int4* cells, int n, int rank,
                                 BorderMode mode, std::uint32_t outside, long long row0) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    const long long r = row0 + (long long)(blockIdx.y * blockDim.y + threadIdx.y);
    if (k >= in.width * in.channels || r >= (long long)in.height * in.depth) return;
    const int x = k / in.channels, c = k % in.channels, y = int(r % in.height), z = int(r / in.height);
    T* o = reinterpret_cast<T*>(out + std::size_t(r) * out_pitch) + k;
    const bool keep = n <= kept_keys;
    std::uint32_t kept[kept_keys];
    for (int t = 0; t < (keep ? n : 0); ++t) kept[t] = key_at<T>(in, x + cells[t].x, y + cells[t].y, z + cells[t].z, c, mode, outside);
    const std::uint32_t* held = kept;
    auto key = [&](int t) {
        return keep ? held[t] : key_at<T>(in, x + cells[t].x, y + cells[t].y, z + cells[t].z, c, mode, outside);
    };
    *o = select_rank<T>(n, rank, key);
}

// The element's set cells as (dx, dy, dz) offsets from the anchor.
std::vector<int4> window_cells(const RankStep& s) {
    std::vector<int4> cells;
    const Mask& e = s.element;
    const int rows = s.plane_rows();
    for (int k = 0; k < s.depth; ++k)
        for (int j = 0; j < rows; ++j)
            for (int i = 0; i < e.width; ++i)
                if (e.at(i, k * rows + j) != 0) cells.push_back(make_int4(i - e.anchor_x, j - s.anchor_row(), k - s.anchor_z(), 0));
    return cells;
}

} // namespace

void launch_rank_volume(const RankPlan& p, ConstImageView in, ImageView out, cudaStream_t stream) {
    record_launch(KernelChoice{"cuda.rank_volume_bits", ""});
    const std::vector<int4> cells = window_cells(p.step);
    if (in.empty() || cells.empty()) return;
    int4* d_cells = nullptr;
    APRON_CUDA_CHECK(cudaMallocAsync(&d_cells, cells.size() * sizeof(int4), stream));
    APRON_CUDA_CHECK(cudaMemcpyAsync(d_cells, cells.data(), cells.size() * sizeof(int4), cudaMemcpyHostToDevice, stream));
    const VolumeView v{in.data, in.pitch, in.width(), in.height(), in.shape.depth, in.channels()};
    const dim3 block(64, 4);
    const long long blocks_y = (in.shape.rows() + 3) / 4;
    cudaError_t launched = cudaSuccess;
    for (long long by = 0; by < blocks_y && launched == cudaSuccess; by += 65535) {  // grid.y is at most 65535
        const dim3 grid(unsigned((out.width() * out.channels() + 63) / 64), unsigned(std::min(65535LL, blocks_y - by)));
        with_type(p.type, [&]<class T>() {
            rank_volume_bits<T><<<grid, block, 0, stream>>>(v, out.data, out.pitch, d_cells, int(cells.size()), p.step.rank,
                                                            p.step.border, rank_key(store_pixel<T>(p.step.border_value)), by * 4);
        });
        launched = cudaGetLastError();
    }
    cudaFreeAsync(d_cells, stream);  // stream-ordered: after the kernel
    APRON_CUDA_CHECK(launched);
}

} // namespace apron::cuda
