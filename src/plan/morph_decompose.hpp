#pragma once
// Flat structuring elements as chords (horizontal runs of set cells), and the choice between the rectangle,
// chord and direct algorithms for one morphology step. See morph_decompose.cpp for the cost model.
#include <vector>

#include "plan/plan.hpp"

namespace apron {

// The runs of set cells of `element`, row by row (sorted by dy, then dx), relative to its anchor. The union
// of the chords' cells is exactly the element's set cells, each cell in one chord.
std::vector<MorphChord> element_chords(const Mask& element);

// The largest power of two <= length (length >= 1): a chord of `length` is the extremum of two runs of
// that many cells, overlapping (Urbach-Wilkinson: two table reads per chord).
int chord_power(int length);

// Algorithm for a step with this element (`full`: every cell set): separable_rect for a full element of more
// than one cell, else chords or direct by the cost model. Fills p.algorithm and, for chords, p.chords.
void decompose_element(MorphPlan& p, bool full);

// The kernels that run chords take at most this many, with sides up to max_chord_side: bigger elements
// run direct (correct, slower).
constexpr int max_chords = 128;
constexpr int max_chord_side = 64;

} // namespace apron
