// run_batch: a pool of I/O threads (decode, encode) and the compute slots, joined by two queues (see
// apron/batch.hpp).
// Every item ends in exactly one of done, skipped (resume) or failed, and the three counts add up to the
// items this process was handed.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "apron/batch.hpp"
#include "apron/errors.hpp"
#include "apron/memory.hpp"
#include "apron/stream.hpp"
#include "core/bounded_queue.hpp"
#include "batch/compute_slot.hpp"
#include "batch/image_header.hpp"
#include "io/file_io.hpp"
#include "batch/manifest.hpp"
#include "batch/memory_gate.hpp"
#include "batch/output_lock.hpp"
#include "batch/pnm_in_place.hpp"
#include "batch/file_stages.hpp"
#include "batch/progress.hpp"
#include "batch/streamed_image.hpp"
#include "core/host_memory.hpp"
#include "core/usable_cores.hpp"

namespace apron {
namespace {

using namespace batch;
using Clock = std::chrono::steady_clock;

struct Work {
    std::size_t index = 0;
    Image image;          // decoded here, or filtered here
    HostBuffer file;      // the file's bytes, where the image is a view of them (binary PNM) or a JPEG for the GPU
    ConstImageView view;  // the decoded pixels: image's, file's, or the caller's (BatchOptions::source)
    ImageView result;     // the filtered pixels: image's, or file's where the GPU wrote them over the input
    bool jpeg = false;    // `file` is a JPEG the compute slot decodes (view: its shape, no pixels)
    InputFacts input;
    // Bytes of the memory budget this image holds: its decoded pixels (until filtered), its result and
    // the result's encoding (until written).
    std::uint64_t held_decoded = 0, held_result = 0;
    ImageMetadata metadata;  // the input's, for its output (BatchOptions::keep_metadata)
};

// Bytes of an image as Image allocates it (rows padded to 64 bytes).
std::uint64_t image_bytes(const ImageShape& s) {
    return (std::uint64_t(s.row_bytes()) + 63) / 64 * 64 * std::uint64_t(s.height);
}

// What one image takes in memory on its way through the batch. The encoding of the result is counted as
// twice the result (a PNG or TIFF of noise is a little larger than its pixels, and the encoder's buffer
// grows by doubling).
struct Charge {
    std::uint64_t file = 0, decoded = 0, result = 0;
    std::uint64_t total() const { return file + decoded + result; }
};

Charge charge_of(std::uint64_t file_bytes, const ImageShape& in, const BatchOptions& o, const RunOptions& run) {
    const ImageShape out = o.pipeline.output_shape(in, run);
    return {file_bytes, image_bytes(in), 3 * image_bytes(out) + 4096};
}

// An image that alone does not fit fails alone.
void check_fits(const std::string& path, const Charge& c, std::uint64_t budget) {
    require_memory(c.total(), budget, path,
                   "file " + format_bytes(c.file) + ", image " + format_bytes(c.decoded) + ", result and its encoding " +
                       format_bytes(c.result));
}

std::uint64_t budget_of(const BatchOptions& o) { return o.memory_budget ? o.memory_budget : default_memory_budget(); }

ReadOptions read_options(const BatchOptions& o) {
    ReadOptions ro = o.read;
    if (!ro.memory_budget) ro.memory_budget = budget_of(o);
    return ro;
}

RunOptions run_options(const BatchOptions& o) {
    RunOptions ro = o.run;
    if (!ro.memory_budget) ro.memory_budget = budget_of(o);
    ro.cuda_stream = nullptr;
    ro.timings = nullptr;
    return ro;
}

// The shape of an input as a dry run sees it. Decoded whole, one image at a time: a header alone would pass
// a file cut short after it, or corrupt compressed data, that the real run then reports as unreadable.
ImageShape probe_input(const std::string& path, const ReadOptions& ro) { return read_image(path, ro).shape(); }

// An error of the band engine that names an option ("--memory: a band of ...") with the input it was about.
std::string naming(const std::string& input, const std::string& message) {
    return message.starts_with(input) ? message : input + ": " + message;
}

// The job file's promises about every image, checked as each is read.
void check_against_job(const BatchItem& item, const BatchOptions& o, const ImageShape& s) {
    if (o.bits) {
        const PixelType want = o.bits == 8 ? PixelType::u8 : o.bits == 16 ? PixelType::u16 : PixelType::f32;
        if (s.type != want)
            fail(item.input, std::string("is ") + to_string(s.type) + ", the job file says " + std::to_string(o.bits) +
                                 "-bit samples");
    }
    if ((o.max_width && s.width > o.max_width) || (o.max_height && s.height > o.max_height))
        fail(item.input, "is " + std::to_string(s.width) + "x" + std::to_string(s.height) +
                             ", larger than the job file's maximum " + std::to_string(o.max_width) + "x" +
                             std::to_string(o.max_height));
    if (s.width <= 2 * item.pad_x || s.height <= 2 * item.pad_y)
        fail(item.input, "is " + std::to_string(s.width) + "x" + std::to_string(s.height) +
                             ", no larger than its padding " + std::to_string(item.pad_x) + "," +
                             std::to_string(item.pad_y) + " on each side");
}

std::string relative_output(const std::string& output, const std::string& dir) {
    namespace fs = std::filesystem;
    const fs::path rel = fs::path(output).lexically_relative(dir);
    return rel.empty() || rel.native().starts_with("..") ? output : rel.string();
}

// The GPUs a batch runs on (empty: the CPU backend), after checking --backend, --devices and --streams.
std::vector<int> batch_devices(const BatchOptions& o) {
    const Backend b = o.run.backend;
    const int count = cuda_device_count();
    if (b == Backend::cuda && count == 0) fail("--backend cuda", "no CUDA device found");
    if (o.streams_per_device < 1 || o.streams_per_device > 16) fail("--streams", "must be 1..16");
    if (!(b == Backend::cuda || (b == Backend::automatic && count > 0))) {
        if (!o.devices.empty()) fail("--devices", "names GPUs, but the batch runs on the CPU backend");
        return {};
    }
    std::vector<int> devices = o.devices;
    if (devices.empty())
        for (int d = 0; d < count; ++d) devices.push_back(d);
    for (int d : devices)
        if (d < 0 || d >= count)
            fail("--devices", "device " + std::to_string(d) + " does not exist (this machine has " + std::to_string(count) + ")");
    return devices;
}

std::string describe_compute(int devices, int streams, bool jpeg_on_gpu) {
    if (devices == 0) return "CPU backend";
    return std::to_string(devices) + " GPU" + (devices > 1 ? "s" : "") + " x " + std::to_string(streams) + " streams" +
           (jpeg_on_gpu ? ", JPEG decoded by nvJPEG" : "");
}

bool is_jpeg(std::span<const std::uint8_t> file) { return file.size() >= 3 && file[0] == 0xFF && file[1] == 0xD8 && file[2] == 0xFF; }

class Engine {
public:
    Engine(const std::vector<BatchItem>& items, const BatchOptions& o)
        : items_(items), o_(o), read_(read_options(o)), run_(run_options(o)), gate_(budget_of(o)),
          jpeg_on_gpu_(decodes_jpeg_on_gpu(o)) {}

