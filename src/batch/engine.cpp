// run_batch: a pool of I/O threads (decode, encode) and the compute slots, joined by two queues (see
// apron/batch.hpp).
// Every item ends in exactly one of done, skipped (resume) or failed, and the three counts add up to the
// items this process was handed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "apron/batch.hpp"
#include "apron/errors.hpp"
#include "batch/channel.hpp"
#include "batch/compute_slot.hpp"
#include "batch/manifest.hpp"
#include "batch/progress.hpp"
#include "core/usable_cores.hpp"
#include "io/file_io.hpp"

namespace apron {
namespace {

using namespace batch;
using Clock = std::chrono::steady_clock;

struct Work {
    std::size_t index = 0;
    Image image;          // decoded here, or filtered here
    ConstImageView view;  // the decoded pixels: image's, or the caller's (BatchOptions::source)
};

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

std::string describe_compute(int devices, int streams) {
    if (devices == 0) return "CPU backend";
    return std::to_string(devices) + " GPU" + (devices > 1 ? "s" : "") + " x " + std::to_string(streams) + " streams";
}

class Engine {
public:
    Engine(const std::vector<BatchItem>& items, const BatchOptions& o) : items_(items), o_(o) {}

    BatchReport run() {
        const auto start = Clock::now();
        make_slots();
        const int cores = usable_cores();
        const int io = o_.io_threads > 0 ? o_.io_threads : std::clamp(cores, 1, 64);
        for (Stage s : {Stage::read, Stage::write}) clock_.set_workers(s, io);
        clock_.set_workers(Stage::idle, int(slots_.size()));
        if (!o_.output_dir.empty() && !o_.sink) {
            std::error_code ec;
            std::filesystem::create_directories(o_.output_dir, ec);
            if (ec) fail(o_.output_dir, "cannot create the output directory (" + ec.message() + ")");
            // A process killed mid-write leaves its temporary file; a resumed run removes them: rank 0 alone,
            // before the manifest barrier, so no rank of this run is writing yet.
            if (o_.resume && o_.rank == 0) io::remove_atomic_write_leftovers(o_.output_dir);
            manifest_ = std::make_unique<Manifest>(o_.output_dir, o_.fingerprint, o_.rank, o_.resume, o_.manifest_loaded);
        }
        // Images in flight (memory): decoded ones waiting for a slot, at most enough to keep every slot fed
        // and every I/O thread decoding; filtered ones waiting for a writer, at most one per I/O thread.
        read_room_ = std::max<int>(2 * int(slots_.size()), io);
        filtered_.set_capacity(std::size_t(io));
        progress_ = std::make_unique<Progress>(items_.size(), o_.progress);
        // Set-up (device contexts, streams, the manifest's verification) is reported apart from the stages:
        // the utilisation that names the bottleneck is over the time images were moving.
        const auto started = Clock::now();
        report_.setup_seconds = std::chrono::duration<double>(started - start).count();

        std::vector<std::thread> threads;
        std::atomic<int> slots_left = int(slots_.size());
        for (auto& slot : slots_)
            threads.emplace_back([&, s = slot.get()] {
                guarded([&] { compute_loop(*s); });
                if (--slots_left == 0) filtered_.close();
            });
        for (int i = 0; i < io; ++i) threads.emplace_back([&] { guarded([&] { io_loop(); }); });
        for (auto& t : threads) t.join();
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
        if (devices.empty()) {
            slots_.push_back(make_cpu_slot());
            cpu_ = true;
            clock_.set_workers(Stage::compute, 1);
            return;
        }
        for (int d : devices)
            for (int s = 0; s < o_.streams_per_device; ++s) slots_.push_back(make_cuda_slot(d));
        devices_ = int(devices.size());
        // Each slot's share of time in each stage (the events time a stage from when it is queued on the
        // slot's stream, so a copy waiting for the copy engine counts as upload): the stage where images
        // spend their time is the one that limits.
        for (Stage s : {Stage::upload, Stage::compute, Stage::download}) clock_.set_workers(s, int(slots_.size()));
    }

    std::string describe_workers(int io) const {
        return describe_compute(devices_, o_.streams_per_device) + ", " + std::to_string(io) + " I/O threads";
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
            decoded_.close();
            filtered_.close();
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
            } else if (feed_done_ && filtered_.closed()) {
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
        if (--reading_ == 0 && feed_done_) decoded_.close();
    }

