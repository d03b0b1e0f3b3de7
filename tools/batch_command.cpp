// `apron batch`: many images through one pipeline (apron/batch.hpp), on every GPU of the node or the CPU,
// and across MPI ranks when launched by mpirun.
#include "batch_command.hpp"

#include <chrono>

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <iostream>
#include <memory>
#include <new>
#include <sstream>
#include <thread>

#include "apron/batch.hpp"
#include "apron/errors.hpp"
#include "apron/memory.hpp"
#include "batch/compute_slot.hpp"
#include "batch/fingerprint.hpp"
#include "batch/inputs.hpp"
#include "batch/naming.hpp"
#include "batch/output_lock.hpp"
#include "batch/pipeline_file.hpp"
#include "batch/progress.hpp"
#include "core/usable_cores.hpp"
#include "dist/mpi_batch.hpp"

namespace {

apron::batch::InputKind kind_option(const std::string& name) {
    if (const auto kind = apron::batch::parse_input_kind(name)) return *kind;
    throw apron::Error("--inputs-as: '" + name + "' is not auto, job, list, dir or glob");
}

apron::BatchOptions::JpegDecoder jpeg_decoder_option(const std::string& name) {
    using D = apron::BatchOptions::JpegDecoder;
    if (name == "auto") return D::automatic;
    if (name == "cpu") return D::cpu;
    if (name == "gpu") return D::gpu;
    throw apron::Error("--jpeg-decode: '" + name + "' is not auto, cpu or gpu");
}

apron::batch::JobBits32 job_bits32_option(const std::string& name) {
    if (name == "int") return apron::batch::JobBits32::int32;
    if (name == "float") return apron::batch::JobBits32::float32;
    throw apron::Error("--job-bits32: '" + name + "' is not int or float");
}

std::vector<int> device_list(const std::string& text) {
    std::vector<int> out;
    if (text.empty() || text == "all") return out;
    std::stringstream s(text);
    std::string item;
    while (std::getline(s, item, ',')) {
        char* end = nullptr;
        const long d = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end || d < 0 || d > 1023) throw apron::Error("--devices: '" + text + "' is not a list like 0,1");
        out.push_back(int(d));
    }
    return out;
}

std::string human_seconds(double s) {
    char b[32];
    std::snprintf(b, sizeof b, s < 10 ? "%.3f s" : s < 100 ? "%.2f s" : "%.0f s", s);
    return b;
}

// --dry-run: what a real run would read and do, and the status it would end with (0, or 5 when some
// input is unreadable). Rank 0 prints.
int dry_run(const BatchArgs& a, const std::vector<apron::BatchItem>& items, const apron::BatchOptions& o,
            const apron::batch::InputSet& inputs, const apron::dist::World& world) {
    std::cout << items.size() << " images";
    if (inputs.job)
        std::cout << " (job file: " << inputs.job->bits << "-bit, at most " << inputs.job->max_width << "x"
                  << inputs.job->max_height << ", padding " << inputs.job->pad_x << "," << inputs.job->pad_y << ")";
    std::cout << " -> " << a.output_dir << "\n";
    for (std::size_t i = 0; i < items.size() && i < 10; ++i)
        std::cout << "  " << items[i].input << " -> " << items[i].output << "\n";
    if (items.size() > 10) std::cout << "  ... " << items.size() - 10 << " more\n";
    const apron::BatchCheck check = apron::check_batch_inputs(items, o);
    if (check.first)
        std::cout << "plan for " << items[*check.first].input << " (" << check.first_shape.width << "x"
                  << check.first_shape.height << "):\n"
                  << o.pipeline.describe(check.first_shape, o.run);
    else
        std::cout << "no plan: no input is readable\n";
    if (!check.streamed.empty()) {
        std::cout << check.streamed.size() << " of " << items.size()
                  << " inputs larger than the memory budget, streamed in bands after the others:\n";
        for (const auto& input : check.streamed) std::cout << "  " << input << "\n";
    }
    if (!check.failures.empty()) {
        std::cout << check.failures.size() << " of " << items.size()
                  << " inputs unreadable (a real run reports each and exits 5):\n";
        for (const auto& f : check.failures) std::cout << "  " << f.message << "\n";
    }
    std::cout << "compute: " << apron::describe_batch_compute(o)
              << (world.active ? ", " + std::to_string(world.size) + " MPI ranks" : std::string()) << "\n";
    std::cout << "memory budget: " << apron::format_bytes(o.memory_budget) << "\n";
    if (const auto problem = apron::batch::output_directory_problem(a.output_dir)) {
        std::cout << "output folder unusable: " << *problem << "; a real run would stop at once\n";
        return 1;
    }
    if (const auto holder = apron::batch::output_lock_holder(a.output_dir))
        std::cout << "output folder locked: " << apron::batch::lock_file_path(a.output_dir) << " is held by "
                  << *holder << "; a real run now would stop at once\n";
    return check.failures.empty() ? 0 : 5;
}

