// The apron command line. Subcommands: filter (run operations on an image), batch (many images, on every
// GPU and across MPI ranks: batch_command.cpp), plan (what the planner would do: each step's path and kernel,
// with the predicted time of every path), calibrate (measure the paths for the planner's table), ops
// (the registry's operations, parameters, defaults and limits), info (backends, devices, formats).
// Every failure prints one line "apron: <what>: <problem>" and exits non-zero; outputs are written
// atomically, so a failed run never leaves a partial file.
#include <CLI/CLI.hpp>
#include <malloc.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <functional>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <optional>
#include <thread>

#include "core/overrides.hpp"
#include "apron/calibrate.hpp"
#include "apron/devices.hpp"
#include "apron/errors.hpp"
#include "apron/io.hpp"
#include "apron/volume_io.hpp"
#include "apron/memory.hpp"
#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "apron/stream.hpp"
#include "cli_docs.hpp"
#include "batch_command.hpp"
#include "cli_options.hpp"
#include "core/usable_cores.hpp"
#include "dist/mpi_stream.hpp"
#include "io/file_lock.hpp"
#include "io/output_target.hpp"
#include "io/row_stream.hpp"
#include "plan/step_kind.hpp"
#include "stream/faster_streamed.hpp"
#include "stream/journal.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct FilterArgs {
    std::string input, output;
    std::vector<std::string> ops;
    std::string out_type, backend = "auto", algo = "auto";
    int threads = 0;
    bool timing = false, plan_only = false, auto_orient = false;
    std::int64_t max_pixels = std::int64_t(1) << 30;
    int quality = 95;
    std::string metadata = "keep";
    std::string memory, byte_order = "big";
    // Images larger than memory (apron/stream.hpp).
    std::string stream = "auto", raw;
    bool resume = false, max_pixels_given = false;
    int band_rows = 0, tile = 256, io_threads = 0;
    std::string compression = "none";
    bool compression_given = false, tile_given = false, quality_given = false;
    int page = -1;  // --page: one page of a multi-page TIFF or plane of a FITS cube (-1: not given)
    bool volume = false;  // --volume: every page (plane) as one volume's planes
};

// The lower-case extension of an output path ("" when it has none).
std::string output_extension(const std::string& path) {
    const std::size_t dot = path.find_last_of('.'), slash = path.find_last_of('/');
    std::string ext = dot == std::string::npos || (slash != std::string::npos && dot < slash) ? "" : path.substr(dot + 1);
    for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
    return ext;
}

// The output options of one format, refused for another rather than ignored: --compression and --tile
// apply to TIFF output (streamed or whole), --quality to JPEG output.
void check_output_options(const FilterArgs& a) {
    if (a.compression != "none" && a.compression != "deflate" && a.compression != "zstd" && a.compression != "lzw")
        throw apron::Error("--compression: '" + a.compression + "' is not none, deflate, zstd or lzw");
    const std::string ext = output_extension(a.output);
    const bool tiff = ext == "tif" || ext == "tiff", jpeg = ext == "jpg" || ext == "jpeg" || ext == "jpe";
    if (!tiff && (a.compression_given || a.compression != "none"))
        throw apron::Error("--compression: " + a.output + " is not a TIFF file (--compression applies to .tif/.tiff output)");
    if (!tiff && a.tile_given)
        throw apron::Error("--tile: " + a.output + " is not a TIFF file (--tile applies to .tif/.tiff output)");
    if (!jpeg && a.quality_given)
        throw apron::Error("--quality: " + a.output + " is not a JPEG file (--quality applies to .jpg/.jpeg output)");
}

std::uint64_t image_bytes(const apron::ImageShape& s) { return std::uint64_t(s.row_bytes()) * std::uint64_t(s.rows()); }

// The reference backend sums every tap in double precision, one pixel at a time: a large mask on a large
// image takes minutes or hours. Say so before starting rather than appear to hang.
void warn_of_long_reference_run(const apron::Pipeline& pipeline, const apron::ImageShape& shape,
                                const apron::RunOptions& options) {
    if (options.backend != apron::Backend::reference) return;
    // Each step kind says its taps per sample and the reference backend's measured rate (plan/kinds/).
    double taps = 0, seconds = 0;
    std::string largest;
    int largest_area = 0;
    for (const auto& op : pipeline.operations())
        for (const auto& step : op.steps) {
            const apron::StepWork work = apron::work_of(step);  // the step kind's taps and the reference's rate
            if (work.taps == 0) continue;
            const double step_taps = work.taps * double(shape.width) * shape.height * shape.channels;
            taps += step_taps;
            seconds += step_taps / work.reference_taps_per_second;
            apron::Step copy = step;
            apron::visit_tables(copy, [&](apron::Mask& m) {
                if (m.width * m.height > largest_area) {
                    largest_area = m.width * m.height;
                    largest = std::to_string(m.width) + "x" + std::to_string(m.height);
                }
            });
        }
    if (seconds < 10) return;
    std::fprintf(stderr,
                 "apron: note: the reference backend computes %.3g taps (masks up to %s on %dx%d pixels), about %.0f "
                 "%s on one core; --backend cpu gives the same results much faster\n",
                 taps, largest.c_str(), shape.width, shape.height, seconds < 120 ? seconds : seconds / 60,
                 seconds < 120 ? "seconds" : "minutes");
}

// The stages, then their total (with `path`: which path ran, "total (PATH)").
void print_timing(const std::vector<apron::StageTiming>& stages, const std::string& path = "") {
    double total = 0;
    for (const auto& s : stages) total += s.milliseconds;
    for (const auto& s : stages) std::fprintf(stderr, "%10.3f ms  %s\n", s.milliseconds, s.stage.c_str());
    std::fprintf(stderr, "%10.3f ms  total%s\n", total, path.empty() ? "" : (" (" + path + ")").c_str());
}

// Seconds before the first progress line: APRON_PROGRESS_SECONDS, else `otherwise`.
double progress_wait(double otherwise) {
    const double set = apron::environment_settings().progress_seconds;
    return set >= 0 ? set : otherwise;
}

