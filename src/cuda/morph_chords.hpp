#pragma once
// Morphology with any flat structuring element, as chords (runs of set cells) over power-of-two run tables
// in shared memory (Urbach-Wilkinson; see morph_chords.cu).
#include <optional>

#include <cuda_runtime.h>

#include "cuda/chord_schedule.hpp"
#include "plan/plan.hpp"

namespace apron::cuda {

// Whether this kernel family handles the plan (algorithm chords, at most max_chords chords, sides up to
// max_chord_side, a tile that fits shared memory for any channel count); the executor falls back otherwise.
bool morph_chords_supports(const MorphPlan& plan);
void launch_morph_chords(const MorphPlan& plan, ConstImageView in, ImageView out, cudaStream_t stream);

// The schedule the kernel runs (chord_schedule.hpp) is the dispatch table's (chords_schedule_for, which
// APRON_CHORDS_VARIANT=0|1 overrides); set_morph_chords_schedule forces one (nullopt: back to the table's
// choice), for tests that check each schedule.
void set_morph_chords_schedule(std::optional<ChordSchedule> schedule);

} // namespace apron::cuda
