#pragma once
// Direct correlation of u8 images with small masks through the byte dot products (see direct_dp4a.cu):
// IDP.4A for exact integer masks, IDP.2A in fixed point for float masks.
#include <optional>
#include <string>

#include <cuda_runtime.h>

#include "core/fixed_point.hpp"

#include "plan/plan.hpp"

namespace apron::cuda {

// Whether the byte dot-product kernel takes this plan on this input: an exact plan, u8, one channel, an
// odd square mask 3x3 to 9x9 centred, every integer weight in [-128, 127], rows 4-byte aligned.
// APRON_DP4A=0 keeps it out (to measure the float kernels on the same cases).
bool direct_dp4a_supports(const LinearPlan& plan, ConstImageView in);
// Output rows [row_begin, row_end) (row_end < 0: to the bottom) of the whole image `in`.
void launch_direct_dp4a(const LinearPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream,
                        int row_begin = 0, int row_end = -1);

// The fixed-point form for a float plan on this input, or none: u8 in, u8 or u16 out, one channel, an odd
// square mask 3x3 or 5x5 centred (any view: unaligned rows are read byte by byte), and fixed-point weights whose error bound
// (core/fixed_point.hpp) is at most a quarter of a unit. APRON_DP4A=0 keeps it out too.
std::optional<FixedPointMask> direct_dp2a_form(const LinearPlan& plan, ConstImageView in);
// What the plan says of it: "k=3 fixed=2^-15 error<=0.0312".
std::string fixed_point_detail(int k, const FixedPointMask& f);
void launch_direct_dp2a(const LinearPlan& plan, const FixedPointMask& f, ConstImageView in, ImageView out,
                        cudaStream_t stream, int row_begin = 0, int row_end = -1);

} // namespace apron::cuda