// The progress of a streamed run on stderr: on a terminal a line redrawn at most ten times a second; in a
// log, after 30 s, a line every 30 s (APRON_PROGRESS_SECONDS sets both).
std::function<void(std::uint64_t, std::uint64_t)> stream_progress() {
    const bool tty = isatty(2) != 0;
    const double wait = tty ? 0.0 : progress_wait(30);
    const auto start = Clock::now();
    auto last = std::make_shared<Clock::time_point>();
    return [=](std::uint64_t done, std::uint64_t rows) {
        const auto now = Clock::now();
        if (tty) {
            if (done < rows && now - *last < std::chrono::milliseconds(100)) return;
        } else if (now - start < std::chrono::duration<double>(wait) ||
                   (*last != Clock::time_point{} && now - *last < std::chrono::duration<double>(std::max(wait, 1.0)))) {
            return;
        }
        *last = now;
        std::fprintf(stderr, "%sapron: %llu of %llu rows (%.0f %%)%s", tty ? "\r" : "", (unsigned long long)done,
                     (unsigned long long)rows, rows ? 100.0 * double(done) / double(rows) : 100.0,
                     !tty || done == rows ? "\n" : "");
    };
}

// Progress of a whole-image run's steps on stderr, once it has run a while: on a terminal after 5 s, a line
// redrawn at most ten times a second; elsewhere (a log) after 30 s, a line every 30 s. APRON_PROGRESS_SECONDS
// sets the wait before the first line (the tests set 0).
class StepProgress {
public:
    StepProgress() : start_(Clock::now()), tty_(isatty(2) != 0), wait_(progress_wait(tty_ ? 5 : 30)) {}
    void operator()(std::size_t done, std::size_t steps) {
        const auto now = Clock::now();
        const double since_start = std::chrono::duration<double>(now - start_).count();
        const double since_last = std::chrono::duration<double>(now - last_).count();
        if (since_start < wait_ || (drawn_ && since_last < (tty_ ? 0.1 : std::max(wait_, 1.0)))) return;
        last_ = now;
        drawn_ = true;
        std::fprintf(stderr, "%sapron: step %zu of %zu (%.0f %%), %.0f s%s", tty_ ? "\r" : "", done + 1, steps,
                     100.0 * double(done) / double(std::max<std::size_t>(steps, 1)), since_start, tty_ ? "" : "\n");
    }
    // Ends the redrawn line (a terminal) once the run is over, or failed (before its error line).
    ~StepProgress() {
        if (drawn_ && tty_) std::fprintf(stderr, "\n");
    }
    StepProgress(const StepProgress&) = delete;
    StepProgress& operator=(const StepProgress&) = delete;

private:
    Clock::time_point start_, last_{};
    bool tty_ = false, drawn_ = false;
    double wait_ = 5;  // seconds before the first line (and between lines in a log)
};

// Prints fit_metadata's line, if any, once.
void say_not_carried(const std::string& note) {
    if (!note.empty()) std::fprintf(stderr, "apron: %s\n", note.c_str());
}

// The StreamOptions of `apron filter`'s arguments, less the team and the metadata.
apron::StreamOptions stream_options(const FilterArgs& a, const apron::RunOptions& options) {
    apron::StreamOptions so;
    so.run = options;
    so.band_rows = a.band_rows;
    so.io_threads = a.io_threads;
    so.tile_side = a.tile;
    so.compression = a.compression;
    so.resume = a.resume;
    so.raw = a.raw;
    so.pnm_byte_order = byte_order_option(a.byte_order);
    return so;
}

// The streaming path: the image in bands with halos, within the memory budget (apron/stream.hpp).
// `for_speed`: apron chose it for an image that fits (stream/faster_streamed.hpp), in bands of `band_rows`;
// the run is then not resumable, and leaves nothing behind when it fails or is interrupted.
int run_filter_streamed(const FilterArgs& a, const apron::Pipeline& pipeline, const apron::RunOptions& options,
                        const char* why, const apron::dist::World* world, bool for_speed = false, int band_rows = 0) {
    apron::StreamOptions so = stream_options(a, options);
    const bool root = !world || world->rank == 0;
    if (world && world->size > 1) {
        so.team = apron::dist::stream_team(*world, int(apron::cuda_devices().size()));
        // Open MPI binds each rank to one core when there are two ranks or fewer: the I/O threads and the CPU
        // backend would share it.
        const int machine = int(std::thread::hardware_concurrency());
        if (root && !a.plan_only && apron::usable_cores() < machine / std::max(1, world->local_size) / 2)
            std::fprintf(stderr, "apron: note: rank 0 may use %d of this node's %d cores (the MPI launcher bound it); "
                                 "run mpirun with --bind-to none to read, filter and write on every core\n",
                         apron::usable_cores(), machine);
    }
    // The default budget is the node's: ranks sharing a node share it.
    if (!so.run.memory_budget && world && world->active && world->local_size > 1)
        so.run.memory_budget = apron::default_memory_budget() / std::uint64_t(world->local_size);
    if (for_speed) so.band_rows = band_rows;
    if (a.plan_only) {
        if (root) std::cout << why << "\n" << apron::describe_stream(a.input, a.output, pipeline, so);
        return 0;
    }
    // The input's metadata goes into a TIFF or PNG output (every rank writes the same header); what an
    // output cannot hold is said once (the pixels are not turned: only another type makes an OME-XML
    // description wrong).
    if (keep_metadata_option(a.metadata) && a.raw.empty()) {
        so.metadata = apron::read_metadata(a.input);
        apron::ImageFormat format = apron::ImageFormat::pnm;  // .raw holds nothing either
        try {
            format = apron::format_for_path(a.output);
        } catch (const apron::Error&) {
        }
        apron::ReadOptions header;
        header.max_pixels = std::uint64_t(1) << 62;  // the stream's own limits apply when it opens the file
        header.pnm_byte_order = so.pnm_byte_order;
        const apron::ImageShape in = apron::probe_image(a.input, header);
        apron::ImageShape out = in;
        out.type = options.out_type.value_or(in.type);
        const std::string note = apron::fit_metadata(so.metadata, format, a.output, in, out, true);
        if (root) say_not_carried(note);
    }
    if (!so.team) so.progress = stream_progress();  // a rank's own rows are not the image's progress
    const apron::StreamReport r = apron::stream::stream_filter(a.input, a.output, pipeline, so, !for_speed);
    // Which path ran, and why: the reason --plan gives ("streamed: ...").
    const std::string reason = std::string(why).starts_with("streamed: ") ? std::string(why).substr(10) : std::string(why);
    if (root && a.timing)
        std::fprintf(stderr, "%10.3f ms  streamed in %d bands of %d rows (halo %d rows, %d resumed), %s of host memory; %s\n",
                     r.seconds * 1e3, r.bands, r.band_rows, r.halo_rows, r.bands_resumed,
                     apron::format_bytes(r.peak_buffer_bytes).c_str(), reason.c_str());
    if (root && a.timing)
        std::fprintf(stderr, "%10.3f ms  busy reading, %.3f ms filtering, %.3f ms writing (summed over threads%s)\n",
                     r.read_seconds * 1e3, r.filter_seconds * 1e3, r.write_seconds * 1e3,
                     so.team ? ("; rank 0's bands of " + std::to_string(world->size) + " ranks'").c_str() : "");
    return 0;
}