    BatchReport run() {
        const auto start = Clock::now();
        make_slots();
        const int cores = usable_cores();
        const int io = o_.io_threads > 0 ? o_.io_threads : std::clamp(cores, 1, 64);
        for (Stage s : {Stage::read, Stage::hash, Stage::decode, Stage::encode, Stage::write}) clock_.set_workers(s, io);
        clock_.set_workers(Stage::pin, io + int(slots_.size()));
        clock_.set_workers(Stage::idle, int(slots_.size()));
        if (!o_.output_dir.empty() && !o_.sink) {
            if (o_.lock_output) lock_ = std::make_unique<OutputLock>(o_.output_dir);  // creates the directories
            else prepare_output_directory(o_.output_dir);
            // A process killed mid-write leaves its temporary file; a resumed run removes them: rank 0 alone,
            // before the manifest barrier, so no rank of this run is writing yet.
            if (o_.resume && o_.rank == 0) io::remove_atomic_write_leftovers(o_.output_dir);
            // The manifest records inputs by their bytes: with the caller's pixels (source) there are none.
            if (!o_.source) {
                manifest_ = std::make_unique<Manifest>(o_.output_dir, o_.fingerprint, o_.rank, o_.resume,
                                                       o_.manifest_loaded);
                if (o_.notice)
                    for (const std::string& note : manifest_->notes()) o_.notice(note);
            }
        }
        // Images in flight (memory): decoded ones waiting for a slot, enough to keep every slot fed (two each)
        // and up to 16 I/O threads decoding; filtered ones waiting for a writer, at most one per I/O thread.
        // Every image in flight holds page-locked memory, which is slow to get the first time: measured on 4
        // H200s, one in flight per I/O thread (64) made a batch of 96 PGM files allocate a new block for
        // nearly every image, where a window this size reuses the blocks of the images before.
        read_room_ = std::max<int>(2 * int(slots_.size()) + 2, std::min(io, 16));
        filtered_.set_capacity(std::size_t(io));
        progress_ = std::make_unique<Progress>(items_.size(), o_.progress);
        // Set-up (device contexts, streams, the lock, reading the manifests) is reported apart from the stages:
        // the utilisation that names the bottleneck is over the time images were moving.
        const auto started = Clock::now();
        report_.setup_seconds = std::chrono::duration<double>(started - start).count();

        std::vector<std::thread> threads;
        std::atomic<int> slots_left = int(slots_.size());
        for (auto& slot : slots_)
            threads.emplace_back([&, s = slot.get()] {
                guarded([&] { compute_loop(*s); });
                if (--slots_left == 0) filtered_.finish();
            });
        for (int i = 0; i < io; ++i) threads.emplace_back([&] { guarded([&] { io_loop(); }); });
        for (auto& t : threads) t.join();
        if (!fatal_) slots_.clear();  // the GPUs' streams and buffers go before the band engine takes them
        if (!fatal_) stream_large_images();
        progress_->finish();
        if (fatal_) std::rethrow_exception(fatal_);

        report_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        for (int s = 0; s < stage_count; ++s)
            report_.stage_seconds.emplace_back(to_string(Stage(s)), clock_.seconds(Stage(s)));
        report_.summary = stage_summary(clock_, report_.seconds - report_.setup_seconds);
        report_.workers = describe_workers(io);
        return std::move(report_);
    }

private:
    void make_slots() {
        const std::vector<int> devices = batch_devices(o_);
        device_list_ = devices;
        if (devices.empty()) {
            slots_.push_back(make_cpu_slot());
            cpu_ = true;
            clock_.set_workers(Stage::compute, 1);
            return;
        }
        // Each GPU starts in a thread of its own (its context, streams and events): the driver's start of one
        // device takes a good part of a second, and devices started one after the other made a second GPU
        // cost more set-up than it saved.
        std::vector<std::vector<std::unique_ptr<ComputeSlot>>> per_device(devices.size());
        std::vector<std::exception_ptr> errors(devices.size());
        std::vector<std::thread> starting;
        const SlotJpeg jpeg = slot_jpeg();  // scans the inputs' names once
        for (std::size_t i = 0; i < devices.size(); ++i)
            starting.emplace_back([&, i] {
                try {
                    for (int s = 0; s < o_.streams_per_device; ++s)
                        per_device[i].push_back(make_cuda_slot(devices[i], jpeg));
                } catch (...) {
                    errors[i] = std::current_exception();
                }
            });
        for (auto& t : starting) t.join();
        for (const std::exception_ptr& e : errors)
            if (e) std::rethrow_exception(e);
        // Slot k of every device before slot k+1 of any: with fewer images than slots, every GPU gets some.
        for (int s = 0; s < o_.streams_per_device; ++s)
            for (auto& slots : per_device) slots_.push_back(std::move(slots[std::size_t(s)]));
        devices_ = int(devices.size());
        // Each slot's share of time in each stage (the events time a stage from when it is queued on the
        // slot's stream, so a copy waiting for the copy engine counts as upload): the stage where images
        // spend their time is the one that limits.
        for (Stage s : {Stage::upload, Stage::compute, Stage::download}) clock_.set_workers(s, int(slots_.size()));
    }

