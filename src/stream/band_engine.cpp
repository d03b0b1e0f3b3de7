// The band engine (apron/stream.hpp): a pipeline over an image larger than memory, one band of full-width
// rows at a time, bit-identical to Pipeline::run on the whole image.
//
// Exactness. The plan is made once, for the whole image's shape, and run on every band's buffer: global
// rows [y0 - top, y1 + bottom), where top and bottom add up every step's reach above and below (a mask's or
// element's anchor rows). Where the buffer ends at the image's true edge, the executor's border rule is the
// whole image's. Where it ends at an interior cut, the executor's border values are wrong, but each step
// spreads them inward by at most its reach, so after every step they stay outside [y0, y1). `wrap` reads the
// far side: the buffer then holds its rows modulo the height (rows H-top..H-1 before row 0 for the first
// band), a window of the periodic image with one seam; wrapping steps run across the seam, every other step
// on either side of it, where the seam is that step's true edge. Columns are whole, so their edges are true.
// An FFT step's float rounding depends on every sample of its tile, so it runs the whole image's tiles
// (told where its buffer lies in the image), and its reach is its tile's height.
//
// Overlap: a reader thread fills the next band's buffer while the current one is filtered, and a writer
// thread writes the previous result; one band waits in each queue, all counted in the budget.
//
// Resume: every band written and synced is recorded in a journal by its rows, with checksums of the input
// rows it read and of the bytes it was stored in (journal.hpp); a resume keeps only what they still vouch
// for (resume_checks.hpp). One run at a time holds the output's lock.
#include "apron/stream.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "apron/devices.hpp"
#include "apron/errors.hpp"
#include "apron/memory.hpp"
#include "core/bounded_queue.hpp"
#include "core/border_index.hpp"
#include "core/host_memory.hpp"
#include "core/usable_cores.hpp"
#include "io/codecs.hpp"
#include "io/file_lock.hpp"
#include "io/row_stream.hpp"
#include "io/temporary_registry.hpp"
#include "plan/memory_estimate.hpp"
#include "plan/step_kind.hpp"
#include "run/plan_runner.hpp"
#include "run/prepared_state.hpp"
#include "run/resume_fingerprint.hpp"
#include "stream/band_dealer.hpp"
#include "stream/faster_streamed.hpp"
#include "stream/journal.hpp"
#include "stream/resume_checks.hpp"