// What a whole-image output is written with: --quality, and --compression and --tile where given (a
// whole-image TIFF is deflate strips unless asked otherwise; asked, it is what a streamed one would be).
apron::WriteOptions write_options(const FilterArgs& a) {
    apron::WriteOptions wo;
    wo.jpeg_quality = a.quality;
    if (a.compression_given) wo.tiff_compression = a.compression;
    if (a.tile_given) wo.tiff_tile = a.tile;
    return wo;
}

// A multi-page TIFF or a FITS cube filtered whole, page by page, every page written to the output (a TIFF,
// each page with its own metadata; a FITS cube, whose pages must share one shape and type). The budget holds
// every page read, every result, and the largest page's filtering.
int run_filter_pages(const FilterArgs& a, const apron::Pipeline& pipeline, apron::RunOptions options,
                     const apron::ReadOptions& read, int pages, bool keep_metadata, apron::ImageFormat out_format) {
    std::vector<apron::ImageMetadata> metadata;
    if (keep_metadata || a.auto_orient) metadata = apron::read_pages_metadata(a.input, read);
    metadata.resize(std::size_t(pages));
    std::uint64_t held = 0, work = 0;
    const std::vector<apron::ImageShape> stored = apron::probe_pages(a.input, read);
    apron::ImageShape largest{};
    if (int(stored.size()) != pages) throw apron::Error(a.input + ": the file changed while it was read");
    std::optional<apron::ImageShape> first_out;
    for (int p = 0; p < pages; ++p) {
        apron::ImageShape in = stored[std::size_t(p)];
        const int turn = a.auto_orient ? metadata[std::size_t(p)].orientation : 0;
        if (turn >= 5) std::swap(in.width, in.height);
        apron::ImageShape out = in;
        out.type = options.out_type.value_or(in.type);
        // The output's refusals before any page is filtered: what the format cannot store, and a FITS cube's
        // pages of different shapes.
        std::string why;
        if (!apron::can_store(out_format, out, &why)) throw apron::Error(a.output + " (page " + std::to_string(p) + "): " + why);
        if (out_format == apron::ImageFormat::fits && first_out && !(out == *first_out))
            throw apron::Error(a.output + ": a FITS cube holds planes of one size and type, and page " + std::to_string(p) + " of " +
                               a.input + " gives " + std::to_string(out.width) + "x" + std::to_string(out.height) + " " +
                               apron::to_string(out.type) + " where page 0 gives " + std::to_string(first_out->width) + "x" +
                               std::to_string(first_out->height) + " " + apron::to_string(first_out->type) +
                               " (write .tif to keep pages of different shapes)");
        if (!first_out) first_out = out;
        held += image_bytes(in) + image_bytes(out);
        if (image_bytes(in) > image_bytes(largest)) largest = in;
        work = std::max(work, pipeline.memory_needed(in, options) + (turn >= 2 ? image_bytes(in) : 0));
        if (a.plan_only) std::cout << "page " << p << " of " << pages << ":\n" << pipeline.describe(in, options);
    }
    if (a.plan_only) return 0;
    apron::require_memory(held + work, options.memory_budget, a.input,
                          std::to_string(pages) + " pages and their results " + apron::format_bytes(held) +
                              ", filtering " + apron::format_bytes(work));
    std::vector<apron::StageTiming> stages;
    auto t = Clock::now();
    std::vector<apron::Image> inputs = apron::read_pages(a.input, read);
    stages.push_back({"read " + a.input + " (" + std::to_string(pages) + " pages)", ms_since(t)});
    if (int(inputs.size()) != pages) throw apron::Error(a.input + ": the file changed while it was read");
    std::vector<apron::Image> results;
    std::vector<std::string> notes;
    warn_of_long_reference_run(pipeline, largest, options);  // once, for the largest page
    // A FITS cube has one header for all its planes: what an output cannot keep of it is said once.
    const bool one_header = !metadata.empty() && !metadata[0].fits_cards.empty();
    for (int p = 0; p < pages; ++p) {
        apron::ImageMetadata& m = metadata[std::size_t(p)];
        if (a.auto_orient) apron::turn_upright(inputs[std::size_t(p)], m);
        options.timings = &stages;
        results.push_back(pipeline.run(inputs[std::size_t(p)], options));
        inputs[std::size_t(p)] = apron::Image();  // the page's memory goes back before the next
        if (!keep_metadata) m = {};
        std::string note = apron::fit_metadata(m, out_format, one_header ? a.output : a.output + " (page " + std::to_string(p) + ")",
                                               stored[std::size_t(p)], results.back().shape());
        if (!note.empty() && !(one_header && p > 0)) notes.push_back(std::move(note));
    }
    for (const std::string& note : notes) say_not_carried(note);
    t = Clock::now();
    std::vector<apron::ConstImageView> views;
    for (const apron::Image& r : results) views.push_back(r.view());
    const apron::WriteOptions wo = write_options(a);
    apron::write_pages(a.output, views, wo, metadata);
    stages.push_back({"write " + a.output, ms_since(t)});
    if (a.timing) print_timing(stages);
    return 0;
}

// A band stack's bands are not a z axis: a step along z (sigma_z, depth, dz, a 3-D element) would mix them.
// Only --volume asks for that.
void refuse_steps_along_z(const apron::Pipeline& pipeline, const std::string& input, int bands) {
    for (const auto& op : pipeline.operations())
        for (const auto& step : op.steps)
            if (step.axes != apron::Axes::plane)
                throw apron::Error("--op " + op.spec + ": steps along z, and the " + std::to_string(bands) + " bands of " + input +
                                   " are not a z axis (each band is filtered alone; --volume filters across them as planes)");
}

