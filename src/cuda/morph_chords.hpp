#pragma once
// Morphology with any flat structuring element, as chords (runs of set cells) over power-of-two run tables
// in shared memory (Urbach-Wilkinson; see morph_chords.cu).
#include <cuda_runtime.h>

#include "plan/plan.hpp"

namespace apron::cuda {

// Whether this kernel family handles the plan (algorithm chords, at most max_chords chords, sides up to
// max_chord_side, a tile that fits shared memory for any channel count); the executor falls back otherwise.
bool morph_chords_supports(const MorphPlan& plan);
void launch_morph_chords(const MorphPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);

// Kernel variants (morph_chords.cu's header): the dispatch table picks one per plan (chords_variant_for,
// or APRON_CHORDS_VARIANT=0..morph_chords_variants-1 through its overrides); set_morph_chords_variant
// forces one (-1: back to the table's choice), for tests that check every variant.
constexpr int morph_chords_variants = 7;
void set_morph_chords_variant(int variant);

} // namespace apron::cuda
