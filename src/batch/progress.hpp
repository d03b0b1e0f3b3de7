#pragma once
// What a user of `apron batch` sees while it runs and at the end: a progress bar on a terminal, and the
// per-stage summary that names the bottleneck.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace apron::batch {

// The stages of one image: reading the file (the system calls), its CRC-32 (for the manifest, fused with
// the read), decoding it, taking page-locked memory, copies to and from the GPU and the filters, encoding the
// result, its CRC-32 and writing it. `idle` is time a compute worker waited for input (decoded images).
enum class Stage { read, hash, decode, pin, upload, compute, download, encode, write, idle };
constexpr int stage_count = 10;
const char* to_string(Stage s);

// Busy time per stage, summed over the threads doing it (thread-safe), and how many threads do each.
class StageClock {
public:
    void add(Stage s, double seconds);
    double seconds(Stage s) const;
    void set_workers(Stage s, int n) { workers_[int(s)] = n; }
    int workers(Stage s) const { return workers_[int(s)]; }
    // Bytes a stage moved (files read or written, pixels copied), for its rate in the summary.
    void add_bytes(Stage s, std::uint64_t bytes) { bytes_[int(s)].fetch_add(bytes, std::memory_order_relaxed); }
    std::uint64_t bytes(Stage s) const { return bytes_[int(s)].load(std::memory_order_relaxed); }

private:
    std::atomic<std::int64_t> ns_[stage_count] = {};
    std::atomic<std::uint64_t> bytes_[stage_count] = {};
    int workers_[stage_count] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
};

// Times a scope into a StageClock.
class StageTimer {
public:
    StageTimer(StageClock& clock, Stage s) : clock_(clock), stage_(s), start_(std::chrono::steady_clock::now()) {}
    ~StageTimer() {
        clock_.add(stage_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    }

private:
    StageClock& clock_;
    Stage stage_;
    std::chrono::steady_clock::time_point start_;
};

// A one-line bar on stderr, redrawn at most 10 times a second: done/total images, failures (when any),
// Mpix/s and the ETA from the average rate so far ("--" for the first half second, when one image over a few
// microseconds would give nonsense); the final line shows the elapsed time instead of the ETA.
// Disabled (prints nothing at all) when `enabled` is false: callers pass isatty(stderr) && !quiet.
// finish() is idempotent; it prints the final line and its '\n' only when the bar was shown or an image
// finished, so an empty run leaves the terminal untouched.
class Progress {
public:
    Progress(std::size_t total, bool enabled, std::FILE* out = stderr);
    ~Progress();
    void advance(std::uint64_t pixels, bool failed = false);  // one image finished (thread-safe)
    void finish();  // final redraw and newline

private:
    void draw(bool final);
    std::size_t total_;
    bool enabled_;
    std::FILE* out_;
    std::mutex mutex_;
    std::size_t done_ = 0, failed_ = 0;
    std::uint64_t pixels_ = 0;
    std::chrono::steady_clock::time_point start_, last_draw_;  // last_draw_ stays at epoch until drawn
    std::size_t last_width_ = 0;  // length of the previous line, so a shorter one can blank its tail
    bool finished_ = false;
};

// The end-of-run table: for each stage its busy seconds, threads, utilisation (busy / (wall * threads)) and
// the GB/s it moved over the run (where it counts bytes), then "bottleneck: STAGE (NN% busy)" naming the
// most utilised stage (idle is shown but never the bottleneck; ties go to the earlier stage), with ", X GB/s"
// where that stage counts bytes, or "bottleneck: none (nothing ran)" when wall_seconds <= 0 or no stage but
// idle was busy.
std::string stage_summary(const StageClock& clock, double wall_seconds);

} // namespace apron::batch