    // The slots' JPEG decoders start with the GPUs, in parallel, where some input is named as a JPEG file.
    SlotJpeg slot_jpeg() const {
        if (!jpeg_on_gpu_ || !has_jpeg_inputs()) return SlotJpeg::none;
        return o_.jpeg_decoder == BatchOptions::JpegDecoder::gpu ? SlotJpeg::gpu : SlotJpeg::try_gpu;
    }

    // Whether any input is named as a JPEG file.
    bool has_jpeg_inputs() const {
        return std::any_of(items_.begin(), items_.end(), [](const BatchItem& item) {
            std::string ext = std::filesystem::path(item.input).extension().string();
            for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
            return ext == ".jpg" || ext == ".jpeg" || ext == ".jpe";
        });
    }

    std::string describe_workers(int io) const {
        return describe_compute(devices_, o_.streams_per_device, jpeg_on_gpu_) + ", " + std::to_string(io) + " I/O threads";
    }

    // A thread's unexpected failure (not one image's) stops the batch: the channels close so every thread
    // returns, and run() rethrows it.
    template <class F>
    void guarded(F&& f) {
        try {
            f();
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!fatal_) fatal_ = std::current_exception();
            stop_ = true;
            decoded_.finish();
            filtered_.finish();
        }
    }

    std::optional<std::size_t> next() {
        if (stop_) return std::nullopt;
        if (o_.next) return o_.next();
        const std::size_t i = counter_++;
        return i < items_.size() ? std::optional(i) : std::nullopt;
    }

