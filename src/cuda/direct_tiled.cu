// Dispatch of the direct kernels for odd square masks by mask size: exact u8 plans with byte-sized weights
// take the IDP.4A kernel (direct_dp4a.cu), the rest the register or tiled kernels (direct_tiled_impl.cuh,
// direct_regs_impl.cuh).
#include "cuda/direct_tiled.hpp"

#include "apron/errors.hpp"
#include "cuda/direct_dp4a.hpp"

namespace apron::cuda {

template <int K>
void launch_direct_tiled_k(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream, int row_begin,
                           int row_end);

bool direct_tiled_supports(const LinearPlan& p) {
    const Mask& m = p.step.mask;
    const bool odd_square = m.width == m.height && m.width % 2 == 1 && m.width >= 3 && m.width <= 31 &&
                            m.anchor_x == m.width / 2 && m.anchor_y == m.height / 2;
    return odd_square && p.accumulator == Accumulator::f32;
}

void launch_direct_tiled(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream, int row_begin,
                         int row_end) {
    if (row_end < 0) row_end = in.height();
    if (row_begin >= row_end) return;
    if (direct_dp4a_supports(p, in)) return launch_direct_dp4a(p, in, out, stream, row_begin, row_end);
    switch (p.step.mask.width) {
    case 3: return launch_direct_tiled_k<3>(p, in, out, stream, row_begin, row_end);
    case 5: return launch_direct_tiled_k<5>(p, in, out, stream, row_begin, row_end);
    case 7: return launch_direct_tiled_k<7>(p, in, out, stream, row_begin, row_end);
    case 9: return launch_direct_tiled_k<9>(p, in, out, stream, row_begin, row_end);
    case 11: return launch_direct_tiled_k<11>(p, in, out, stream, row_begin, row_end);
    case 13: return launch_direct_tiled_k<13>(p, in, out, stream, row_begin, row_end);
    case 15: return launch_direct_tiled_k<15>(p, in, out, stream, row_begin, row_end);
    case 17: return launch_direct_tiled_k<17>(p, in, out, stream, row_begin, row_end);
    case 19: return launch_direct_tiled_k<19>(p, in, out, stream, row_begin, row_end);
    case 21: return launch_direct_tiled_k<21>(p, in, out, stream, row_begin, row_end);
    case 23: return launch_direct_tiled_k<23>(p, in, out, stream, row_begin, row_end);
    case 25: return launch_direct_tiled_k<25>(p, in, out, stream, row_begin, row_end);
    case 27: return launch_direct_tiled_k<27>(p, in, out, stream, row_begin, row_end);
    case 29: return launch_direct_tiled_k<29>(p, in, out, stream, row_begin, row_end);
    case 31: return launch_direct_tiled_k<31>(p, in, out, stream, row_begin, row_end);
    default: throw Error("direct_tiled: unsupported mask size");
    }
}

} // namespace apron::cuda
