#pragma once
// The chord kernel's schedules (morph_chords.cu): how its register path builds the run tables and loads the
// staged samples. The dispatch table picks one per plan (chords_schedule_for); the results are the same.
// Plain C++: the planner names the schedule in the plan without a GPU.

namespace apron::cuda {

enum class ChordSchedule : int {
    // Every thread loads the samples of its table segment from global memory, each through the border
    // tests, and doubles them into the tables in registers: one channel with many chord lengths (disk:7).
    thread_loads = 0,
    // Whole warps stage each raw row in shared memory once (4 bytes a lane inside the image), the tables
    // are built from there column-major, and chords of equal offsets on consecutive rows are read as runs:
    // colour, and one channel with few chord lengths (ellipses, crosses).
    staged_rows = 1,
};

constexpr ChordSchedule chord_schedules[] = {ChordSchedule::thread_loads, ChordSchedule::staged_rows};

constexpr const char* name_of(ChordSchedule s) {
    return s == ChordSchedule::thread_loads ? "thread_loads" : "staged_rows";
}

} // namespace apron::cuda