    void failed(std::size_t index, const std::string& message) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ++report_.failed;
            report_.failures.push_back({items_[index].input, message});
        }
        progress_->advance(0, true);
    }

    // One pool of I/O threads decodes and encodes (as the work comes: PGM is cheap to read and write, PNG
    // costly to write), so every core works on whichever is behind. Writing comes first: it frees memory
    // and finishes images. A thread reads only when there is room for another decoded image, so no reader
    // ever waits on a full queue while filtered images wait for a writer.
    void io_loop() {
        while (true) {
            if (auto w = filtered_.try_pop()) {
                write_one(*w);
                continue;
            }
            if (!feed_done_ && take_read_room()) {
                read_one();
                continue;
            }
            std::optional<Work> w = feed_done_ ? filtered_.pop() : filtered_.pop_for(std::chrono::milliseconds(2));
            if (w) {
                write_one(*w);
            } else if (feed_done_ && filtered_.ended()) {
                return;
            }
        }
    }

    bool take_read_room() {
        std::lock_guard<std::mutex> lock(room_mutex_);
        if (read_room_ <= 0) return false;
        --read_room_;
        ++reading_;
        return true;
    }
    void give_read_room() {
        std::lock_guard<std::mutex> lock(room_mutex_);
        ++read_room_;
    }
    // The last read of a finished feed closes the decoded queue (the compute slots then drain it).
    void end_read(bool room_used) {
        std::lock_guard<std::mutex> lock(room_mutex_);
        if (!room_used) ++read_room_;
        if (--reading_ == 0 && feed_done_) decoded_.finish();
    }

    void read_one() {
        const std::optional<std::size_t> index = next();
        if (!index) {
            feed_done_ = true;
            return end_read(false);
        }
        const BatchItem& item = items_.at(*index);
        Work w;
        w.index = *index;
        try {
            if (manifest_ && o_.resume && skip_finished(item)) return end_read(false);
            if (o_.source) {
                StageTimer t(clock_, Stage::read);
                w.view = o_.source(*index);
            } else {
                const Read read = read_file(item, w);
                if (read == Read::stopping) return end_read(false);
                if (read == Read::streams) {
                    std::lock_guard<std::mutex> lock(mutex_);
                    too_large_.push_back(*index);
                    return end_read(false);
                }
            }
            check_against_job(item, o_, w.view.shape);
        } catch (const std::exception& e) {  // apron::Error or bad_alloc: this image only
            gate_.give(w.held_decoded + w.held_result);
            failed(*index, e.what());
            return end_read(false);
        }
        decoded_.push(std::move(w));  // never waits: the room was taken before reading
        end_read(true);
    }

    // Resume: an output an earlier run of this job finished, from this very input, is kept. Checking reads
    // the output and the input whole (their CRC-32), here, in the I/O threads, in parallel.
    bool skip_finished(const BatchItem& item) {
        std::optional<ManifestEntry> entry;
        {
            StageTimer t(clock_, Stage::read);
            entry = manifest_->finished(relative_output(item.output, o_.output_dir), item.input);
        }
        if (!entry) return false;
        manifest_->keep(*entry);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ++report_.skipped;
        }
        progress_->advance(0);
        return true;
    }

    enum class Read { done, stopping, streams };

    // Reads and decodes item's file into w, within the memory budget: the file, its decoded pixels and the
    // result are taken from the budget (sizes from the header) before anything is allocated. `stopping` when
    // the batch stopped while this image waited for memory; `streams` for an image that alone does not fit
    // the budget and can be streamed in bands instead (after the others, run()).
    Read read_file(const BatchItem& item, Work& w) {
        const io::InputFile file(item.input);
        const std::uint64_t budget = gate_.budget();
        const std::optional<ImageShape> header = shape_from_header(file, read_);
        std::uint64_t held = 0;
        if (header) {
            const Charge c = charge_of(file.size(), *header, o_, run_);
            if (c.total() > budget && streamable(item)) return Read::streams;
            check_fits(item.input, c, budget);
            held = c.total();
        } else {
            // Nothing to go by before decoding: the image takes the whole budget, alone, until it is decoded.
            check_fits(item.input, Charge{file.size(), 0, 0}, budget);
            held = budget;
        }
        if (!wait_for_memory(held)) return Read::stopping;
        try {
            ReadOptions ro = read_;
            if (!cpu_) ro.memory = HostMemory::pinned;
            {
                HostBuffer bytes = read_input(file, !cpu_, w.input, clock_);
                const std::span<std::uint8_t> file_bytes(bytes.data(), bytes.size());
                StageTimer t(clock_, Stage::decode);
                if (o_.keep_metadata || o_.auto_orient) w.metadata = read_metadata(file_bytes, item.input, ro);
                // Binary PNM is its own pixels: the image is a view of the bytes read (pinned for the GPU).
                // Where it would need turning (never: PNM has no orientation), it is decoded as any other.
                std::optional<ImageView> in_place;
                const bool upright = !(o_.auto_orient && w.metadata.orientation >= 2);
                if (upright) in_place = pnm_in_place(file_bytes, item.input, ro);
                ImageShape stored;
                if (upright && jpeg_on_gpu_ && is_jpeg(file_bytes)) {
                    // The GPU decodes it (ComputeSlot::run_jpeg); the header read here checks it as the CPU
                    // decoder would (the pixel limit, the budget) and gives its shape.
                    stored = probe_image(file_bytes, item.input, ro);
                    w.view = ConstImageView{nullptr, stored, 0, Memory::host};
                    w.file = std::move(bytes);
                    w.jpeg = true;
                } else if (in_place) {
                    w.view = as_const(*in_place);
                    w.file = std::move(bytes);
                    stored = w.view.shape;
                } else {
                    w.image = decode_image(file_bytes, item.input, ro);
                    stored = w.image.shape();
                    // The turned copy replaces the decoded image at once: for a moment the image is held twice.
                    if (o_.auto_orient) turn_upright(w.image, w.metadata, ro.memory);
                    w.view = w.image.view();
                }
                if (!o_.keep_metadata) w.metadata = {};
                if (o_.keep_metadata && !o_.sink) say_not_carried(item, stored, w.view.shape, w.metadata);
            }  // the file's bytes are freed (unless the image lies in them)
            Charge real = charge_of(0, w.view.shape, o_, run_);
            if (w.file.data()) real.decoded = w.file.size();  // the image lies in the file's bytes
            check_fits(item.input, Charge{w.input.bytes, real.decoded, real.result}, budget);
            // Keep what the image holds now; a header that under-stated it is counted as it is.
            if (real.total() <= held) gate_.give(held - real.total());
            else gate_.force(real.total() - held);
            w.held_decoded = real.decoded;
            w.held_result = real.result;
        } catch (...) {
            if (!w.held_decoded && !w.held_result) gate_.give(held);
            throw;
        }
        return Read::done;
    }

    // An image larger than the budget goes through the band engine (apron/stream.hpp) as `apron filter`
    // streams it, where nothing but its file names the output: not padded (a job file's padding is cropped
    // from a whole image), not the caller's pixels or sink.
    bool streamable(const BatchItem& item) const { return !o_.sink && !o_.source && item.pad_x == 0 && item.pad_y == 0; }

    // The images set aside as larger than the budget, one after the other, each with the whole budget and
    // every GPU of the batch, after the others are done (they would not fit beside them). Each ends done or
    // failed as any other image, and is recorded in the manifest with the CRC-32 of both files.
    void stream_large_images() {
        std::sort(too_large_.begin(), too_large_.end());
        for (const std::size_t index : too_large_) {
            if (stop_) return;
            const BatchItem& item = items_[index];
            try {
                const Backend backend =
                    cpu_ ? (run_.backend == Backend::reference ? Backend::reference : Backend::cpu) : Backend::cuda;
                const StreamedImage s = stream_image(item, o_, run_, backend, device_list_, manifest_ != nullptr);
                if (o_.notice)
                    o_.notice(item.input + ": larger than the memory budget of " + format_bytes(gate_.budget()) +
                              ": streamed in " + std::to_string(s.report.bands) + " bands of " +
                              std::to_string(s.report.band_rows) + " rows");
                if (manifest_)
                    manifest_->record({relative_output(item.output, o_.output_dir), s.output_bytes, s.output_crc,
                                       item.input, s.input_bytes, s.input_mtime_ns, s.input_crc});
                std::lock_guard<std::mutex> lock(mutex_);
                ++report_.done;
                report_.pixels += s.shape.pixels();
                report_.bytes_in += std::uint64_t(s.shape.row_bytes()) * std::uint64_t(s.shape.height);
                report_.bytes_out +=
                    std::uint64_t(o_.pipeline.output_shape(s.shape, run_).row_bytes()) * std::uint64_t(s.shape.height);
            } catch (const std::exception& e) {
                failed(index, naming(item.input, e.what()));
                continue;
            }
            progress_->advance(0);
        }
    }

    // Fits an image's metadata to its output (fit_metadata) and says on stderr what the output cannot hold.
    void say_not_carried(const BatchItem& item, const ImageShape& stored, const ImageShape& upright, ImageMetadata& m) {
        ImageShape out = o_.pipeline.output_shape(upright, run_);
        out.width -= 2 * item.pad_x;
        out.height -= 2 * item.pad_y;
        const std::string note = fit_metadata(m, format_for_path(item.output), item.output, stored, out);
        if (note.empty()) return;
        std::lock_guard<std::mutex> lock(mutex_);
        std::fprintf(stderr, "apron: %s\n", note.c_str());
    }

    // Waits until `bytes` fit in the budget, writing finished images meanwhile (they free memory, and this
    // thread may be the writer they wait for). false when the batch stops.
    bool wait_for_memory(std::uint64_t bytes) {
        while (!gate_.try_take(bytes)) {
            if (stop_) return false;
            if (std::optional<Work> done = filtered_.pop_for(std::chrono::milliseconds(2))) write_one(*done);
        }
        return true;
    }

    void compute_loop(ComputeSlot& slot) {
        const RunOptions& ro = run_;
        while (true) {
            std::optional<Work> w;
            {
                StageTimer t(clock_, Stage::idle);
                w = decoded_.pop();
            }
            if (!w) return;
            give_read_room();
            Work out;
            out.index = w->index;
            out.input = w->input;
            out.held_result = w->held_result;
            out.metadata = std::move(w->metadata);
            try {
                const ImageShape shape = o_.pipeline.output_shape(w->view.shape, ro);
                // A GPU slot uploads the whole input before it downloads the result (one stream, in order), so
                // a result of the input's shape can land in the file's bytes the input lies in (binary PNM):
                // no second page-locked block per image, which costs milliseconds to get the first time.
                if (!cpu_ && !w->jpeg && w->file.data() && shape == w->view.shape) {
                    out.file = std::move(w->file);
                    out.result = {const_cast<std::byte*>(w->view.data), shape, w->view.pitch, Memory::host};
                } else {
                    StageTimer t(clock_, Stage::pin);
                    out.image = Image(shape, cpu_ ? HostMemory::pageable : HostMemory::pinned);
                    out.result = out.image.view();
                }
                if (w->jpeg)
                    slot.run_jpeg(o_.pipeline, ro, std::span<const std::uint8_t>(w->file.data(), w->file.size()),
                                  items_[w->index].input, w->view.shape, out.result, clock_);
                else
                    slot.run(o_.pipeline, ro, w->view, out.result, clock_);
                std::lock_guard<std::mutex> lock(mutex_);
                report_.bytes_in += w->view.shape.row_bytes() * std::size_t(w->view.height());
            } catch (const std::exception& e) {
                gate_.give(w->held_decoded + w->held_result);
                failed(w->index, e.what());
                continue;
            }
            const std::uint64_t decoded = w->held_decoded;
            w.reset();  // the decoded image's memory goes back before this slot may wait on a full queue
            gate_.give(decoded);
            if (!filtered_.push(std::move(out))) return;
        }
    }

    void write_one(Work& w) {
        const BatchItem& item = items_[w.index];
        struct GiveBack {  // the result and its encoding leave the budget however the write ends
            MemoryGate& gate;
            Work& w;
            ~GiveBack() {
                w.image = Image();
                w.file.reset();
                gate.give(w.held_result);
            }
        };
        const std::uint64_t pixels = w.result.shape.pixels();
        try {
            GiveBack give_back{gate_, w};
            const ImageView full = w.result;
            const ImageView kept = full.roi(item.pad_x, item.pad_y, full.width() - 2 * item.pad_x,
                                            full.height() - 2 * item.pad_y);
            const std::uint64_t bytes = kept.shape.row_bytes() * std::uint64_t(kept.height());
            if (o_.sink) {
                StageTimer t(clock_, Stage::write);
                o_.sink(w.index, kept);
            } else {
                const auto [size, crc] = write_output(item.output, kept, o_.write, std::move(w.metadata), manifest_ != nullptr, clock_);
                if (manifest_)
                    manifest_->record({relative_output(item.output, o_.output_dir), size, crc, item.input, w.input.bytes,
                                       w.input.mtime_ns, w.input.crc32});
            }
            std::lock_guard<std::mutex> lock(mutex_);
            ++report_.done;
            report_.pixels += std::uint64_t(full.width()) * std::uint64_t(full.height());
            report_.bytes_out += bytes;
        } catch (const std::exception& e) {
            failed(w.index, e.what());
            return;
        }
        progress_->advance(pixels);
    }

    const std::vector<BatchItem>& items_;
    const BatchOptions& o_;
    const ReadOptions read_;
    const RunOptions run_;
    MemoryGate gate_;
    const bool jpeg_on_gpu_;
    std::unique_ptr<OutputLock> lock_;  // held until the run ends (declared before the manifest: outlives it)
    std::vector<std::unique_ptr<ComputeSlot>> slots_;
    bool cpu_ = false;
    int devices_ = 0;
    std::vector<int> device_list_;  // the batch's GPUs (the band engine takes the same)
    BoundedQueue<Work> decoded_, filtered_;
    std::mutex room_mutex_;
    int read_room_ = 0, reading_ = 0;  // under room_mutex_
    std::atomic<bool> feed_done_ = false;
    std::unique_ptr<Manifest> manifest_;
    std::vector<std::size_t> too_large_;  // images streamed after the others (under mutex_)
    std::unique_ptr<Progress> progress_;
    StageClock clock_;
    std::atomic<std::size_t> counter_ = 0;
    std::atomic<bool> stop_ = false;
    std::mutex mutex_;
    std::exception_ptr fatal_;
    BatchReport report_;
};

} // namespace

