// Dispatch of the direct kernels for odd square masks by mask size: exact u8 plans with byte-sized weights
// take the IDP.4A kernel (direct_dp4a.cu), the rest the register or tiled kernels (direct_tiled_impl.cuh,
// direct_regs_impl.cuh).
#include "cuda/direct_tiled.hpp"

#include "apron/errors.hpp"
#include "cuda/direct_dp4a.hpp"
#include "cuda/dispatch_table.hpp"
#include "cuda/launch_record.hpp"
#include "cuda/with_channels.hpp"
#include "cuda/with_size.hpp"

namespace apron::cuda {

// Defined in direct_regs_impl.cuh, instantiated per group of mask sizes (instantiated_sizes.hpp) and per
// channel count in files src/cuda/CMakeLists.txt generates.
template <int K, int C>
void launch_direct_tiled_k(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream, int row_begin,
                           int row_end);

} // namespace apron::cuda

#include "instantiations/direct_tiled_externs.inc"

namespace apron::cuda {

bool direct_tiled_supports(const LinearPlan& p) {
    const Mask& m = p.step.mask;
    const bool odd_square = m.width == m.height && m.width % 2 == 1 && m.anchor_x == m.width / 2 &&
                            m.anchor_y == m.height / 2;
    return odd_square && has_size(direct_tiled_sizes, m.width) && p.accumulator == Accumulator::f32;
}

void launch_direct_tiled(const LinearPlan& p, ConstImageView in, ImageView out, cudaStream_t stream, int row_begin,
                         int row_end) {
    if (row_end < 0) row_end = in.height();
    if (row_begin >= row_end) return;
    if (direct_dp4a_supports(p, in)) {
        record_launch(direct_form_name("cuda.direct_dp4a", p.step.mask.width, 0));
        return launch_direct_dp4a(p, in, out, stream, row_begin, row_end);
    }
    if (const auto fixed = direct_dp2a_form(p, in)) {
        record_launch({"cuda.direct_dp2a", fixed_point_detail(p.step.mask.width, *fixed)});
        return launch_direct_dp2a(p, *fixed, in, out, stream, row_begin, row_end);
    }
    with_channels(in.channels(), [&]<int C>() {
        const bool launched = with_size<direct_tiled_sizes>(p.step.mask.width, [&]<int K>() {
            launch_direct_tiled_k<K, C>(p, in, out, stream, row_begin, row_end);
        });
        if (!launched) throw Error("direct_tiled: unsupported mask size");
    });
}

} // namespace apron::cuda