// When this process started (static initialisation, before main): the summary says how long the process took
// before the batch began (the CUDA driver's start, listing the inputs), which its set-up does not count.
const std::chrono::steady_clock::time_point process_started = std::chrono::steady_clock::now();

void print_report(const apron::BatchReport& r, std::size_t total, bool quiet, int ranks, double before_batch) {
    for (const auto& f : r.failures) std::fprintf(stderr, "apron: failed: %s\n", f.message.c_str());
    if (quiet) return;
    const double mpix = double(r.pixels) / 1e6;
    std::fprintf(stderr, "apron batch: %zu of %zu images done, %zu skipped (already done), %zu failed in %s: %.1f images/s, %.0f Mpix/s, %.2f GB/s in\n",
                 r.done, total, r.skipped, r.failed, human_seconds(r.seconds).c_str(),
                 r.seconds > 0 ? double(r.done) / r.seconds : 0.0, r.seconds > 0 ? mpix / r.seconds : 0.0,
                 r.seconds > 0 ? double(r.bytes_in) / r.seconds / 1e9 : 0.0);
    std::fprintf(stderr, "  %s; set-up %s%s; the process ran %s before the batch\n", r.workers.c_str(),
                 human_seconds(r.setup_seconds).c_str(), ranks > 1 ? (" on rank 0; " + std::to_string(ranks) + " ranks").c_str() : "",
                 human_seconds(before_batch).c_str());
    std::fprintf(stderr, "%s", r.summary.c_str());
}

} // namespace

void add_batch_command(CLI::App& app, BatchArgs& a) {
    auto* c = app.add_subcommand("batch", "run a pipeline over many images (GenConv job file, list, directory or glob)");
    a.command = c;
    c->add_option("inputs", a.inputs, "job file, list file, directory or glob pattern (several allowed)")->required()->type_name("FILE");
    c->add_option("-o,--output-dir", a.output_dir, "directory for the outputs (created if needed)")->required()->type_name("DIR");
    c->add_option("--op", a.ops, "NAME[:key=value,...], applied in order (see `apron ops`)");
    c->add_option("--pipeline", a.pipeline_file, "the operations from a JSON pipeline file instead of --op")->type_name("FILE");
    c->add_option("--inputs-as", a.inputs_as, "how to read INPUTS: auto, job, list, dir or glob")->capture_default_str()->type_name("auto|job|list|dir|glob");
    c->add_option("--name", a.pattern, "output name pattern: {name} {stem} {ext} {index} {index:N}")->capture_default_str();
    c->add_option("--format", a.format, "output format: png, pgm, ppm, pfm, jpg, tif (default: the input's)")->type_name("png|pgm|ppm|pfm|jpg|tif");
    c->add_option("--out-type", a.out_type, "u8, u16 or f32 (default: the input's type)")->type_name(type_values);
    c->add_option("--backend", a.backend, "auto, cpu, reference or cuda")->capture_default_str()->type_name(backend_values);
    c->add_option("--algo", a.algo, "force a path on every linear step: auto, direct, separable, low-rank, fft or tensor")
        ->capture_default_str()
        ->type_name(algo_values);
    c->add_option("--devices", a.devices, "GPUs to use, e.g. 0,1 (default: all; under MPI the node-local rank's)");
    c->add_option("--streams", a.streams, "compute slots (CUDA streams) per GPU, 1-16")->capture_default_str();
    c->add_option("--io-threads", a.io_threads, "threads decoding and encoding images, 0 = one per core")->capture_default_str();
    c->add_option("--threads", a.threads, "CPU backend threads, 0 = all cores")->capture_default_str();
    c->add_option("--max-pixels", a.max_pixels, "refuse input images larger than this")->capture_default_str();
    a.quality_option = c->add_option("--quality", a.quality, "JPEG quality 1..100 (JPEG output only)")->capture_default_str();
    c->add_option("--metadata", a.metadata, metadata_help)->capture_default_str()->type_name(metadata_values);
    c->add_flag("--auto-orient", a.auto_orient, "turn each image upright by its Exif orientation before filtering");
    c->add_option("--memory", a.memory, "host memory for the images in flight, e.g. 8G, 512M, 50% (default: 3/4 of RAM)");
    c->add_option("--byte-order", a.byte_order, "16-bit binary PNM inputs: big (Netpbm) or little (GenConv's files)")
        ->capture_default_str()
        ->type_name(byte_order_values);
    c->add_option("--job-bits32", a.job_bits32,
                  "a job file's 'bits 32': int (GenConv's int32 samples: refused) or float (f32 images)")
        ->capture_default_str()
        ->type_name("int|float");
    c->add_option("--jpeg-decode", a.jpeg_decode,
                  "JPEG inputs of a GPU batch: auto (nvJPEG on the GPU where the build has it), gpu (nvJPEG, or an error), "
                  "cpu (libjpeg-turbo); the two decoders' pixels differ by rounding (docs/batch.md)")
        ->capture_default_str()
        ->type_name("auto|cpu|gpu");
    c->add_flag("--resume", a.resume,
                "skip outputs a previous run of the same job finished, when the output and its input are unchanged (CRC-32)");
    c->add_flag("-q,--quiet", a.quiet, "no progress bar and no summary (failures are still reported)");
    c->add_flag("--dry-run", a.dry_run, "print what would be done and exit");
}