std::string describe_batch_compute(const BatchOptions& options) {
    return describe_compute(int(batch_devices(options).size()), options.streams_per_device, decodes_jpeg_on_gpu(options));
}

bool decodes_jpeg_on_gpu(const BatchOptions& options) {
    using D = BatchOptions::JpegDecoder;
    if (options.jpeg_decoder == D::cpu || options.source) return false;
    const bool gpus = !batch_devices(options).empty();
    if (options.jpeg_decoder == D::gpu) {
        if (!gpus) fail("--jpeg-decode", "gpu: the batch runs on the CPU backend");
        if (!gpu_jpeg_available()) fail("--jpeg-decode", "gpu: this build has no nvJPEG (configure with -DAPRON_NVJPEG=ON)");
        return true;
    }
    return gpus && gpu_jpeg_available();
}

BatchReport run_batch(const std::vector<BatchItem>& items, const BatchOptions& options) {
    return Engine(items, options).run();
}

BatchCheck check_batch_inputs(const std::vector<BatchItem>& items, const BatchOptions& options) {
    const ReadOptions ro = read_options(options);
    const RunOptions run = run_options(options);
    const std::uint64_t budget = budget_of(options);
    std::vector<std::optional<std::string>> why(items.size());
    std::vector<ImageShape> shapes(items.size());
    std::vector<char> streams(items.size(), 0);
    std::atomic<std::size_t> next = 0;
    auto check = [&] {
        for (std::size_t i; (i = next++) < items.size();) {
            try {
                const io::InputFile input(items[i].input);  // what a real run refuses to open
                const std::uint64_t file = input.size();
                // Larger than the budget: a real run streams it in bands, as this plans it.
                const std::optional<ImageShape> header = shape_from_header(input, ro);
                if (header && charge_of(file, *header, options, run).total() > budget && !options.sink &&
                    !options.source && items[i].pad_x == 0 && items[i].pad_y == 0) {
                    StreamOptions so;
                    so.run = run;
                    so.pnm_byte_order = ro.pnm_byte_order;
                    try {
                        describe_stream(items[i].input, items[i].output, options.pipeline, so);
                    } catch (const std::exception& e) {
                        why[i] = naming(items[i].input, e.what());
                        continue;
                    }
                    streams[i] = 1;
                    continue;
                }
                const ImageShape shape = probe_input(items[i].input, ro);
                check_against_job(items[i], options, shape);
                check_fits(items[i].input, charge_of(file, shape, options, run), budget);
                shapes[i] = shape;
            } catch (const std::exception& e) {
                why[i] = e.what();
            }
        }
    };
    const int threads = std::clamp<int>(options.io_threads > 0 ? options.io_threads : usable_cores(), 1, 64);
    std::vector<std::thread> pool;
    for (int t = 1; t < threads && std::size_t(t) < items.size(); ++t) pool.emplace_back(check);
    check();
    for (auto& t : pool) t.join();

    BatchCheck result;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (why[i]) {
            result.failures.push_back({items[i].input, *why[i]});
        } else if (streams[i]) {
            result.streamed.push_back(items[i].input);
        } else if (!result.first) {
            result.first = i;
            result.first_shape = shapes[i];
        }
    }
    return result;
}

} // namespace apron