// --volume: every page of a multi-page TIFF or plane of a FITS cube as the planes of one volume
// (docs/volumes.md), filtered whole in 3-D, written as the pages of a TIFF or a FITS cube, each page with its
// metadata. A band stack (`bands`: a TIFF page of more than 4 samples) is the volume of its bands, each
// filtered alone unless --volume, written back as the bands of one TIFF page laid out as the input's (or the
// planes of a FITS cube). The budget holds the volume, its result and the run.
int run_filter_volume(const FilterArgs& a, const apron::Pipeline& pipeline, apron::RunOptions options,
                      const apron::ReadOptions& read, bool keep_metadata, apron::ImageFormat out_format,
                      const apron::TiffBands& bands = {}) {
    const bool stack = bands.bands > 0;
    if (out_format != apron::ImageFormat::tiff && out_format != apron::ImageFormat::fits)
        throw apron::Error(a.output + (stack ? ": " + a.input + " is a TIFF of " + std::to_string(bands.bands) +
                                                   " bands, written as the bands of a .tif or the planes of a FITS cube (.fits)"
                                             : ": --volume writes the volume's planes as the pages of a .tif or a FITS cube (.fits)"));
    apron::ImageShape in = bands.shape;
    if (!stack) {
        const std::vector<apron::ImageShape> stored = apron::probe_pages(a.input, read);
        if (stored.empty()) throw apron::Error(a.input + ": holds no image");
        in = stored[0];
        in.depth = int(stored.size());
        for (std::size_t z = 1; z < stored.size(); ++z)
            if (!(stored[z] == stored[0]))
                throw apron::Error(a.input + ": --volume: page " + std::to_string(z) + " differs from page 0 in size or type (a volume's "
                                   "planes share both; without --volume each page is filtered alone)");
    }
    apron::ImageShape out = in;
    out.type = options.out_type.value_or(in.type);
    std::string why;
    if (!apron::can_store(out_format, out.plane(), &why)) throw apron::Error(a.output + ": " + why);
    if (a.plan_only) {
        if (stack)
            std::cout << "band stack: the " << bands.bands << " bands of " << a.input << " as planes, "
                      << (a.volume ? "filtered across them (--volume)" : "each filtered alone") << "\n";
        return std::cout << pipeline.describe(in, options), 0;
    }
    apron::require_memory(image_bytes(in) + pipeline.memory_needed(in, options), options.memory_budget, a.input,
                          (stack ? "the band stack " : "the volume ") + apron::format_bytes(image_bytes(in)) + " and its filtering");
    std::vector<apron::StageTiming> stages;
    auto t = Clock::now();
    apron::ReadOptions whole = read;
    whole.memory_budget = 0;  // checked above with the run
    const apron::Image volume = stack ? apron::read_bands(a.input, whole) : apron::read_volume(a.input, whole);
    stages.push_back({"read " + a.input + " (" + std::to_string(in.depth) + (stack ? " bands)" : " planes)"), ms_since(t)});
    warn_of_long_reference_run(pipeline, in, options);
    options.timings = &stages;
    const apron::Image result = pipeline.run(volume, options);
    std::vector<apron::ImageMetadata> metadata;
    if (keep_metadata) metadata = stack ? std::vector{apron::read_metadata(a.input, read)} : apron::read_pages_metadata(a.input, read);
    metadata.resize(stack ? 1 : std::size_t(in.depth));
    // A FITS cube has one header for its planes, a TIFF one set of tags a page (a band stack's one page): what
    // the output cannot keep is said once.
    std::string note;
    for (std::size_t z = 0; z < metadata.size(); ++z) {
        std::string n = apron::fit_metadata(metadata[z], out_format, a.output, in.plane(), out.plane());
        if (note.empty()) note = std::move(n);
    }
    if (!note.empty()) say_not_carried(note);
    t = Clock::now();
    apron::WriteOptions wo = write_options(a);
    if (stack && out_format == apron::ImageFormat::tiff) {
        wo.metadata = std::move(metadata[0]);
        apron::write_bands(a.output, result, bands, wo);
    } else {
        apron::write_volume(a.output, result, wo, metadata);
    }
    stages.push_back({"write " + a.output, ms_since(t)});
    if (a.timing) print_timing(stages);
    return 0;
}

