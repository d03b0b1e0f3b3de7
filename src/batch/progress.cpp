// Progress bar and end-of-run stage summary of `apron batch` (see progress.hpp).
#include "batch/progress.hpp"

#include <algorithm>
#include <cmath>

#include "core/concat.hpp"

namespace apron::batch {

namespace {

constexpr int kBarWidth = 20;
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
// Before this much time, one image's pixels over a few microseconds would show an absurd rate and ETA.
constexpr double kMinSecondsForRate = 0.5;

// "m:ss", or "h:mm:ss" from one hour on.
std::string format_duration(double seconds) {
    const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
    const long long h = total / 3600, m = total / 60 % 60, s = total % 60;
    char text[48];
    if (h > 0) std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", h, m, s);
    else std::snprintf(text, sizeof text, "%lld:%02lld", m, s);
    return text;
}

// "[=====>    ]": the tip marks a bar that is not full yet.
std::string bar(std::size_t done, std::size_t total) {
    const std::size_t filled = total == 0 ? 0 : std::min(done, total) * kBarWidth / total;
    std::string b = "[";
    b.append(filled, '=');
    if (filled < std::size_t(kBarWidth)) b += '>';
    b.resize(kBarWidth + 1, ' ');
    return b + "]";
}

// The stages that can be a bottleneck; idle is waiting, not work.
constexpr Stage kWorkStages[] = {Stage::read,    Stage::hash,     Stage::decode, Stage::pin,  Stage::upload,
                                 Stage::compute, Stage::download, Stage::encode, Stage::write};

// GB/s a stage moved over the run; 0 where it counts no bytes.
double rate(const StageClock& clock, Stage s, double wall_seconds) {
    return wall_seconds > 0 ? double(clock.bytes(s)) * 1e-9 / wall_seconds : 0;
}

double utilisation(const StageClock& clock, Stage s, double wall_seconds) {
    if (!(wall_seconds > 0)) return 0;
    return clock.seconds(s) / (wall_seconds * std::max(1, clock.workers(s)));
}

}  // namespace

const char* to_string(Stage s) {
    switch (s) {
    case Stage::read: return "read";
    case Stage::hash: return "hash";
    case Stage::decode: return "decode";
    case Stage::pin: return "pin";
    case Stage::upload: return "upload";
    case Stage::compute: return "compute";
    case Stage::download: return "download";
    case Stage::encode: return "encode";
    case Stage::write: return "write";
    case Stage::idle: return "idle";
    }
    return "?";
}

void StageClock::add(Stage s, double seconds) {
    if (!(seconds > 0)) return;  // also drops NaN, which llround cannot convert
    ns_[int(s)].fetch_add(std::llround(seconds * 1e9), std::memory_order_relaxed);
}

double StageClock::seconds(Stage s) const { return double(ns_[int(s)].load(std::memory_order_relaxed)) * 1e-9; }

Progress::Progress(std::size_t total, bool enabled, std::FILE* out)
    : total_(total), enabled_(enabled && out != nullptr), out_(out), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { finish(); }

void Progress::advance(std::uint64_t pixels, bool failed) {
    std::lock_guard lock(mutex_);
    ++done_;
    if (failed) ++failed_;
    pixels_ += pixels;
    if (!enabled_ || finished_) return;
    if (std::chrono::steady_clock::now() - last_draw_ >= kRedrawInterval) draw(false);
}

void Progress::finish() {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    const bool drawn = last_draw_ != std::chrono::steady_clock::time_point{};
    if (!enabled_ || (!drawn && done_ == 0)) return;
    draw(true);
    std::fputc('\n', out_);
    std::fflush(out_);
}

// Called with mutex_ held.
void Progress::draw(bool final) {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const int digits = int(std::to_string(total_).size());

    char counts[96];
    std::snprintf(counts, sizeof counts, "  %*zu/%zu images", digits, done_, total_);
    std::string line = concat({"\r", bar(done_, total_), counts});
    if (failed_ > 0) line += "  " + std::to_string(failed_) + " failed";

    const bool measured = done_ > 0 && elapsed > 0 && (final || elapsed >= kMinSecondsForRate);
    if (measured) {
        char rate[48];
        std::snprintf(rate, sizeof rate, "  %.1f Mpix/s", double(pixels_) * 1e-6 / elapsed);
        line += rate;
    } else {
        line += "  -- Mpix/s";
    }

    if (final) {
        line += "  elapsed " + format_duration(elapsed);
    } else if (!measured) {
        line += "  ETA --:--";
    } else {
        const std::size_t left = total_ > done_ ? total_ - done_ : 0;
        line += "  ETA " + format_duration(elapsed / double(done_) * double(left));
    }

    const std::size_t width = line.size();
    if (width < last_width_) line.append(last_width_ - width, ' ');  // blank the tail of a longer previous line
    last_width_ = width;
    std::fputs(line.c_str(), out_);
    std::fflush(out_);
    last_draw_ = now;
}

std::string stage_summary(const StageClock& clock, double wall_seconds) {
    char header[128];
    std::snprintf(header, sizeof header, "%-9s %9s %8s %7s %7s\n", "stage", "busy s", "threads", "util", "GB/s");
    std::string text = header;
    for (int i = 0; i < stage_count; ++i) {
        const Stage s = Stage(i);
        char row[128];
        std::snprintf(row, sizeof row, "%-9s %9.2f %8d %6.1f%%", to_string(s), clock.seconds(s), clock.workers(s),
                      100.0 * utilisation(clock, s, wall_seconds));
        text += row;
        if (clock.bytes(s)) {
            std::snprintf(row, sizeof row, " %7.2f", rate(clock, s, wall_seconds));
            text += row;
        }
        text += "\n";
    }

    const Stage* busiest = nullptr;
    double best = 0;
    for (const Stage& s : kWorkStages)
        if (const double u = utilisation(clock, s, wall_seconds); u > best) {
            best = u;
            busiest = &s;
        }
    if (!busiest) return text + "bottleneck: none (nothing ran)\n";
    char last[128];
    if (clock.bytes(*busiest))
        std::snprintf(last, sizeof last, "bottleneck: %s (%.0f%% busy, %.2f GB/s)\n", to_string(*busiest), 100.0 * best,
                      rate(clock, *busiest, wall_seconds));
    else
        std::snprintf(last, sizeof last, "bottleneck: %s (%.0f%% busy)\n", to_string(*busiest), 100.0 * best);
    return text + last;
}

}  // namespace apron::batch
