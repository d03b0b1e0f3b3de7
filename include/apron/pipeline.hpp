#pragma once
// Pipelines: operations run in order on one image, intermediates kept in memory.
//
//   apron::Pipeline p({"gaussian:sigma=2", "sobel:dx=1"});
//   apron::Image out = p.run(apron::read_image("in.png"), {.out_type = apron::PixelType::f32});
//
// Device pipelines (CUDA backend): views in Memory::device stay on the device, and the work is ordered on
// the caller's stream when RunOptions::cuda_stream is set:
//
//   p.run(ImageView{d_in, shape, pitch, Memory::device}, ImageView{d_out, shape, pitch, Memory::device},
//         {.backend = apron::Backend::cuda, .cuda_stream = stream});   // returns before the work is done
//
// Host images in pinned memory (apron::Image(shape, HostMemory::pinned)) go up and down in row bands that
// overlap with the kernels, so one large image runs near the PCIe rate.
//
// Types: the first operation reads the input's type; every operation writes the output type
// (RunOptions::out_type, default the input's type), and later operations read that type.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apron/image.hpp"
#include "apron/ops.hpp"

namespace apron {

enum class Backend : unsigned char { automatic, cpu, reference, cuda };
const char* to_string(Backend b);
std::optional<Backend> parse_backend(std::string_view name);

// How linear steps are computed. automatic: the planner's choice, the candidate with the least predicted
// time (the cost model of the backend's calibration table). The others force that path on every linear
// step, and planning fails naming --algo where a step cannot take it:
//   direct     the mask's taps per output (any mask)
//   separable  a row pass and a column pass (rank-1 masks)
//   low-rank   r separable passes added (masks of rank r <= 8 within SPEC.md's tolerance; float plans)
//   fft        overlap-save tiles through the FFT (FFTW on the CPU, cuFFT on CUDA)
//   tensor     matrix products on the tensor cores (CUDA; u8 images, integer weights in -128..127, <= 31x31)
enum class Algorithm : unsigned char { automatic, direct, separable, low_rank, fft, tensor };
const char* to_string(Algorithm a);
std::optional<Algorithm> parse_algorithm(std::string_view name);

struct StageTiming {
    std::string stage;
    double milliseconds = 0;
};

constexpr int max_threads = 1024;

struct RunOptions {
    Backend backend = Backend::automatic;
    int threads = 0;                      // CPU threads; 0 = all cores, at most max_threads
    std::optional<PixelType> out_type;    // default: the input's type
    // When set, one entry per step is appended (one for two steps the executor runs in one pass, named
    // "[first + second]": a morphology step and the combine that alone reads it).
    std::vector<StageTiming>* timings = nullptr;
    // CUDA backend: the caller's cudaStream_t. Every copy and kernel is ordered on it; a run whose output
    // is in device memory returns without waiting. nullptr: apron's own stream, which waits for the legacy
    // default stream (so a plain cudaMemcpy before run() is seen), and run() waits.
    void* cuda_stream = nullptr;
    // CUDA backend: the device to run on, made current for the run and the caller's restored after (the
    // stream and any device views must be on it). -1: the current device.
    int cuda_device = -1;
    Algorithm algorithm = Algorithm::automatic;  // --algo
    // Host memory the run may take (input, intermediates, output, mask and element tables), checked before
    // anything is allocated. 0: default_memory_budget() (apron/memory.hpp).
    std::uint64_t memory_budget = 0;
    // Called before each step of the run, with the steps done and the steps in all: a progress line
    // (`apron filter` after a few seconds), or a check for a signal (the Python package raises
    // KeyboardInterrupt). It may throw to stop the run; the exception leaves run() as it is. Pipeline::run
    // calls it on the calling thread; a streamed run (stream.hpp) on the threads filtering its bands, for
    // each band's steps.
    std::function<void(std::size_t steps_done, std::size_t steps)> between_steps;
};

class PreparedPipeline;

class Pipeline {
public:
    Pipeline();
    explicit Pipeline(const std::vector<std::string>& specs);
    void add(std::string_view spec) { add(parse_operation(spec)); }
    // Equal masks and elements of different steps share one table (ten `box:width=4097` hold one).
    void add(OpProgram op);
    const std::vector<OpProgram>& operations() const { return ops_; }
    bool empty() const { return ops_.empty(); }

    // The pipeline planned once for images of `input`'s shape under these options: every choice made, the
    // kernels bound, and nothing left to do but run it (as OpenCV's create...Filter then apply). run() and the
    // streaming engine run such an object; run() keeps the last few it made, so a warm call of the same shape
    // and options plans nothing.
    PreparedPipeline prepare(const ImageShape& input, const RunOptions& options = {}) const;

    Image run(ConstImageView input, const RunOptions& options = {}) const;
    // Into the caller's image (its shape must be the result's: describe() or output_shape() tell it).
    // Input and output may each be in host or device memory (device memory needs the CUDA backend);
    // they must not overlap.
    void run(ConstImageView input, ImageView output, const RunOptions& options = {}) const;
    ImageShape output_shape(const ImageShape& input, const RunOptions& options = {}) const;
    // Host memory run() takes on an image of this shape, estimated from the plan before anything is
    // allocated: intermediates alive at once, the result when run() makes it (`result_allocated`), mask and
    // element tables, executor scratch. run() fails naming it when it exceeds RunOptions::memory_budget.
    std::uint64_t memory_needed(const ImageShape& input, const RunOptions& options = {},
                                bool result_allocated = true) const;
    // What run() would do on an image of this shape: one line per step with its algorithm; with
    // `candidates`, every path a linear step could take and its predicted time (`apron plan`).
    std::string describe(const ImageShape& input, const RunOptions& options = {}, bool candidates = false) const;

private:
    PreparedPipeline prepared(const ImageShape& input, const RunOptions& options) const;  // from the cache
    struct Cache;
    std::vector<OpProgram> ops_;
    std::shared_ptr<Cache> cache_;  // the last prepared pipelines (shared by copies until one adds a step)
};

// Rows a prepared pipeline reads above and below an output row (each step's added), and whether a step
// wraps around the image (a band then reads rows from the other end).
struct RowReach {
    int above = 0, below = 0;
    bool wraps = false;
};

// A pipeline planned for one input shape and one set of run options (Pipeline::prepare). Cheap to copy (the
// plan is shared) and safe to run from several threads at once.
class PreparedPipeline {
public:
    const ImageShape& input() const;
    const ImageShape& output() const;
    // Runs the plan on an image of the prepared shape. `options` are the call's: its cuda_stream, timings,
    // between_steps and memory_budget apply; its backend, out_type, algorithm, threads and cuda_device must be
    // the prepared ones (an error names the one that differs).
    void run(ConstImageView input, ImageView output, const RunOptions& options) const;
    void run(ConstImageView input, ImageView output) const;  // with the prepared options
    Image run(ConstImageView input, const RunOptions& options) const;
    Image run(ConstImageView input) const;
    // Host memory a run takes on `rows` rows of the image (a band of it; 0: the whole image), as
    // Pipeline::memory_needed says.
    std::uint64_t memory(int rows = 0, bool result_allocated = true) const;
    RowReach reach() const;
    std::string describe(bool candidates = false) const;

    struct State;
    explicit PreparedPipeline(std::shared_ptr<const State> state) : state_(std::move(state)) {}
    const State& state() const { return *state_; }

private:
    std::shared_ptr<const State> state_;
};

// Backends usable in this build and on this machine, e.g. {"cpu", "reference"}.
std::vector<std::string> available_backends();

} // namespace apron