int run_batch_command(const BatchArgs& a, int argc, char** argv) {
    namespace b = apron::batch;
    // MPI first: every rank parses the same arguments and resolves the same inputs.
    apron::dist::World world = apron::dist::start_world(&argc, &argv);
    try {
        apron::dist::check_launch(world);
        if (a.ops.empty() == a.pipeline_file.empty()) throw apron::Error("batch: give either --op or --pipeline (one of them)");
        apron::BatchOptions o;
        std::vector<std::string> ops = a.ops;
        if (!a.pipeline_file.empty()) {
            const b::PipelineFile pf = b::read_pipeline_file(a.pipeline_file);
            ops = pf.ops;
            if (pf.out_type) o.run.out_type = pf.out_type;
            if (pf.algo) o.run.algorithm = *pf.algo;
        }
        o.pipeline = apron::Pipeline(ops);
        o.run.backend = backend_option(a.backend);
        if (a.algo != "auto" || a.pipeline_file.empty()) o.run.algorithm = algo_option(a.algo);
        if (!a.out_type.empty()) o.run.out_type = type_option(a.out_type, "--out-type");
        if (a.threads < 0 || a.threads > apron::max_threads) throw apron::Error("--threads: must be 0.." + std::to_string(apron::max_threads));
        if (a.io_threads < 0 || a.io_threads > 256) throw apron::Error("--io-threads: must be 0..256");
        if (a.streams < 1 || a.streams > 16) throw apron::Error("--streams: must be 1..16");
        if (a.quality < 1 || a.quality > 100) throw apron::Error("--quality: must be 1..100");
        std::string format = a.format;
        for (char& ch : format) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        if (a.quality_option && a.quality_option->count() > 0 && !format.empty() && format != "jpg" && format != "jpeg")
            throw apron::Error("--quality: --format " + a.format + " is not JPEG (--quality applies to JPEG output)");
        if (a.max_pixels < 1) throw apron::Error("--max-pixels: must be positive");
        o.run.threads = a.threads;
        o.devices = device_list(a.devices);
        o.streams_per_device = a.streams;
        o.io_threads = a.io_threads;
        o.read.max_pixels = std::uint64_t(a.max_pixels);
        o.read.pnm_byte_order = byte_order_option(a.byte_order);
        o.write.jpeg_quality = a.quality;
        o.keep_metadata = keep_metadata_option(a.metadata);
        o.auto_orient = a.auto_orient;
        o.jpeg_decoder = jpeg_decoder_option(a.jpeg_decode);
        o.memory_budget = memory_option(a.memory);
        // The default budget is the node's: ranks sharing a node share it.
        if (!o.memory_budget && world.active && world.local_size > 1)
            o.memory_budget = apron::default_memory_budget() / std::uint64_t(world.local_size);
        o.read.memory_budget = o.memory_budget;
        o.run.memory_budget = o.memory_budget;
        b::JobOptions job_options;
        job_options.bits32 = job_bits32_option(a.job_bits32);

        const b::InputSet inputs = b::resolve_inputs(a.inputs, kind_option(a.inputs_as), job_options);
        b::OutputNaming naming;
        naming.directory = a.output_dir;
        naming.pattern = a.pattern;
        if (!a.format.empty()) {
            naming.format = b::parse_format(a.format);
            if (!naming.format) throw apron::Error("--format: '" + a.format + "' is not png, pgm, ppm, pfm, jpg or tif");
        }
        const std::vector<apron::BatchItem> items = b::batch_items(inputs, naming, o);
        {
            std::vector<std::string> names;
            names.reserve(2 * items.size());
            for (const apron::BatchItem& item : items) names.push_back(item.input), names.push_back(item.output);
            apron::dist::check_same_items(world, names);
        }
        // One rank per GPU: the node-local rank picks its device unless --devices names them.
        if (world.active && o.devices.empty() && o.run.backend != apron::Backend::cpu &&
            o.run.backend != apron::Backend::reference && b::cuda_device_count() > 0) {
            const int gpus = b::cuda_device_count();
            o.devices = {world.local_rank % gpus};
            if (world.local_rank == 0 && world.local_size > gpus)
                std::fprintf(stderr, "apron: note: rank %d's node runs %d ranks on %d GPU%s: each GPU serves %d or %d of them\n",
                             world.rank, world.local_size, gpus, gpus > 1 ? "s" : "", world.local_size / gpus,
                             (world.local_size + gpus - 1) / gpus);
        }

        // Checked before anything is created: an option error leaves no output directory behind.
        (void)apron::describe_batch_compute(o);

        if (a.dry_run) {
            int status = world.rank == 0 ? dry_run(a, items, o, inputs, world) : 0;
            status = apron::dist::broadcast_from_root(world, status);
            apron::dist::finish_world(world);
            return status;
        }

        // One run per output folder: rank 0 locks it before any rank reads a manifest, and every rank
        // learns whether it did (a refusal ends them all with exit 1, rank 0 saying why).
        std::unique_ptr<b::OutputLock> lock;
        std::string lock_error;
        if (world.rank == 0) {
            try {
                lock = std::make_unique<b::OutputLock>(a.output_dir);
            } catch (const apron::Error& e) {
                lock_error = e.what();
            }
        }
        if (apron::dist::broadcast_from_root(world, lock_error.empty() ? 0 : 1) != 0) {
            if (world.rank == 0) std::fprintf(stderr, "apron: %s\n", lock_error.c_str());
            apron::dist::finish_world(world);
            return 1;
        }
        o.lock_output = false;

        o.output_dir = a.output_dir;
        o.fingerprint = b::fingerprint(o, inputs, naming);
        if (world.rank == 0) o.notice = [](const std::string& note) { std::fprintf(stderr, "apron: note: %s\n", note.c_str()); };
        o.resume = a.resume;
        o.rank = world.rank;
        o.manifest_loaded = [&world] { apron::dist::barrier(world); };
        o.progress = !a.quiet && !world.active && ::isatty(2);
        // Open MPI binds each rank to one core when there are two ranks or fewer: every I/O thread and the
        // CPU backend would then share that core (measured: 2 ranks on 2 H200s ran 2.7x slower than one
        // process). Say so once, with the fix.
        const int machine = int(std::thread::hardware_concurrency());
        if (world.active && world.rank == 0 && apron::usable_cores() < machine / std::max(1, world.local_size) / 2)
            std::fprintf(stderr, "apron: note: rank 0 may use %d of this node's %d cores (the MPI launcher bound it); "
                                 "for decoding and encoding on every core run mpirun with --bind-to none\n",
                         apron::usable_cores(), machine);
        apron::BatchReport report;
        const double before_batch = std::chrono::duration<double>(std::chrono::steady_clock::now() - process_started).count();
        {
            apron::dist::Feed feed(world, items.size());
            o.next = [&feed] { return feed.next(); };
            report = apron::run_batch(items, o);
        }  // rank 0's coordinator has answered every rank
        report = apron::dist::reduce_reports(world, report);
        if (world.rank == 0) print_report(report, items.size(), a.quiet, world.size, before_batch);
        apron::dist::finish_world(world);
        return report.failed ? 5 : 0;
    } catch (const std::exception& e) {  // apron::Error, or out of memory: one line, and no rank left waiting
        std::fprintf(stderr, "apron: %s\n", dynamic_cast<const std::bad_alloc*>(&e) ? "out of host memory" : e.what());
        if (world.active && world.size > 1) apron::dist::abort_world(world, 1);
        apron::dist::finish_world(world);
        return 1;
    }
}