int run_filter_in(const FilterArgs& a, const apron::dist::World* world) {
    apron::RunOptions options;
    options.threads = a.threads;
    options.out_type = type_option(a.out_type, "--out-type");
    options.backend = backend_option(a.backend);
    options.algorithm = algo_option(a.algo);
    if (a.threads < 0 || a.threads > apron::max_threads)
        throw apron::Error("--threads: " + std::to_string(a.threads) + " is out of range (0 = all cores, at most " +
                           std::to_string(apron::max_threads) + ")");
    if (a.quality < 1 || a.quality > 100) throw apron::Error("--quality: must be 1..100");
    const bool keep_metadata = keep_metadata_option(a.metadata);
    if (a.max_pixels < 1) throw apron::Error("--max-pixels: must be positive");
    options.memory_budget = memory_option(a.memory);
    apron::ReadOptions read;
    read.max_pixels = std::uint64_t(a.max_pixels);
    read.memory_budget = options.memory_budget;
    read.pnm_byte_order = byte_order_option(a.byte_order);

    const apron::Pipeline pipeline(a.ops);  // parses and validates every --op before any file is touched
    if (a.stream != "auto" && a.stream != "on" && a.stream != "off")
        throw apron::Error("--stream: '" + a.stream + "' is not auto, on or off");
    if (a.band_rows < 0) throw apron::Error("--band-rows: must be 0 (the budget's largest) or positive");
    if (a.tile < 16 || a.tile > 8192 || a.tile % 16) throw apron::Error("--tile: must be a multiple of 16 from 16 to 8192");
    check_output_options(a);
    if (a.stream == "off" && (a.resume || !a.raw.empty()))
        throw apron::Error(std::string(a.resume ? "--resume" : "--raw") + ": needs the streaming path (not --stream off)");
    // Turning the pixels needs the whole image; a streamed run filters them as stored.
    const auto refuse_auto_orient = [&](const std::string& why) {
        if (a.auto_orient) throw apron::Error("--auto-orient: needs a whole-image run, and this one is " + why);
    };
    // --page: one page of a multi-page file, filtered as a one-image input, whole.
    if (a.page < -1) throw apron::Error("--page: must be 0 or more (pages count from 0)");
    if (a.page >= 0) {
        if (!a.raw.empty()) throw apron::Error("--page: --raw samples hold one image");
        if ((world && world->size > 1) || a.stream == "on" || a.resume)
            throw apron::Error("--page: picks a page of a whole-image run, not of a streamed one (--stream on, --resume or MPI ranks)");
        read.page = a.page;
    }
    // A TIFF page of more than 4 samples (multispectral: Sentinel-2's 13 bands) is a band stack: its bands the
    // planes of a volume of one channel, each filtered alone (--volume: across them too), whole.
    if (const apron::TiffBands bands = a.raw.empty() ? apron::probe_bands(a.input, read) : apron::TiffBands{}; bands.bands > 0) {
        if ((world && world->size > 1) || a.stream == "on" || a.resume)
            throw apron::Error(a.input + ": a TIFF of " + std::to_string(bands.bands) +
                               " bands is filtered whole, band by band (not --stream on, --resume or MPI ranks)");
        refuse_auto_orient("a band stack's");
        if (a.volume && a.page >= 0) throw apron::Error("--volume: reads every page (not --page)");
        if (!a.volume) refuse_steps_along_z(pipeline, a.input, bands.bands);
        return run_filter_volume(a, pipeline, options, read, keep_metadata, apron::format_for_path(a.output), bands);
    }
    if (a.volume) {
        if (!a.raw.empty()) throw apron::Error("--volume: raw samples give their depth in --raw WxHxDxC:TYPE (and stream)");
        if (a.page >= 0) throw apron::Error("--volume: reads every page (not --page)");
        if ((world && world->size > 1) || a.stream == "on" || a.resume)
            throw apron::Error("--volume: filters the volume whole (not --stream on, --resume or MPI ranks; raw volumes stream)");
        refuse_auto_orient("a volume's");
        return run_filter_volume(a, pipeline, options, read, keep_metadata, apron::format_for_path(a.output));
    }
    // A multi-page TIFF or a FITS cube is filtered whole, every page, into a TIFF or FITS: never its first page
    // alone.
    if (const int pages = a.raw.empty() && a.page < 0 ? apron::count_pages(a.input, read) : 1; pages > 1) {
        const bool fits = apron::format_of_file(a.input) == apron::ImageFormat::fits;
        const std::string what = a.input + (fits ? ": a FITS cube of " + std::to_string(pages) + " planes"
                                                 : ": a TIFF file of " + std::to_string(pages) + " pages");
        if ((world && world->size > 1) || a.stream == "on" || a.resume)
            throw apron::Error(what + "; a streamed run filters one image (filter it whole, without --stream on, --resume or MPI ranks, "
                                      "to keep every page, or pick one with --page)");
        const apron::ImageFormat format = apron::format_for_path(a.output);
        if (format != apron::ImageFormat::tiff && format != apron::ImageFormat::fits)
            throw apron::Error(a.output + ": " + what + ", and " + apron::to_string(format) +
                               " holds one image; a .tif or .fits output keeps every page (or pick one with --page)");
        return run_filter_pages(a, pipeline, options, read, pages, keep_metadata, format);
    }
    if (world && world->size > 1) {
        if (a.stream == "off") throw apron::Error("--stream off: several MPI ranks filter one image only by streaming it");
        refuse_auto_orient("streamed (several MPI ranks)");
        return run_filter_streamed(a, pipeline, options, "streamed: several MPI ranks on one image", world);
    }
    if (a.stream == "on" || a.resume || !a.raw.empty()) {
        refuse_auto_orient("streamed (--stream on, --raw or --resume)");
        return run_filter_streamed(a, pipeline, options, "streamed: asked for (--stream on, --raw or --resume)", world);
    }
    if (a.stream == "auto") {
        // Larger than the budget, or than --max-pixels' default for whole images: stream it.
        apron::ReadOptions header = read;
        header.memory_budget = 0;
        header.max_pixels = a.max_pixels_given ? std::uint64_t(a.max_pixels) : std::uint64_t(1) << 40;
        const apron::ImageShape shape = apron::probe_image(a.input, header);
        const bool too_many = !a.max_pixels_given && shape.pixels() > read.max_pixels;
        if (too_many || apron::needs_streaming(shape, pipeline, options)) {
            refuse_auto_orient("streamed (the image is larger than --max-pixels or --memory allows whole)");
            if (a.page >= 0)
                throw apron::Error("--page: picks a page of a whole-image run, and this image is larger than --max-pixels or "
                                   "--memory allows whole (raise them, or extract the page first)");
            return run_filter_streamed(a, pipeline, options,
                                       too_many ? "streamed: the image has more pixels than a whole-image run takes (--max-pixels)"
                                                : "streamed: the whole-image run would not fit in the memory budget (--memory)",
                                       world);
        }
        // It fits, but bands may still be faster: a large PNM or PFM in and out (stream/faster_streamed.hpp).
        // Turning the pixels upright needs the whole image.
        if (!a.auto_orient && a.page < 0 && std::uint64_t(shape.row_bytes()) * std::uint64_t(shape.height) >= apron::stream::stream_above_bytes) {
            apron::io::refuse_directory(a.output);  // what the whole-image run would say first
            const apron::stream::FasterStreamed fast =
                apron::stream::faster_streamed(a.input, a.output, pipeline, stream_options(a, options));
            if (fast.band_rows > 0) return run_filter_streamed(a, pipeline, options, fast.why.c_str(), world, true, fast.band_rows);
        }
    }
    apron::io::refuse_directory(a.output);  // a directory, rather than a name without an extension
    const apron::ImageFormat out_format = apron::format_for_path(a.output);

    // Everything that can be refused from the input's header is refused before its pixels are decoded:
    // an output format that cannot hold the result, and a run that does not fit the memory budget (the
    // input, the pipeline's intermediates and tables, and the encoded output).
    apron::ImageShape in_shape = apron::probe_image(a.input, read);
    apron::ImageMetadata metadata = keep_metadata || a.auto_orient ? apron::read_metadata(a.input, read) : apron::ImageMetadata{};
    const apron::ImageShape stored_shape = in_shape;
    const int turn = a.auto_orient ? metadata.orientation : 0;  // 2-8: the pixels are turned upright first
    const std::uint64_t turned_bytes = turn >= 2 ? image_bytes(in_shape) : 0;  // the turned copy
    if (turn >= 5) std::swap(in_shape.width, in_shape.height);
    apron::ImageShape out_shape = in_shape;
    out_shape.type = options.out_type.value_or(in_shape.type);
    std::string why;
    if (!apron::can_store(out_format, out_shape, &why)) throw apron::Error(a.output + ": " + why);
    if (a.plan_only) {
        std::cout << pipeline.describe(in_shape, options);
        return 0;
    }
    const std::uint64_t input_bytes = image_bytes(in_shape), output_bytes = image_bytes(out_shape);
    const std::uint64_t need = input_bytes + turned_bytes + pipeline.memory_needed(in_shape, options) + output_bytes;
    apron::require_memory(need, options.memory_budget, a.input,
                          "image " + apron::format_bytes(input_bytes) + ", filtering and writing " +
                              apron::format_bytes(need - input_bytes));
    warn_of_long_reference_run(pipeline, in_shape, options);
    // The lock a streamed run takes too (apron::stream_filter): one run at a time on this output. An output
    // path the writer will refuse gets no lock; write_image names the problem.
    std::optional<apron::io::FileLock> lock;
    std::string partial;
    try {
        partial = apron::io::partial_path_for(a.output);
    } catch (const apron::Error&) {
    }
    if (!partial.empty())
        lock.emplace(apron::stream::lock_path(partial), "another apron filter is writing " + a.output,
                     "; wait for it to end or choose another output", true);

    std::vector<apron::StageTiming> stages;
    auto t = Clock::now();
    apron::Image input = apron::read_image(a.input, read);
    if (a.auto_orient) apron::turn_upright(input, metadata);
    stages.push_back({"read " + a.input, ms_since(t)});

    options.timings = &stages;
    auto progress = std::make_shared<StepProgress>();
    options.between_steps = [progress](std::size_t done, std::size_t steps) { (*progress)(done, steps); };
    const apron::Image result = pipeline.run(input, options);
    options.between_steps = nullptr;
    progress.reset();  // the line ends before the write

    t = Clock::now();
    apron::WriteOptions wo = write_options(a);
    if (keep_metadata) {
        wo.metadata = std::move(metadata);
        say_not_carried(apron::fit_metadata(wo.metadata, out_format, a.output, stored_shape, result.shape()));
    }
    apron::write_image(a.output, result, wo);
    stages.push_back({"write " + a.output, ms_since(t)});
    // Which path ran, and why, on the total's line.
    if (a.timing)
        print_timing(stages, a.stream == "off" ? "whole image: asked for (--stream off)"
                                               : "whole image: it fits in --memory, and bands are chosen for speed only for "
                                                 "PNM or PFM of 32 MiB or more in and out (--stream on streams it)");
    return 0;
}