    void read_one() {
        const std::optional<std::size_t> index = next();
        if (!index) {
            feed_done_ = true;
            return end_read(false);
        }
        const BatchItem& item = items_.at(*index);
        if (manifest_ && o_.resume) {
            const std::string name = relative_output(item.output, o_.output_dir);
            if (manifest_->done(name)) {
                manifest_->keep(name);
                {
                    std::lock_guard<std::mutex> lock(mutex_);
                    ++report_.skipped;
                }
                progress_->advance(0);
                return end_read(false);
            }
        }
        Work w{*index, {}, {}};
        try {
            StageTimer t(clock_, Stage::read);
            if (o_.source) {
                w.view = o_.source(*index);
            } else {
                ReadOptions ro = o_.read;
                if (!cpu_) ro.memory = HostMemory::pinned;
                w.image = read_image(item.input, ro);
                w.view = w.image.view();
            }
            check_against_job(item, o_, w.view.shape);
        } catch (const std::exception& e) {  // apron::Error or bad_alloc: this image only
            failed(*index, e.what());
            return end_read(false);
        }
        decoded_.push(std::move(w));  // never waits: the room was taken before reading
        end_read(true);
    }

    void compute_loop(ComputeSlot& slot) {
        RunOptions ro = o_.run;
        ro.cuda_stream = nullptr;
        ro.timings = nullptr;
        while (true) {
            std::optional<Work> w;
            {
                StageTimer t(clock_, Stage::idle);
                w = decoded_.pop();
            }
            if (!w) return;
            give_read_room();
            Work out{w->index, {}, {}};
            try {
                const ImageShape shape = o_.pipeline.output_shape(w->view.shape, ro);
                out.image = Image(shape, cpu_ ? HostMemory::pageable : HostMemory::pinned);
                slot.run(o_.pipeline, ro, w->view, out.image.view(), clock_);
                std::lock_guard<std::mutex> lock(mutex_);
                report_.bytes_in += w->view.shape.row_bytes() * std::size_t(w->view.height());
            } catch (const std::exception& e) {
                failed(w->index, e.what());
                continue;
            }
            w.reset();  // the decoded image's memory goes back before this slot may wait on a full queue
            if (!filtered_.push(std::move(out))) return;
        }
    }

    void write_one(Work& w) {
        const BatchItem& item = items_[w.index];
        try {
            StageTimer t(clock_, Stage::write);
            const ImageView full = w.image.view();
            const ImageView kept = full.roi(item.pad_x, item.pad_y, full.width() - 2 * item.pad_x,
                                            full.height() - 2 * item.pad_y);
            const std::uint64_t bytes = kept.shape.row_bytes() * std::uint64_t(kept.height());
            if (o_.sink) {
                o_.sink(w.index, kept);
            } else {
                const std::vector<std::uint8_t> file = encode_image(format_for_path(item.output), kept, item.output, o_.write);
                write_file_atomically(item.output, file);
                if (manifest_)
                    manifest_->record({relative_output(item.output, o_.output_dir), file.size(), crc32_of(file), item.input});
            }
            std::lock_guard<std::mutex> lock(mutex_);
            ++report_.done;
            report_.pixels += std::uint64_t(full.width()) * std::uint64_t(full.height());
            report_.bytes_out += bytes;
        } catch (const std::exception& e) {
            failed(w.index, e.what());
            return;
        }
        progress_->advance(std::uint64_t(w.image.width()) * std::uint64_t(w.image.height()));
    }

    const std::vector<BatchItem>& items_;
    const BatchOptions& o_;
    std::vector<std::unique_ptr<ComputeSlot>> slots_;
    bool cpu_ = false;
    int devices_ = 0;
    Channel<Work> decoded_, filtered_;
    std::mutex room_mutex_;
    int read_room_ = 0, reading_ = 0;  // under room_mutex_
    std::atomic<bool> feed_done_ = false;
    std::unique_ptr<Manifest> manifest_;
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
    return describe_compute(int(batch_devices(options).size()), options.streams_per_device);
}

BatchReport run_batch(const std::vector<BatchItem>& items, const BatchOptions& options) {
    return Engine(items, options).run();
}

} // namespace apron
