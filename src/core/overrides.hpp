#pragma once
// The environment overrides of apron's own choices, read once per process into one table. They exist to
// measure the paths the planner and the backends would not take (docs/perf-notes.md); every plan records the
// ones in force (`apron plan` prints them), so a figure taken under one says so. No other code reads these
// variables.
#include <string>

namespace apron {

struct Overrides {
    // The planner.
    int fft_path = -1;             // APRON_FFT=0: never the FFT; 1: the FFT wherever it can run
    std::string calibration;       // APRON_CALIBRATION=FILE: the planner's cost table (apron calibrate)
    // Both FFT backends.
    int fft_side = 0;              // APRON_FFT_SIDE=N: N x N transforms (CPU: fft_linear.cpp; CUDA: fft_tiling.cpp)
    // The CUDA backend.
    int fft_batch = 0;             // APRON_FFT_BATCH=B: B tiles per cuFFT batch
    bool imma_off = false;         // APRON_IMMA=0: no tensor-core kernel
    bool dp4a_off = false;         // APRON_DP4A=0: no byte dot-product kernel
    int direct_regs = -1;          // APRON_DIRECT_REGS=0|4|8: the register kernel off / its outputs per thread
    bool runtime_off = false;      // APRON_RUNTIME_DIRECT=0: no run-time compiled kernel
    bool column_on = false;        // APRON_COLUMN=1: the column kernel for masks one sample wide (z steps; slower
                                   // than the run-time kernel so far: docs/perf-notes.md)
    bool rtc_integer = false;      // APRON_RTC_INTEGER=1: the run-time kernel accumulates integers where it can
    int chords_variant = -1;       // APRON_CHORDS_VARIANT=0|1: the chord kernel's schedule, thread_loads or
                                   // staged_rows (cuda/chord_schedule.hpp); other values: the table's choice
    bool volume_fused = false;     // APRON_VOLUME_FUSED=1: a volume's separable plane step and z column in one
                                   // pass (cuda/separable_volume_impl.cuh; slower than two passes so far)
    int volume_rows = 0;           // APRON_VOLUME_RY=2|4: the fused volume pass's rows a thread (0: its default)

    // "" when none is set, else the variables as given, e.g. "APRON_DP4A=0 APRON_FFT_SIDE=1024".
    std::string describe() const;
};

// The table, read from the environment on first use.
const Overrides& overrides();

// The other variables apron reads, also once: they set places and timings, not choices, so plans do not
// record them.
struct EnvironmentSettings {
    // The NVRTC kernel cache's folder: APRON_RTC_CACHE_DIR, else $XDG_CACHE_HOME/apron, else
    // $HOME/.cache/apron; "" with APRON_RTC_DISK_CACHE=0 (kernels compiled anew by every process).
    std::string rtc_cache_dir;
    double progress_seconds = -1;  // APRON_PROGRESS_SECONDS: seconds before `apron`'s first progress line (-1: unset)
    bool mpi_launched = false;     // an MPI launcher's variables are set (OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_*)
};
const EnvironmentSettings& environment_settings();

// For tests: the table as a process started with `o` would read it, until the scope ends. Not thread-safe
// against plans being made meanwhile.
class OverrideScope {
public:
    explicit OverrideScope(Overrides o);
    ~OverrideScope();
    OverrideScope(const OverrideScope&) = delete;
    OverrideScope& operator=(const OverrideScope&) = delete;

private:
    Overrides saved_;
};

} // namespace apron