std::string param_line(const apron::ParamSpec& p) {
    std::string s = "    " + p.name;
    if (!p.default_value.empty()) s += "=" + p.default_value;
    else if (!p.optional) s += " (required)";
    s += "  " + p.help;
    const bool has_min = p.min > -1e299, has_max = p.max < 1e299;
    if ((p.kind == apron::ParamKind::number || p.kind == apron::ParamKind::integer) && (has_min || has_max)) {
        auto fmt = [](double v) {
            char b[32];
            std::snprintf(b, sizeof b, "%g", v);
            return std::string(b);
        };
        s += "  [";
        s += has_min ? fmt(p.min) + (p.min_exclusive ? " < " : " <= ") : "";
        s += "value";
        s += has_max ? " <= " + fmt(p.max) : "";
        s += "]";
    }
    return s;
}

// docs/operations.md is this output: one section per operation, from the registry.
void print_ops_markdown() {
    std::cout << "# apron operations\n\nGenerated by `apron ops --markdown` from the operation registry.\n"
                 "Spec syntax: `NAME[:key=value,...]`; parameters without a default are required.\n";
    std::string category;
    for (const auto& op : apron::operations()) {
        if (op.category != category) std::cout << "\n## " << (category = op.category) << "\n";
        std::cout << "\n### `" << op.name << "`\n\n" << op.summary << ".\n\n" << op.details << "\n\n";
        std::cout << "| parameter | default | meaning |\n|---|---|---|\n";
        auto cell = [](std::string t) {  // a '|' inside a table cell must be escaped
            for (std::size_t k = 0; (k = t.find('|', k)) != std::string::npos; k += 2) t.insert(k, "\\");
            return t;
        };
        for (const auto& p : op.params) {
            std::string line = param_line(p);
            const auto range = line.find("  [");
            std::cout << "| `" << p.name << "` | " << (p.default_value.empty() ? (p.optional ? "-" : "required") : "`" + p.default_value + "`")
                      << " | " << cell(p.help) << (range != std::string::npos ? " " + line.substr(range + 2) : "") << " |\n";
        }
        std::cout << "\nExamples: ";
        for (std::size_t k = 0; k < op.examples.size(); ++k) std::cout << (k ? ", " : "") << "`" << op.examples[k] << "`";
        std::cout << "\n";
    }
}

int run_ops(const std::string& name, bool markdown) {
    if (markdown) {
        print_ops_markdown();
        return 0;
    }
    for (const auto& op : apron::operations()) {
        if (!name.empty() && op.name != name) continue;
        std::cout << op.name << "  (" << op.category << ")  " << op.summary << '\n';
        std::cout << "    " << op.details << '\n';
        for (const auto& p : op.params) std::cout << param_line(p) << '\n';
        std::cout << '\n';
    }
    if (!name.empty() && !apron::find_operation(name)) throw apron::Error("ops: unknown operation '" + name + "'");
    return 0;
}

struct PlanArgs {
    std::vector<std::string> ops;
    std::string input, size = "8192x8192", type = "f32", out_type, backend = "auto", algo = "auto";
    int channels = 1;
};

