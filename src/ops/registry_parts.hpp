#pragma once
// Each family of operations registers itself from its own file; registry.cpp calls them in this order,
// which is also the order `apron ops` lists them in.
#include <optional>
#include <string_view>
#include <vector>

#include "apron/ops.hpp"

namespace apron {

void add_linear_operations(std::vector<OpInfo>& ops);      // ops_linear.cpp
void add_edge_operations(std::vector<OpInfo>& ops);        // ops_edges.cpp
void add_morphology_operations(std::vector<OpInfo>& ops);  // ops_morphology.cpp
void add_preset_operations(std::vector<OpInfo>& ops);      // ops_presets.cpp
void add_rank_operations(std::vector<OpInfo>& ops);        // ops_rank.cpp
// The parameters nan, preserve_nan and nodata, and the rewriting of the op's program they ask for
// (ops_nan.cpp): the registry applies it to every operation of the linear, edge and preset categories.
void add_missing_sample_parameters(OpInfo& op);

// Parameters shared by every linear operation: border, value, scale, delta (and normalize when asked).
std::vector<ParamSpec> linear_params(bool with_normalise, const char* default_border = "reflect");
// A one-step program from a mask and the shared linear parameters.
OpProgram linear_program(Mask mask, const OpArgs& args);
// A linear filter of a volume whose weights are plane(i, j) * depth[k] (SPEC.md "Volumes"): a plane step of
// `plane`'s raw sums, then a step along z with `depth` (centred) that applies the shared linear parameters.
// Empty `depth`: linear_program(plane). The constant border reads as value `value` in every voxel outside,
// so the z step's border is value * sum(plane): the plane sums of an outside plane.
OpProgram volume_program(Mask plane, const std::vector<double>& depth, const OpArgs& args);
// The rank-1 mask column (x) row: weight(i, j) = column[j] * row[i].
Mask outer_mask(const std::vector<double>& column, const std::vector<double>& row);
// A structuring element of a volume (SPEC.md "Volumes"): its planes, plane k at dz = k - anchor_z (a plane
// with no cell set is an empty Mask; the others are all W x H, anchored at their centre).
struct VolumeElement {
    std::vector<Mask> planes;
    int anchor_z = 0;
};
// An element's planes (OpArgs::element_planes: a 3-D shape, a 'W H D' file or given planes, checked) as a
// volume's element (ops_morphology.cpp): centred in z, planes with no cell set empty.
VolumeElement volume_of(std::vector<Mask> planes);
// A 3x3 mask from its nine weights, row by row.
Mask mask3x3(std::initializer_list<double> weights);

} // namespace apron