namespace apron {

namespace {

struct BandPlan {
    int rows = 0, top = 0, bottom = 0, bands = 0;
    bool wrap = false;
    std::uint64_t bytes = 0;  // host bytes at most in flight
    std::string backend;
    int workers = 1;  // bands filtered at once: two per GPU, one on the CPU
};

// Bands one GPU filters at once, each on its own executor and stream: one band's upload and download
// overlap the other's kernels (a band's copies alone take longer than its filtering).
constexpr int bands_per_gpu = 2;

// Host bytes for bands of `rows` rows with `workers` filtering at once: per worker an input buffer being
// filtered and one queued, plus the one being read; per worker the run (its intermediates and result); per
// worker a result being copied out and one queued, plus the one being written; and the reader's and
// writer's own buffers.
std::uint64_t band_bytes(const PreparedPipeline& prepared, const ImageShape& in, const ImageShape& out, int rows, int top,
                         int bottom, std::uint64_t io_buffers, int workers) {
    ImageShape buffer = in;
    buffer.height = std::min<std::int64_t>(std::int64_t(rows) + top + bottom, in.height) > 0
                        ? int(std::min<std::int64_t>(std::int64_t(rows) + top + bottom, in.height))
                        : 1;
    const std::uint64_t in_bytes = std::uint64_t(in.row_bytes()) * std::uint64_t(buffer.height);
    // Results travel to the writer whole (the band's rows and its halo), not copied out.
    const std::uint64_t out_bytes = std::uint64_t(out.row_bytes()) * std::uint64_t(buffer.height);
    const std::uint64_t run = prepared.memory(buffer.height, true);  // the one plan, on a band of these rows
    const std::uint64_t w = std::uint64_t(workers);
    return (2 * w + 1) * in_bytes + w * run + (2 * w + 1) * out_bytes + io_buffers;
}

// Bands filtered at once by this process: two per GPU it uses (every GPU of the machine, or the one its
// team gave it), one on the CPU.
int workers_for(const ExecutionPlan& plan, const StreamOptions& options) {
    if (plan.backend != Backend::cuda) return 1;
    const std::optional<StreamTeam>& team = options.team;
    const bool one_gpu = team && team->size > 1 && team->cuda_device >= 0;
    const int gpus = options.devices.empty() ? int(cuda_devices().size()) : int(options.devices.size());
    return bands_per_gpu * (one_gpu ? 1 : std::max(1, gpus));
}

// Rows per band for `units` GPUs (or processes of a team) filtering at once, from the most that fit the
// budget: as many bands as the budget needs, rounded up to a multiple of the units so that the last round
// leaves none idle (five bands on four GPUs take two rounds; eight bands, each shorter, take one), and on
// GPUs two bands per unit where the halo stays within a quarter of a band, so that each GPU overlaps one
// band's copies and launches with the other's kernels. Measured on 4 H200s (2 x 127x127 direct, f32): two
// bands at once on a GPU filtered about 40 Mpix-steps/s each, one band alone 31, so two per GPU is worth the
// rows their halos recompute.
int even_rows(int height, int fit_rows, int granularity, int units, int halo, bool two_per_unit) {
    const auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
    std::int64_t bands = ceil_div(height, fit_rows);
    bands = ceil_div(bands, units) * units;
    if (two_per_unit && bands < 2 * units && height / (2 * units) >= 4 * std::int64_t(halo)) bands = 2 * units;
    const std::int64_t rows = ceil_div(ceil_div(height, bands), granularity) * granularity;
    return int(std::clamp<std::int64_t>(rows, granularity, fit_rows));
}

BandPlan plan_bands(const PreparedPipeline& prepared, const ImageShape& in, const RunOptions& options, int granularity,
                    std::uint64_t io_buffers, int asked_rows, int workers, int processes) {
    const ExecutionPlan& plan = prepared.state().plan;
    BandPlan b;
    const RowReach r = prepared.reach();
    b.top = r.above, b.bottom = r.below;
    b.wrap = r.wraps;
    b.backend = to_string(plan.backend);
    b.workers = workers;
    const ImageShape& out = plan.output;
    // The process itself (the program, its libraries, thread stacks, the allocator's slack) takes some of
    // the budget: the bands get the rest. Measured on a 1 GiB image under 256 MiB with 2 threads: about
    // 45 MiB besides the bands; 65536^2 u8 under 1 GiB on 16 cores peaked 56 MiB over the budget with 64
    // MiB kept back (each filtering thread's stack and scratch rows), so 8 MiB more per thread. A CUDA
    // context adds about 210 MiB of host memory (the driver, the runtime, the loaded modules).
    const std::uint64_t whole = options.memory_budget ? options.memory_budget : default_memory_budget();
    const int threads = options.threads > 0 ? options.threads : usable_cores();
    const std::uint64_t process_reserve =
        (std::uint64_t(64) << 20) + (plan.backend == Backend::cuda ? std::uint64_t(256) << 20 : std::uint64_t(threads) * (std::uint64_t(8) << 20));
    const std::uint64_t budget = whole > 2 * process_reserve ? whole - process_reserve : whole / 2;
    const int H = in.height;
    granularity = std::max(1, granularity);
    auto need = [&](int rows) { return band_bytes(prepared, in, out, rows, b.top, b.bottom, io_buffers, b.workers); };
    if (asked_rows > 0) {
        b.rows = std::min(H, (asked_rows + granularity - 1) / granularity * granularity);
    } else {
        // The largest multiple of the granularity that fits (the need grows with the rows); where not even
        // one does, one band per GPU at a time instead of two (wide float images under a small budget).
        int lo = 0;
        for (;;) {
            lo = 0;
            int hi = (H + granularity - 1) / granularity;
            while (lo < hi) {
                const int mid = lo + (hi - lo + 1) / 2;
                if (need(std::min(H, mid * granularity)) <= budget) lo = mid;
                else hi = mid - 1;
            }
            if (lo > 0 || b.workers % bands_per_gpu != 0 || plan.backend != Backend::cuda) break;
            b.workers /= bands_per_gpu;
        }
        if (lo == 0)
            throw Error("--memory: a band of " + std::to_string(std::min(H, granularity)) + " rows with its halo of " +
                        std::to_string(b.top + b.bottom) + " rows needs " + format_bytes(need(std::min(H, granularity))) +
                        ", over the memory budget of " + format_bytes(budget) + " (raise --memory)");
        b.rows = std::min(H, lo * granularity);
        const bool gpu = plan.backend == Backend::cuda;
        const int units = (gpu ? std::max(1, b.workers / bands_per_gpu) : 1) * std::max(1, processes);
        b.rows = even_rows(H, b.rows, granularity, units, b.top + b.bottom, gpu);
    }
    // Wrapping bands hold their rows modulo the height: with a halo as tall as the image, one band.
    if (b.wrap && std::int64_t(b.rows) + b.top + b.bottom > H) b.rows = H;
    if (b.rows >= H) b.rows = H;
    b.bands = (H + b.rows - 1) / b.rows;
    b.bytes = need(b.rows);
    return b;
}

// A band's buffer: global rows [first, first + rows) (modulo the height when wrapping), the seam's row in
// the buffer (0: none), and where the band's own rows start in it.
struct BandBuffer {
    int index = 0, y0 = 0, y1 = 0;  // the band's rows
    int first = 0, rows = 0, seam = 0, core = 0;
    Image pixels;
    std::uint32_t in_crc = 0;  // of the input rows read (the journal's)
};

BandBuffer locate(const BandPlan& b, const ImageShape& in, int index) {
    BandBuffer buf;
    const int H = in.height;
    buf.index = index;
    buf.y0 = index * b.rows;
    buf.y1 = std::min(H, buf.y0 + b.rows);
    if (b.bands == 1) {
        buf.first = 0, buf.rows = H, buf.core = buf.y0;
        return buf;
    }
    if (b.wrap) {
        buf.first = buf.y0 - b.top;
        buf.rows = buf.y1 - buf.y0 + b.top + b.bottom;  // <= H (plan_bands)
        buf.core = b.top;
        if (buf.first < 0) buf.seam = -buf.first;
        else if (buf.first + buf.rows > H) buf.seam = H - buf.first;
        return buf;
    }
    buf.first = std::max(0, buf.y0 - b.top);
    buf.rows = std::min(H, buf.y1 + b.bottom) - buf.first;
    buf.core = buf.y0 - buf.first;
    return buf;
}

// Band-sized images handed back after use and taken again: every band would otherwise map and fault in
// fresh pages for its input and result (measured on 4 GiB: the page faults cost more than the filtering).
// Pinned for the CUDA backend, whose copies then run at the PCIe rate.
class ImagePool {
public:
    // At most `keep` images wait here: the budget counts the images in flight, and one waiting for the next
    // band is all that saves its page faults.
    ImagePool(HostMemory memory, std::size_t keep) : memory_(memory), keep_(keep) {}
    // Images of another shape (the first and last bands' are shorter) are released first: kept, they would
    // wait for a band that never comes, outside the budget's count.
    Image take(const ImageShape& shape) {
        std::vector<Image> dropped;
        {
            std::lock_guard lock(m_);
            for (auto it = free_.begin(); it != free_.end();)
                if (it->shape() != shape) dropped.push_back(std::move(*it)), it = free_.erase(it);
                else ++it;
            if (!free_.empty()) {
                Image img = std::move(free_.back());
                free_.pop_back();
                return img;
            }
        }
        if (!dropped.empty()) {
            dropped.clear();
            release_freed();
        }
        return Image(shape, memory_);
    }
    void give(Image img) {
        if (img.empty()) return;
        {
            std::lock_guard lock(m_);
            if (free_.size() < keep_) {
                free_.push_back(std::move(img));
                return;
            }
        }
        img = Image();
        release_freed();
    }

private:
    // Freed pinned blocks go to the process's cache of them (kept for a batch's next image of the same
    // size), outside the budget: measured on the H100, one input and one result band over it for the whole
    // run. They are given back to the system instead.
    void release_freed() const {
        if (memory_ == HostMemory::pinned) release_kept_pinned();
    }