// `apron plan`: the plan for an image file, or for an image of a given size and type (no file needed).
int run_plan(const PlanArgs& a) {
    apron::RunOptions options;
    options.backend = backend_option(a.backend);
    options.algorithm = algo_option(a.algo);
    options.out_type = type_option(a.out_type, "--out-type");
    const apron::Pipeline pipeline(a.ops);
    apron::ImageShape shape;
    if (!a.input.empty()) {
        // A multi-page TIFF: every page is planned as apron filter runs it.
        if (const int pages = apron::count_pages(a.input); pages > 1) {
            for (int p = 0; p < pages; ++p) {
                apron::ReadOptions one;
                one.page = p;
                std::cout << "page " << p << " of " << pages << ":\n"
                          << pipeline.describe(apron::probe_image(a.input, one), options, true);
            }
            return 0;
        }
        // A band stack: the volume of its bands (apron filter refuses steps along z on it without --volume).
        const apron::TiffBands bands = apron::probe_bands(a.input);
        shape = bands.bands > 0 ? bands.shape : apron::probe_image(a.input);
    } else {
        const auto [w, h] = size_option(a.size);
        shape = {w, h, a.channels, *type_option(a.type, "--type")};
        apron::validate_shape(shape, "--size/--channels");
    }
    std::cout << pipeline.describe(shape, options, true);
    return 0;
}

struct CalibrateArgs {
    std::string backend = "auto", output, size, check_output, memory;
    std::vector<int> sides;
    bool check = false;
};

int run_calibrate(const CalibrateArgs& a) {
    apron::CalibrateOptions o;
    o.backend = backend_option(a.backend);
    o.sides = a.sides;
    if (!a.size.empty()) std::tie(o.width, o.height) = size_option(a.size);
    o.memory_budget = memory_option(a.memory);
    // The output is judged before minutes of measuring: a device, a FIFO or a directory is refused now.
    if (!a.output.empty()) apron::io::resolve_output(a.output);
    o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    if (a.check) {
        const apron::PlannerCheck c = apron::check_planner(o);
        std::cout << c.report;
        return c.worst_ratio <= 1.10 ? 0 : 4;
    }
    const std::string table = apron::calibrate(o);
    if (a.output.empty()) {
        std::cout << table;
    } else {
        // Through the one atomic writer: a temporary file that no planted link can redirect, renamed into place.
        apron::write_file_atomically(a.output, std::span(reinterpret_cast<const std::uint8_t*>(table.data()), table.size()));
    }
    return 0;
}

int run_info() {
    std::cout << "apron " << APRON_VERSION << '\n';
    std::cout << "backends:";
    for (const auto& b : apron::available_backends()) std::cout << ' ' << b;
    std::cout << "\nimage formats: " << apron::supported_formats() << '\n';
    std::cout << "cpu threads: " << std::thread::hardware_concurrency() << '\n';
    const auto devices = apron::cuda_devices();
    std::cout << "cuda: " << apron::cuda_status() << '\n';
    for (const auto& d : devices) std::cout << "  " << d << '\n';
    return 0;
}

} // namespace

// `apron filter`, under mpirun too: several ranks stream one image together (apron/stream.hpp's
// StreamTeam); an error on one rank ends them all.
int run_filter(const FilterArgs& a) {
    apron::dist::World world = apron::dist::start_world(nullptr, nullptr);
    try {
        apron::dist::check_launch(world);
    } catch (const apron::Error& e) {
        std::fprintf(stderr, "apron: %s\n", e.what());
        apron::dist::finish_world(world);
        return 1;
    }
    if (!world.active) return run_filter_in(a, nullptr);
    try {
        const int status = run_filter_in(a, &world);
        apron::dist::finish_world(world);
        return status;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "apron: %s\n", dynamic_cast<const std::bad_alloc*>(&e) ? "out of host memory" : e.what());
        if (world.size > 1) apron::dist::abort_world(world, 1);
        apron::dist::finish_world(world);
        return 1;
    }
}