    HostMemory memory_;
    std::size_t keep_;
    std::mutex m_;
    std::vector<Image> free_;
};

void fill(io::RowSource& source, BandBuffer& buf, ImagePool& pool) {
    const int H = source.shape().height;
    ImageShape s = source.shape();
    s.height = buf.rows;
    buf.pixels = pool.take(s);
    const ImageView v = buf.pixels.view();
    // One or two runs of consecutive rows (two when the buffer wraps around the image's end).
    for (int r = 0; r < buf.rows;) {
        const int g = ((buf.first + r) % H + H) % H;
        const int n = std::min(buf.rows - r, H - g);
        source.read_rows(g, v.roi(0, r, v.width(), n));
        r += n;
    }
}

// Runs each step as run_step does, except that a step that reads other rows and does not wrap runs on either
// side of the seam, and a step whose plan says where the image lies (an FFT step's grid is the whole image's)
// learns where its input lies in it.
StepRunner band_runner(const BandBuffer& buf, int image_height) {
    const int first = buf.first, seam = buf.seam;
    auto run = [first, image_height](Executor& ex, const StepPlan& step, int y, ConstImageView in, ConstImageView second,
                                     ImageView out) {
        if (const std::optional<StepPlan> placed = in_band(step, first + y, image_height))
            return run_step(ex, *placed, in, second, out);
        run_step(ex, step, in, second, out);
    };
    return [seam, run](Executor& ex, const StepPlan& step, ConstImageView in, ConstImageView second, ImageView out) {
        const Reach reach = reach_of(step);
        if (seam <= 0 || seam >= in.height() || wraps(step) || (reach.top == 0 && reach.bottom == 0))
            return run(ex, step, 0, in, second, out);
        const int w = in.width(), h = in.height();
        for (const auto& [y, n] : {std::pair{0, seam}, std::pair{seam, h - seam}})
            run(ex, step, y, in.roi(0, y, w, n), second.data ? second.roi(0, y, w, n) : second, out.roi(0, y, w, n));
    };
}

// Planes [z, z + n) of a volume's view, as a volume.
template <class View>
View planes(View v, int z, int n) {
    View p = v.plane(z);
    p.shape.depth = n;
    return p;
}

// A volume streamed in z-slabs (raw WxHxDxC): the file's rows are every plane's one after another, a band is
// whole planes, and its steps see the band as a volume of its planes (apron/image.hpp). Steps along z split
// at a wrap seam as the image's do (in planes); plane steps see whole planes, so nothing is placed in a band.
// A step spanning x, y and z sees the band's volume, and splits at a seam into the planes either side.
StepRunner volume_band_runner(const BandBuffer& buf, int plane_rows) {
    const int seam = buf.seam / plane_rows;
    return [seam](Executor& ex, const StepPlan& step, ConstImageView in, ConstImageView second, ImageView out) {
        const Reach reach = reach_of(step);
        if (step.axes == Axes::volume) {
            const int d = in.shape.depth;
            if (seam <= 0 || seam >= d || wraps(step) || (reach.planes_before == 0 && reach.planes_after == 0))
                return run_step(ex, step, in, second, out);
            for (const auto& [z, n] : {std::pair{0, seam}, std::pair{seam, d - seam}})
                run_step(ex, step, planes(in, z, n), second.data ? planes(second, z, n) : second, planes(out, z, n));
            return;
        }
        if (step.axes != Axes::depth || seam <= 0 || seam >= in.height() || wraps(step) || (reach.top == 0 && reach.bottom == 0))
            return run_step(ex, step, in, second, out);
        const int w = in.width(), h = in.height();  // the z view: a row per plane
        for (const auto& [y, n] : {std::pair{0, seam}, std::pair{seam, h - seam}})
            run_step(ex, step, in.roi(0, y, w, n), second.data ? second.roi(0, y, w, n) : second, out.roi(0, y, w, n));
    };
}

// The planes of a volume's file (raw WxHxDxC), 1 for an image.
int volume_depth(const StreamOptions& o) { return o.raw.empty() ? 1 : io::parse_raw_layout(o.raw).depth; }

// The volume a file of these rows holds (depth planes), and back.
ImageShape as_volume(ImageShape rows, int depth) {
    if (depth > 1) rows.height /= depth, rows.depth = depth;
    return rows;
}
ImageShape as_rows(ImageShape volume) {
    volume.height = int(volume.rows());
    volume.depth = 1;
    return volume;
}
template <class View>
View band_volume(View band, int plane_rows) {
    band.shape.depth = band.shape.height / plane_rows;
    band.shape.height = plane_rows;
    return band;
}

// A volume's bands hold whole planes: the sink's granularity and the plane's rows, both.
int volume_granularity(int granularity, int plane_rows) { return std::lcm(std::max(1, granularity), plane_rows); }

// Bands of plan `b` whose rows the entries cover in full.
std::set<int> covered_bands(const BandPlan& b, const ImageShape& in, const std::vector<stream::JournalEntry>& entries) {
    const std::vector<std::pair<int, int>> runs = stream::covered_rows(entries);
    std::set<int> done;
    for (int k = 0; k < b.bands; ++k) {
        const BandBuffer where = locate(b, in, k);
        for (const auto& [y0, y1] : runs)
            if (y0 <= where.y0 && where.y1 <= y1) done.insert(k);
    }
    return done;
}

// A run's identity in its journals: 16 hex digits of rank 0's random number.
std::string run_name(int id) {
    char text[17];
    std::snprintf(text, sizeof text, "%016x", unsigned(id));
    return text;
}

void say(std::vector<std::string>& notes, const std::string& output, const std::string& note) {
    std::fprintf(stderr, "apron: %s: %s\n", output.c_str(), note.c_str());
    notes.push_back(note);
}

std::string describe_bands(const BandPlan& b, const ImageShape& in, const ExecutionPlan& plan) {
    std::ostringstream s;
    const int planes = plan.input.depth, plane_rows = plan.input.height;
    if (planes > 1)  // a volume's slabs: whole planes
        s << "streamed: " << in.width << "x" << plane_rows << "x" << planes << "x" << in.channels << " " << to_string(in.type)
          << " volume in " << b.bands << " slab" << (b.bands == 1 ? "" : "s") << " of " << b.rows / plane_rows << " planes (halo "
          << b.top / plane_rows << " above, " << b.bottom / plane_rows << " below";
    else
        s << "streamed: " << in.width << "x" << in.height << "x" << in.channels << " " << to_string(in.type) << " in " << b.bands
          << " band" << (b.bands == 1 ? "" : "s") << " of " << b.rows << " rows (halo " << b.top << " above, " << b.bottom << " below";
    s << (b.wrap ? ", wrapping" : "") << "), " << format_bytes(b.bytes) << " of host memory in flight, backend "
      << b.backend << (b.workers > bands_per_gpu ? " on " + std::to_string(b.workers / bands_per_gpu) + " GPUs" : "")
      << (b.workers > 1 ? ", " + std::to_string(b.workers) + " bands at once" : "") << "\n";
    s << plan.describe(false);
    return s.str();
}

int io_threads(const StreamOptions& o) {
    if (o.io_threads < 0 || o.io_threads > 64) throw Error("--io-threads: " + std::to_string(o.io_threads) + " is not 0 (automatic) to 64");
    return o.io_threads ? o.io_threads : int(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

// Host bytes one writing thread holds: a run of tiles (about 1 MiB, at least a tile) for TIFF, a row
// otherwise (byte-swapped or flipped rows).
std::uint64_t io_thread_bytes(const ImageShape& out, int granularity) {
    if (granularity <= 1) return out.row_bytes();
    const std::uint64_t tile = std::uint64_t(granularity) * std::uint64_t(granularity) * out.channels * bytes_per_sample(out.type);
    const std::uint64_t row_of_tiles = tile * std::uint64_t((out.width + granularity - 1) / granularity);
    return std::max(tile, std::min(std::uint64_t(1) << 20, row_of_tiles));
}

// The I/O threads asked for, fewer where their buffers would take over an eighth of the budget.
int fit_io_threads(int threads, const ImageShape& out, int granularity, const RunOptions& run) {
    const std::uint64_t budget = run.memory_budget ? run.memory_budget : default_memory_budget();
    const std::uint64_t each = std::max<std::uint64_t>(1, io_thread_bytes(out, granularity));
    return int(std::clamp<std::uint64_t>(budget / 8 / each, 1, std::uint64_t(threads)));
}

// Host bytes the reader and writer hold besides the bands: the source's decoder buffers, rows of tiles a
// band cuts (one above and one below), and each I/O thread's own.
std::uint64_t io_buffer_bytes(const io::RowSource& source, const ImageShape& out, int granularity, int threads) {
    return source.buffer_bytes() + std::uint64_t(out.row_bytes()) * std::uint64_t(granularity) * 2 +
           std::uint64_t(threads) * io_thread_bytes(out, granularity);
}

io::SinkOptions sink_options_for(const StreamOptions& o) {
    io::SinkOptions so;
    so.tiff_tile_side = o.tile_side;
    so.tiff_compression = io::parse_tiff_compression(o.compression);
    so.metadata = o.metadata;
    return so;
}

io::SourceOptions source_options(const StreamOptions& o) {
    io::SourceOptions so;
    if (!o.raw.empty()) so.raw = io::parse_raw_layout(o.raw);
    so.pnm_byte_order = o.pnm_byte_order;
    so.whole_decode_budget = o.run.memory_budget ? o.run.memory_budget : default_memory_budget();
    so.threads = io_threads(o);
    return so;
}

}  // namespace

bool needs_streaming(const ImageShape& input, const Pipeline& pipeline, const RunOptions& options) {
    const std::uint64_t budget = options.memory_budget ? options.memory_budget : default_memory_budget();
    ImageShape out = pipeline.output_shape(input, options);
    const std::uint64_t bytes = std::uint64_t(input.row_bytes()) * std::uint64_t(input.height) +
                                std::uint64_t(out.row_bytes()) * std::uint64_t(out.height) +
                                pipeline.memory_needed(input, options, true);
    return bytes > budget;  // what `apron filter` checks before a whole-image run (input, run, encoded output)
}

std::string describe_stream(const std::string& input, const std::string& output, const Pipeline& pipeline,
                            const StreamOptions& options) {
    auto source = io::open_row_source(input, source_options(options));
    const ImageShape in = source->shape();
    const int depth = volume_depth(options);
    const PreparedPipeline prepared = pipeline.prepare(as_volume(in, depth), options.run);
    const ExecutionPlan& plan = prepared.state().plan;
    const RowReach reach = prepared.reach();
    source->retain_rows(reach.above + reach.below);
    const io::SinkOptions sink_options = sink_options_for(options);
    int granularity = io::sink_row_granularity(output, sink_options);
    if (depth > 1) granularity = volume_granularity(granularity, plan.input.height);
    const ImageShape out = as_rows(plan.output);
    const int threads = fit_io_threads(io_threads(options), out, granularity, options.run);
    const BandPlan b = plan_bands(prepared, in, options.run, granularity,
                                  io_buffer_bytes(*source, out, granularity, threads), options.band_rows,
                                  workers_for(plan, options), options.team ? options.team->size : 1);
    return describe_bands(b, in, plan);
}

StreamReport stream_filter(const std::string& input, const std::string& output, const Pipeline& pipeline,
                           const StreamOptions& options) {
    return stream::stream_filter(input, output, pipeline, options, true);
}

namespace stream {

namespace {

std::string extension_of(const std::string& path) {
    const std::size_t dot = path.find_last_of('.'), slash = path.find_last_of('/');
    std::string e = dot == std::string::npos || (slash != std::string::npos && dot < slash) ? "" : path.substr(dot + 1);
    for (char& c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
    return e;
}

FasterStreamed faster_streamed_or_throw(const std::string& input, const std::string& output, const Pipeline& pipeline,
                                        const StreamOptions& options);

}  // namespace

FasterStreamed faster_streamed(const std::string& input, const std::string& output, const Pipeline& pipeline,
                               const StreamOptions& options) {
    // A file or an output the whole-image run refuses is refused there, in its words (a truncated file, an
    // output format that cannot hold the result): nothing here throws.
    try {
        return faster_streamed_or_throw(input, output, pipeline, options);
    } catch (const Error&) {
        return {};
    }
}

namespace {

FasterStreamed faster_streamed_or_throw(const std::string& input, const std::string& output, const Pipeline& pipeline,
                                        const StreamOptions& options) {
    FasterStreamed f;
    if (options.team || !options.raw.empty() || options.resume) return f;
    // Outputs whose streamed bytes are write_image's: binary PNM and PFM (a streamed TIFF is tiled BigTIFF,
    // a whole one deflate strips; PNG and JPEG are written in order or whole).
    const std::string ext = extension_of(output);
    if (ext != "pgm" && ext != "ppm" && ext != "pnm" && ext != "pfm") return f;
    // Inputs read by rows at fixed offsets: binary PNM (P5, P6, P7) and PFM.
    {
        const std::unique_ptr<io::ByteSource> file = io::open_file_source(input);
        const io::Buffer magic = io::read_prefix(*file, 2);
        if (magic.size() < 2 || magic[0] != 'P' || !((magic[1] >= '5' && magic[1] <= '7') || magic[1] == 'f' || magic[1] == 'F'))
            return f;
    }
    auto source = io::open_row_source(input, source_options(options));
    const ImageShape in = source->shape();
    const std::uint64_t in_bytes = std::uint64_t(in.row_bytes()) * std::uint64_t(in.height);
    if (in_bytes < stream_above_bytes) return f;
    const PreparedPipeline prepared = pipeline.prepare(in, options.run);
    const ExecutionPlan& plan = prepared.state().plan;
    // The GPUs' whole-image path overlaps its own copies; the rule is measured on the CPU backend.
    if (plan.backend != Backend::cpu) return f;
    std::string why;
    if (!can_store(format_for_path(output), plan.output, &why)) return f;  // the whole-image run says why
    // Bands of about 8 MiB of input (their buffers are reused, never faulted in again; on 16384^2 u8, 2
    // cores: 4 MiB bands took 0.16-0.31 s, 8 MiB 0.14-0.17 s, 16 MiB 0.16-0.19 s), at least four times as
    // tall as the halo they read twice, and at least four of them (the reading of one, the filtering of the
    // next and the writing of a third overlap). No taller than an eighth of the image: about six bands are
    // in flight (read, queued, filtered; their results queued and written), which must stay well under the
    // whole run's input and output (a 32 MiB image in 8 MiB bands held 56 MiB, about what it streamed to save).
    const RowReach reach = prepared.reach();
    const int halo = reach.above + reach.below;
    const std::int64_t eighth = (std::int64_t(in.height) + 7) / 8;
    const std::int64_t rows = std::max<std::int64_t>(
        {std::min<std::int64_t>(std::int64_t((std::uint64_t(8) << 20) / std::max<std::size_t>(1, in.row_bytes())), eighth),
         4 * std::int64_t(halo), 16});
    if (rows * 4 > in.height) return f;
    f.band_rows = options.band_rows > 0 ? options.band_rows : int(rows);
    f.why = "streamed: the image is " + format_bytes(in_bytes) + " (over " + format_bytes(stream_above_bytes) +
            ") with PNM or PFM in and out, which bands read and write at their offsets: bands filter it faster, in less "
            "memory, with the same bits (--stream off runs it whole)";
    return f;
}

}  // namespace

StreamReport stream_filter(const std::string& input, const std::string& output, const Pipeline& pipeline,
                           const StreamOptions& options, bool resumable_asked) {
    const auto started = std::chrono::steady_clock::now();
    auto source = io::open_row_source(input, source_options(options));
    const ImageShape in = source->shape();
    // Planned once for the run: every band runs this plan, and the band search asks it for memory. A volume's
    // file (raw WxHxDxC) is planned as the volume, and streamed in slabs of whole planes.
    const int depth = volume_depth(options);
    const PreparedPipeline prepared = pipeline.prepare(as_volume(in, depth), options.run);
    const ExecutionPlan& plan = prepared.state().plan;
    const ImageShape out = as_rows(plan.output);  // the rows written
    const int plane_rows = plan.input.height;
    if (depth > 1 && extension_of(output) != "raw")
        throw Error(output + ": a volume (--raw WxHxDxC) streams into raw samples, a .raw output");

    const RowReach reach = prepared.reach();
    source->retain_rows(reach.above + reach.below);  // the rows consecutive bands' halos share

    io::SinkOptions sink_options = sink_options_for(options);
    // PNG and compressed TIFF are written in order (each tile's or row's place follows the bytes before it):
    // nothing of an interrupted run can be reused, and only one process can write them.
    const bool random_access = io::sink_random_access(output, sink_options);
    if (!random_access && options.resume)
        throw Error("--resume: " + output + " is written in order (PNG or compressed TIFF), so an interrupted run cannot be resumed");
    const StreamTeam* team = options.team && options.team->size > 1 ? &*options.team : nullptr;
    if (!random_access && team)
        throw Error(output + ": several processes write only outputs with fixed offsets (uncompressed TIFF, PNM, PFM, raw)");
    // A run that may be resumed keeps a journal, syncs every band before recording it, and leaves its partial
    // file when interrupted; one that apron chose to stream for speed does none of that: like the whole-image
    // writer's temporary file, its partial file goes on any failure or signal.
    const bool resumable = random_access && resumable_asked;
    if (!resumable_asked && (options.resume || team)) throw Error("internal: a run streamed for speed resumed or shared");
    sink_options.keep_partial = resumable;  // an interrupted run leaves it for --resume
    int granularity = io::sink_row_granularity(output, sink_options);
    if (depth > 1) granularity = volume_granularity(granularity, plane_rows);
    sink_options.threads = fit_io_threads(io_threads(options), out, granularity, options.run);
    const std::uint64_t io_buffers = io_buffer_bytes(*source, out, granularity, sink_options.threads);
    const int gpus = plan.backend == Backend::cuda ? workers_for(plan, options) / bands_per_gpu : 0;
    BandPlan b = plan_bands(prepared, in, options.run, granularity, io_buffers, options.band_rows,
                            workers_for(plan, options), team ? team->size : 1);

    // A team agrees on rank 0's bands (the default budget and the GPUs may differ between machines).
    const int rank = team ? team->rank : 0;
    if (team) {
        const int rows = team->broadcast(b.rows), workers = b.workers;
        b = plan_bands(prepared, in, options.run, granularity, io_buffers, rows, workers, team->size);
    }
    const int workers = b.workers;
    const std::uint64_t memory = options.run.memory_budget ? options.run.memory_budget : default_memory_budget();

    StreamReport report;
    // One run at a time on this output (a team's rank 0 holds it for the team): two would each end with the
    // other's bytes, and trust each other's journals. Taken before anything beside the output is touched.
    const std::string partial = io::partial_path_for(output);
    std::optional<io::FileLock> lock;
    if (rank == 0)
        lock.emplace(stream::lock_path(partial), "another apron filter is writing " + output,
                     "; wait for it to end or choose another output", true);

    // Resume: rank 0 reads the journals of the run it continues (journal.hpp). A fresh run, or a resume
    // that sets them aside, removes every journal beside the output, every rank's of any earlier run.
    const Fingerprint fingerprint = stream::stream_fingerprint(input, output, *source, pipeline, plan, options);
    stream::EarlierRun earlier;
    if (rank == 0) {
        if (options.resume) earlier = stream::read_earlier_run(partial, fingerprint);
        for (const std::string& note : earlier.notes) say(report.notes, output, note);
        if (!earlier.usable) stream::remove_journals(partial);
    }
    // Rank 0 creates (or reopens) the partial file at its final size; the others open it once it exists.
    std::unique_ptr<io::RowSink> sink;
    bool touched = false;  // this process created or opened the partial file (or tried to)
    std::optional<stream::JournalWriter> journal;
    std::set<int> done;
    // A failure keeps the partial file and the journals only when the run can go on with --resume (no room
    // left: io::OutOfRoomError; a signal never gets here); bad input or anything else removes them.
    auto discard_on = [&](const std::exception_ptr& e) {
        if (!random_access || !touched) return;
        try {
            std::rethrow_exception(e);
        } catch (const io::OutOfRoomError&) {
            return;
        } catch (...) {
        }
        journal.reset();
        sink.reset();
        ::unlink(partial.c_str());
        stream::remove_journals(partial);
    };
    try {
        std::string run_id;
        if (rank == 0) {
            sink_options.reopen_partial = earlier.usable;
            touched = true;
            sink = io::create_row_sink(output, out, sink_options);
            std::vector<stream::JournalEntry> kept;
            if (earlier.usable) {
                std::vector<std::string> notes;
                kept = stream::check_entries(earlier.entries, *sink, *source, notes);
                if (earlier.head.memory != memory)
                    notes.push_back("--memory differs: " + format_bytes(earlier.head.memory) + " then " + format_bytes(memory) +
                                    "; continuing from the rows already written");
                else if (earlier.head.band_rows != b.rows)
                    notes.push_back("--band-rows differs: " + std::to_string(earlier.head.band_rows) + " then " +
                                    std::to_string(b.rows) + "; continuing from the rows already written");
                for (const std::string& note : notes) say(report.notes, output, note);
            }
            done = covered_bands(b, in, kept);
            if (resumable) {
                std::random_device random;
                const int id = int(random() & 0x7fffffff);
                run_id = run_name(team ? team->broadcast(id) : id);
                const std::optional<stream::PartialIdentity> identity = stream::identify_partial(partial);
                if (!identity) throw Error(output + ": the partial file " + partial + " vanished while the run began");
                journal.emplace(stream::journal_path(partial), stream::JournalHead{run_id, *identity, memory, b.rows, fingerprint}, kept);
                stream::remove_journals(partial, true);  // the other ranks' entries are carried in rank 0's now
            }
        } else if (resumable) {
            run_id = run_name(team->broadcast(0));
        }
        // The team learns which bands are done from rank 0 (30 bands a broadcast), then opens the file.
        if (team) {
            for (int k0 = 0; k0 < b.bands; k0 += 30) {
                int bits = 0;
                for (int k = k0; k < std::min(b.bands, k0 + 30); ++k)
                    if (done.count(k)) bits |= 1 << (k - k0);
                bits = team->broadcast(bits);
                for (int k = k0; k < std::min(b.bands, k0 + 30); ++k)
                    if (bits & (1 << (k - k0))) done.insert(k);
            }
            team->barrier();
        }
        if (rank != 0) {
            sink_options.reopen_partial = true;
            touched = true;
            sink = io::create_row_sink(output, out, sink_options);
            if (resumable) {
                const std::optional<stream::PartialIdentity> identity = stream::identify_partial(partial);
                if (!identity) throw Error(output + ": the partial file " + partial + " vanished while the run began");
                journal.emplace(stream::journal_path(partial, rank),
                                stream::JournalHead{run_id, *identity, memory, b.rows, fingerprint}, std::vector<stream::JournalEntry>{});
            }
        }
    } catch (...) {
        discard_on(std::current_exception());
        throw;
    }
    // A signal ends the run with its partial file and journals kept (resumable): the handler says so.
    struct SignalNote {
        explicit SignalNote(const std::string& line) {
            if (!line.empty()) io::set_signal_note(line.c_str());
        }
        ~SignalNote() { io::set_signal_note(nullptr); }
    } signal_note(rank == 0 && resumable
                      ? "apron: " + output + ": interrupted; partial output kept for --resume (" + partial + ")\n"
                      : std::string());
    std::function<std::optional<int>()> next_band;
    if (team) next_band = team->feed(b.bands);

    report.bands = b.bands, report.band_rows = b.rows, report.halo_rows = b.top + b.bottom;
    report.bands_resumed = int(done.size());
    report.plan = describe_bands(b, in, plan);
    report.peak_buffer_bytes = b.bytes + sink->buffer_bytes();

    // Workers (two per GPU, one on the CPU) finish bands in any order. A random-access sink takes them so;
    // any other is written in order, and the reader keeps at most 2 x workers bands ahead of the writer so
    // those waiting for an earlier one stay within the budget's count of results in flight.
    const bool in_order = !sink->random_access();
    const HostMemory host = plan.backend == Backend::cuda ? HostMemory::pinned : HostMemory::pageable;
    // The process's cache of freed pinned blocks is empty while the run lasts (blocks an earlier batch left
    // there lie outside this budget) and when it ends, error or not: destroyed last, after every band's
    // image, this gives back the blocks they went to.
    struct PinnedCacheEmptied {
        bool pinned;
        explicit PinnedCacheEmptied(bool p) : pinned(p) { if (pinned) release_kept_pinned(); }
        ~PinnedCacheEmptied() { if (pinned) release_kept_pinned(); }
    } pinned_cache_emptied(host == HostMemory::pinned);
    // One lane per GPU this process uses (its workers share a lane), one for the CPU or a single GPU.
    const int lanes = gpus > 1 ? std::min(gpus, workers) : 1;
    stream::BandDealer<BandBuffer> to_compute(lanes, std::max(1, workers / lanes));
    BoundedQueue<BandBuffer> to_write{std::size_t(workers)};
    ImagePool inputs(host, std::size_t(workers)), results(host, std::size_t(workers));
    std::exception_ptr failure;
    std::mutex failure_mutex, order_mutex;
    std::condition_variable written_cv;
    int next_to_write = 0;  // in order: the first band not yet written (bands done before count as written)
    bool stopped = false;
    auto fail_with = [&](std::exception_ptr e) {
        {
            std::lock_guard lock(failure_mutex);
            if (!failure) failure = e;
        }
        {
            std::lock_guard lock(order_mutex);
            stopped = true;
        }
        written_cv.notify_all();
        to_compute.abort(), to_write.abort();
    };
    auto skip_done = [&](int k) {
        while (k < b.bands && done.count(k)) ++k;
        return k;
    };
    next_to_write = skip_done(0);
    using Clock = std::chrono::steady_clock;
    auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
    std::mutex timing_mutex;

    std::thread reader([&] {
        try {
            for (int k = 0;; ++k) {
                if (next_band) {  // a team's: whichever bands this process is handed
                    const std::optional<int> given = next_band();
                    if (!given) break;
                    k = *given;
                }
                if (k >= b.bands) break;
                if (done.count(k)) continue;
                if (in_order) {
                    std::unique_lock lock(order_mutex);
                    written_cv.wait(lock, [&] { return stopped || k < next_to_write + 2 * workers; });
                    if (stopped) return;
                }
                const auto t = Clock::now();
                BandBuffer buf = locate(b, in, k);
                fill(*source, buf, inputs);
                if (journal) buf.in_crc = stream::crc_of_rows(stream::crc_start(), buf.pixels.view());
                report.read_seconds += seconds_since(t);
                if (!to_compute.deal(std::move(buf))) return;
            }
            to_compute.finish();
        } catch (...) {
            fail_with(std::current_exception());
        }
    });
    std::uint64_t rows_done = 0;  // by this process, and before it
    for (int k : done) rows_done += std::uint64_t(locate(b, in, k).y1 - locate(b, in, k).y0);
    std::thread writer([&] {
        try {
            std::map<int, BandBuffer> waiting;  // in order: bands finished before an earlier one
            auto write = [&](BandBuffer& buf) {
                const auto t = Clock::now();
                const ImageView v = buf.pixels.view();
                sink->write_rows(buf.y0, v.roi(0, buf.core, v.width(), buf.y1 - buf.y0));
                results.give(std::move(buf.pixels));
                if (resumable) {  // what the journal records must be on disk first
                    sink->sync();
                    // A band whose bytes cannot be read back is not recorded (a resume redoes it).
                    if (const auto stored = journal ? stream::crc_of_stored(*sink, buf.y0, buf.y1) : std::nullopt)
                        journal->record({buf.y0, buf.y1 - buf.y0, buf.first, buf.rows, buf.in_crc, *stored});
                }
                report.write_seconds += seconds_since(t);
                rows_done += std::uint64_t(buf.y1 - buf.y0);
                if (options.progress) options.progress(rows_done, std::uint64_t(in.height));
            };
            while (auto buf = to_write.pop()) {
                if (!in_order) {
                    write(*buf);
                    continue;
                }
                waiting.emplace(buf->index, std::move(*buf));
                for (auto it = waiting.begin(); it != waiting.end() && it->first == next_to_write; it = waiting.erase(it)) {
                    write(it->second);
                    {
                        std::lock_guard lock(order_mutex);
                        next_to_write = skip_done(next_to_write + 1);
                    }
                    written_cv.notify_all();
                }
            }
        } catch (...) {
            fail_with(std::current_exception());
        }
    });
    auto work = [&](int device, int lane) {
        try {
            const std::shared_ptr<void> on_device = use_cuda_device(device);
            auto executor = make_executor(plan.backend, options.run.threads, nullptr);
            while (auto buf = to_compute.take(lane)) {
                const auto t = Clock::now();
                ImageShape result_shape = out;
                result_shape.height = buf->rows;
                Image result = results.take(result_shape);
                if (depth > 1)
                    run_plan(plan, *executor, band_volume(buf->pixels.view(), plane_rows), band_volume(result.view(), plane_rows),
                             options.run, volume_band_runner(*buf, plane_rows), true);
                else
                    run_plan(plan, *executor, buf->pixels.view(), result.view(), options.run, band_runner(*buf, in.height));
                inputs.give(std::move(buf->pixels));
                buf->pixels = std::move(result);  // the band's rows start at buf->core
                to_compute.done(lane);
                {
                    std::lock_guard lock(timing_mutex);
                    report.filter_seconds += seconds_since(t);
                }
                if (!to_write.push(std::move(*buf))) return;
            }
        } catch (...) {
            fail_with(std::current_exception());
        }
    };
    std::vector<std::thread> computing;
    for (int w = 0; w < workers; ++w) {
        int device = gpus > 1 ? w % gpus : -1;
        if (plan.backend == Backend::cuda && !options.devices.empty())
            device = options.devices[std::size_t(w % gpus) % options.devices.size()];
        if (plan.backend == Backend::cuda && team && team->cuda_device >= 0) device = team->cuda_device;
        computing.emplace_back(work, device, w % lanes);
    }
    for (auto& t : computing) t.join();
    to_write.finish();
    reader.join();
    writer.join();
    if (failure) discard_on(failure);
    if (failure && team && team->abort) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            team->abort(e.what());
        }
    }
    if (failure) std::rethrow_exception(failure);
    // Every band is written and synced (each process synced its own): rank 0 puts the file in place. The
    // band handout goes first: rank 0's answers to the other processes must not wait behind the barrier.
    next_band = nullptr;
    if (team) team->barrier();
    if (rank == 0) {
        sink->commit();
        journal.reset();
        stream::remove_journals(partial);
    }
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return report;
}

}  // namespace stream

}  // namespace apron