int main(int argc, char** argv) {
    apron::install_signal_cleanup();  // a killed run leaves no temporary file behind
    // Large blocks (image rows, tap tables, element tables) always from mmap: glibc otherwise raises its
    // mmap threshold after the first large free and serves later blocks from a heap it cannot shrink, so a
    // long pipeline's resident memory grew with its step count (600 steps with a 4097x4097 element: 660 MB
    // instead of 140 MB).
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    CLI::App app{"apron: image convolution and morphology at the hardware's limit"};
    app.require_subcommand(1);
    app.set_version_flag("--version", APRON_VERSION);

    FilterArgs fa;
    auto* filter = app.add_subcommand("filter", "run operations on an image: apron filter IN OUT --op OP [--op OP ...]");
    filter->add_option("input", fa.input, "input image (PGM/PPM, PFM, PNG, JPEG, TIFF, FITS); a TIFF of more than 4 bands is filtered band by band")->required()->type_name("FILE");
    filter->add_option("output", fa.output, "output image; the format follows the extension")->required()->type_name("FILE");
    filter->add_option("--op", fa.ops, "NAME[:key=value,...], applied in order (see `apron ops`)")->required();
    filter->add_option("--out-type", fa.out_type, "u8, u16 or f32 (default: the input's type)")->type_name(type_values);
    filter->add_option("--backend", fa.backend, "auto, cpu, reference or cuda")->capture_default_str()->type_name(backend_values);
    filter->add_option("--threads", fa.threads, "CPU threads, 0 = all cores")->capture_default_str();
    auto* max_pixels = filter->add_option("--max-pixels", fa.max_pixels,
                                          "refuse input images larger than this (unset: larger ones are streamed)")
                           ->capture_default_str();
    auto* quality = filter->add_option("--quality", fa.quality, "JPEG quality 1..100 (JPEG output only)")->capture_default_str();
    filter->add_option("--metadata", fa.metadata, std::string(metadata_help) + " (a streamed run writes it into .tif and .png, and says what it leaves out)")
        ->capture_default_str()
        ->type_name(metadata_values);
    filter->add_flag("--auto-orient", fa.auto_orient,
                     "turn the pixels upright by the input's Exif orientation before filtering (as OpenCV's imread "
                     "does); the output is then marked upright");
    filter->add_flag("--timing", fa.timing, "print the time of each stage (read, each operation, write) to stderr");
    filter->add_flag("--volume", fa.volume,
                     "read every page of a multi-page TIFF (OME-TIFF) or plane of a FITS cube as one volume: operations "
                     "along z (sigma_z, depth, dz, ball:R, rect:WxHxD) read across the planes; written as the pages of a "
                     ".tif or a FITS cube (a TIFF of more than 4 bands: its bands are the planes, written back as bands)");
    filter->add_option("--page", fa.page,
                       "filter only this page (from 0) of a multi-page TIFF or plane of a FITS cube, as a one-image input "
                       "(default: every page, into a .tif or .fits output)")
        ->type_name("N");
    filter->add_option("--algo", fa.algo, "force a path on every linear step: auto, direct, separable, low-rank, fft or tensor")
        ->capture_default_str()
        ->type_name(algo_values);
    filter->add_flag("--plan", fa.plan_only, "print the plan (algorithm and kernel of each step) and exit");
    filter->add_option("--memory", fa.memory,
                       "host memory the run may take, e.g. 8G, 512M, 75% (default: 3/4 of physical memory); a run "
                       "that cannot fit fails before reading its pixels");
    filter->add_option("--byte-order", fa.byte_order,
                       "byte order of 16-bit binary PGM/PPM/PAM input: big (Netpbm) or little (GenConv's files)")
        ->capture_default_str()
        ->type_name(byte_order_values);
    filter->add_option("--stream", fa.stream,
                       "auto: filter in bands with halos when the image does not fit in --memory, or when bands are faster (binary "
                       "PNM or PFM of 32 MiB or more in, PNM or PFM out: the same bytes); on: always; off: never")
        ->capture_default_str()
        ->type_name("auto|on|off");
    filter->add_option("--raw", fa.raw, "the input is raw samples: WIDTHxHEIGHTxCHANNELS:TYPE[:little|big], e.g. 65536x65536x1:u16");
    filter->add_flag("--resume", fa.resume, "continue an interrupted streamed run from its journal (.OUT.apron-journal)");
    filter->add_option("--band-rows", fa.band_rows, "rows per band when streaming (0: the largest --memory allows)")
        ->capture_default_str();
    filter->add_option("--io-threads", fa.io_threads, "threads reading or writing one band when streaming (0: up to 8)")
        ->capture_default_str();
    auto* tile = filter->add_option("--tile", fa.tile,
                                    "TIFF output: tile side (streamed output is always tiled; a whole image is written in "
                                    "strips unless this is given)")
                     ->capture_default_str();
    auto* compression = filter->add_option("--compression", fa.compression,
                                           "TIFF output: none, deflate, zstd or lzw (streamed: none by default, the only "
                                           "resumable one; a whole image: deflate by default)")
                            ->capture_default_str()
                            ->type_name("none|deflate|zstd|lzw");

    PlanArgs pa;
    auto* plan = app.add_subcommand("plan", "print the plan: each step's path and kernel, and every candidate's predicted time");
    plan->add_option("--op", pa.ops, "NAME[:key=value,...], applied in order (see `apron ops`)")->required();
    plan->add_option("--input", pa.input, "plan for this image file (else --size, --channels, --type)")->type_name("FILE");
    plan->add_option("--size", pa.size, "image size WIDTHxHEIGHT")->capture_default_str();
    plan->add_option("--channels", pa.channels, "channels per pixel, 1-4")->capture_default_str();
    plan->add_option("--type", pa.type, "input type: u8, u16 or f32")->capture_default_str()->type_name(type_values);
    plan->add_option("--out-type", pa.out_type, "u8, u16 or f32 (default: the input's type)")->type_name(type_values);
    plan->add_option("--backend", pa.backend, "auto, cpu, reference or cuda")->capture_default_str()->type_name(backend_values);
    plan->add_option("--algo", pa.algo, "force a path: auto, direct, separable, low-rank, fft or tensor")->capture_default_str()->type_name(algo_values);

    CalibrateArgs ca;
    auto* calibrate = app.add_subcommand("calibrate", "time every linear path and write the planner's cost table");
    calibrate->add_option("--backend", ca.backend, "auto, cpu or cuda")->capture_default_str()->type_name("auto|cpu|cuda");
    calibrate->add_option("-o,--output", ca.output, "write the table here (default: standard output)")->type_name("FILE");
    calibrate->add_option("--size", ca.size, "image size WIDTHxHEIGHT (default 8192x8192 on CUDA, 1024x1024 on the CPU)");
    calibrate->add_option("--sides", ca.sides, "mask sides to measure (default: 3 to 127)");
    calibrate->add_option("--memory", ca.memory,
                          "host memory the run may take, e.g. 2G, 75% (default: 3/4 of physical memory); a --size "
                          "that cannot fit fails before allocating");
    calibrate->add_flag("--check", ca.check,
                        "time held-out cases with every path and report the planner's choice against the fastest "
                        "(exit 4 when a choice is more than 10% slower)");

    BatchArgs ba;
    add_batch_command(app, ba);

    std::string op_name;
    auto* ops = app.add_subcommand("ops", "list operations with their parameters, defaults and limits");
    ops->add_option("name", op_name, "show only this operation");
    bool ops_markdown = false;
    ops->add_flag("--markdown", ops_markdown, "print the list as Markdown (docs/operations.md)");
    auto* info = app.add_subcommand("info", "list backends, devices and image formats");
    std::string shell;
    auto* completion = app.add_subcommand("completion", "print a shell completion script: source <(apron completion bash)");
    completion->add_option("shell", shell, "bash or zsh")->required()->type_name("bash|zsh");
    // The build writes apron.1 with it; before installing, `apron man-page | man -l -` reads the page.
    auto* man = app.add_subcommand("man-page", "print the man page (roff): apron man-page | man -l -");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // One line, like every other apron error (CLI11 would add a second "Run with --help" line).
        std::fprintf(stderr, "apron: %s (see apron --help)\n", apron::printable_line(e.what()).c_str());
        return 2;
    }
    fa.max_pixels_given = max_pixels->count() > 0;
    fa.compression_given = compression->count() > 0;
    fa.tile_given = tile->count() > 0;
    fa.quality_given = quality->count() > 0;
    try {
        if (*filter) return run_filter(fa);
        if (*plan) return run_plan(pa);
        if (*calibrate) return run_calibrate(ca);
        if (*ba.command) return run_batch_command(ba, argc, argv);
        if (*ops) return run_ops(op_name, ops_markdown);
        if (*info) return run_info();
        if (*man) return std::cout << man_page(app, APRON_VERSION), 0;
        if (*completion) {
            if (shell != "bash" && shell != "zsh") throw apron::Error("completion: unknown shell '" + shell + "' (use bash or zsh)");
            std::cout << (shell == "bash" ? bash_completion(app) : zsh_completion(app));
            return 0;
        }
    } catch (const apron::Error& e) {
        std::fprintf(stderr, "apron: %s\n", e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "apron: out of host memory\n");
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "apron: internal error: %s\n", apron::printable_line(e.what()).c_str());
        return 3;
    }
    return 0;
}
