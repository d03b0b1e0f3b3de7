#pragma once
// The planner's output: for every step of every operation, the algorithm and the precomputed data a
// backend needs (integer weights, separable factors, finish constants). Backends only execute plans.
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "apron/image.hpp"
#include "apron/mask.hpp"
#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "core/linear_finish.hpp"

namespace apron {

// How a linear step is computed. `tensor`: direct correlation as matrix products on the tensor cores
// (CUDA, exact u8 plans with byte weights); `fft`: overlap-save tiles through FFTW (CPU) or cuFFT (CUDA).
// Low-rank masks are not an algorithm of one step: the planner expands them into separable steps.
enum class LinearAlgorithm : unsigned char { direct, separable, fft, tensor };
enum class Accumulator : unsigned char { f32, f64 };

// The kernel that runs a step, chosen by the planner through the backend's capabilities (backend_caps.hpp)
// and printed by `apron plan` / `--plan`: family "cuda.direct_regs", detail "rx=8". Executors dispatch on
// the family (the CUDA executor: cuda/dispatch_table.hpp); empty before planning.
struct KernelChoice {
    std::string family;  // "<backend>.<family>": "reference.direct", "cpu.separable", "cuda.morph_rect", ...
    std::string detail;  // launch shape or tuning value that tells kernels of one family apart; may be empty
    // The launcher bound when the plan was made: the backend's own index of it (CUDA: its LinearFamily or
    // MorphFamily), which the executor calls without reading the names. -1: none bound (a plan made for
    // another backend, or by hand), and the executor asks its table.
    Backend bound_backend = Backend::automatic;
    int launcher = -1;
    std::string name() const { return detail.empty() ? family : family + ' ' + detail; }
};

// The FFT path's overlap-save grid (algorithm == fft). The planner fixes it for the whole image, so that a
// band of the image (apron/stream.hpp) runs the whole image's tiles on the same samples and every float
// rounding is the one-pass run's (SPEC.md: identical bits whatever the tiling):
//   - image_height: the image's rows;
//   - tile_rows: the transform's rows on the backend that runs it, which bounds the rows a band's outputs
//     read through their tiles (the band's halo);
//   - band, first_row: set by the band engine for each band: the input is a band of the image whose row 0
//     is image row first_row (under `wrap`, rows continue modulo image_height). Otherwise the input is the
//     whole image, whatever its height.
struct FftGrid {
    int image_height = 0, tile_rows = 0;
    bool band = false;
    int first_row = 0;
};

struct LinearPlan {
    LinearStep step;            // mask already in correlation form (anchor set)
    PixelType in = PixelType::u8, out = PixelType::u8;
    LinearAlgorithm algorithm = LinearAlgorithm::direct;
    // exact: integer image and weights that are integers over one divisor. The sum is an integer, and
    // it is computed exactly in `accumulator` (f32 when every partial sum stays below 2^24, else f64).
    bool exact = false;
    Accumulator accumulator = Accumulator::f32;
    IntegerMask integer_mask;                     // exact: weights as integers
    std::optional<IntegerSeparableMask> integer_separable;  // exact + separable
    std::optional<SeparableMask> separable;       // float + separable
    LinearFinish finish;
    FftGrid fft;  // algorithm == fft
    KernelChoice kernel;
};

// `chords`: the element as horizontal runs of set cells (plan/morph_decompose.hpp), each the extremum of two
// power-of-two run tables (Urbach-Wilkinson).
enum class MorphAlgorithm : unsigned char { direct, separable_rect, chords };

// A run of `length` set cells in element row j from column i: dy = j - anchor_y, dx = i - anchor_x.
struct MorphChord {
    int dy = 0, dx = 0, length = 1;
    friend bool operator==(const MorphChord&, const MorphChord&) = default;
};

struct MorphPlan {
    MorphStep step;
    PixelType type = PixelType::u8;  // input and output
    MorphAlgorithm algorithm = MorphAlgorithm::direct;
    std::vector<MorphChord> chords;  // algorithm == chords: the element's runs, sorted by dy
    KernelChoice kernel;
};

// How a rank step is computed, chosen by the planner from the window and the type (plan/kinds/rank_kind.cpp):
// `network`: the window's samples in registers, selected by compare-exchange (small windows); `histogram`:
// sliding histograms of the element's runs (u8, u16: constant time per pixel in the window's size);
// `select`: the samples gathered and selected (f32 beyond the network's size). Every one gives the same
// value (SPEC: the rank-th sample), so a backend may run another where it has no kernel for the planned one.
enum class RankAlgorithm : unsigned char { network, histogram, select };

struct RankPlan {
    RankStep step;
    PixelType type = PixelType::u8;  // input and output
    RankAlgorithm algorithm = RankAlgorithm::select;
    int count = 0;                   // n: the element's set cells
    std::vector<MorphChord> chords;  // the element's runs, row by row (as morphology's), for histogram kernels
    KernelChoice kernel;
};

struct CombinePlan {
    CombineStep step;
    PixelType a_type = PixelType::u8, b_type = PixelType::u8, out = PixelType::u8;
    KernelChoice kernel;
};

// A path the planner considered for a linear step: its predicted time (NaN where the cost table has no
// measurement for it) or why it cannot run the step.
struct PathEstimate {
    Algorithm path = Algorithm::direct;
    double seconds = 0;
    std::string unavailable;  // empty: the path can run the step
    bool chosen = false;
};

struct StepPlan {
    std::variant<LinearPlan, MorphPlan, CombinePlan, RankPlan> what;
    int input = op_input, second = no_operand;
    ImageShape out_shape;  // the whole result (a volume's every plane)
    std::string label;  // for --timing and `apron plan`
    std::vector<PathEstimate> estimates;  // linear steps: every path considered (`apron plan`)
    Axes axes = Axes::plane;  // on a volume: run on each plane, or along z (the program step's; apron/ops.hpp)
};

struct OperationPlan {
    std::string spec;
    std::vector<StepPlan> steps;
};

struct ExecutionPlan {
    Backend backend = Backend::cpu;
    ImageShape input, output;  // depth > 1: a volume (steps run per plane or along z, StepPlan::axes)
    std::vector<OperationPlan> operations;
    std::string cost_source;  // the calibration table the estimates come from ("" when none)
    std::string overrides;    // environment overrides that changed the backend's choices ("" when none)
    std::string describe(bool estimates = false) const;  // one line per step (and its candidates)
};

class BackendCaps;

// Chooses algorithms, and the kernel of every step, for a pipeline on an image of `input` shape, producing
// `out_type`, on the backend whose capabilities are `caps` (backend_caps.hpp). `algorithm` forces one path
// on every linear step (fails naming --algo where a step cannot take it).
ExecutionPlan make_plan(const std::vector<OpProgram>& pipeline, const ImageShape& input, PixelType out_type,
                        const BackendCaps& caps, Algorithm algorithm = Algorithm::automatic);
// Plans made by this process so far (make_plan calls): a test checks that a run plans once.
std::uint64_t plans_made();

// The same for a backend by name. Defined above the planner, in src/run/backends.cpp, where the backends'
// capabilities are known (the planner itself never calls into a backend).
ExecutionPlan make_plan(const std::vector<OpProgram>& pipeline, const ImageShape& input, PixelType out_type,
                        Backend backend, Algorithm algorithm = Algorithm::automatic);

// Whether the CUDA backend's FFT path can compute this plan on an image of this shape (cuFFT; exact plans
// only while the double transform's error bound keeps the rounded sum exact). False without CUDA. Defined
// by the CUDA backend (fft_tiling.cpp); the planner asks through the CUDA backend's BackendCaps.
bool cuda_fft_supports(const LinearPlan& plan, const ImageShape& shape);

// An image in whatever memory an executor works in (host or device), freed with its last owner.
struct Buffer {
    ImageView view;
    std::shared_ptr<void> storage;
    ConstImageView cview() const { return as_const(view); }
};

// The interface every backend implements. Views are in the executor's memory(); in and out never alias.
// Work may be asynchronous (a CUDA stream): synchronize() waits for it, download() returns finished pixels.
class Executor {
public:
    virtual ~Executor() = default;
    virtual void linear(const LinearPlan& plan, ConstImageView in, ImageView out) = 0;
    virtual void morph(const MorphPlan& plan, ConstImageView in, ImageView out) = 0;
    virtual void combine(const CombinePlan& plan, ConstImageView a, ConstImageView b, ImageView out) = 0;
    virtual void rank(const RankPlan& plan, ConstImageView in, ImageView out) = 0;

    virtual Memory memory() const { return Memory::host; }
    virtual Buffer allocate(const ImageShape& shape);
    virtual void upload(ConstImageView host, ImageView mine);  // host: a copy
    virtual void download(ConstImageView mine, ImageView host);
    virtual void synchronize() {}

    // Host to host through one linear step with the copies overlapped with compute (row bands on several
    // streams). False when this executor cannot for this step or these host buffers; the runner then
    // uploads, runs and downloads in turn.
    virtual bool linear_overlapped(const LinearPlan& plan, ConstImageView host_in, ImageView host_out) {
        (void)plan, (void)host_in, (void)host_out;
        return false;
    }

    // Whether a plane step (Axes::plane) on a volume of this shape runs in one call on the whole volume,
    // each plane filtered alone as if it ran on its own (a batch of planes in one launch). False: the
    // runner calls the step once per plane.
    virtual bool runs_planes(const StepPlan& step, const ImageShape& volume) const {
        (void)step, (void)volume;
        return false;
    }

    // A volume's plane step (Axes::plane) and the linear step along z that alone reads its result, in one
    // pass: out = along_z(plane(in)), the float sums of the two steps in their order, with no image of the
    // intermediate written. False (nothing done) when this executor cannot for these plans; the runner then
    // runs the two steps in turn.
    virtual bool linear_volume(const LinearPlan& plane, const LinearPlan& along_z, ConstImageView in, ImageView out) {
        (void)plane, (void)along_z, (void)in, (void)out;
        return false;
    }
    // Whether linear_volume would run these plans on a volume of this shape (asked before its output is made).
    virtual bool fuses_linear_volume(const LinearPlan& plane, const LinearPlan& along_z, const ImageShape& volume) const {
        (void)plane, (void)along_z, (void)volume;
        return false;
    }

    // A morphology step and the combine step that is its result's only reader, in one pass: out = the
    // combine of morph(in) and `other` (morph(in) is the combine's A when `result_is_a`, else its B), with the
    // very bits of the two steps run apart, and no image of morph(in) written. False (nothing done) when
    // this executor cannot for these plans; the runner then runs the two steps in turn. (gradient, top-hat
    // and black-hat end this way.)
    virtual bool morph_combine(const MorphPlan& morph, const CombinePlan& combine, ConstImageView in, ConstImageView other,
                               bool result_is_a, ImageView out) {
        (void)morph, (void)combine, (void)in, (void)other, (void)result_is_a, (void)out;
        return false;
    }
};

// The backends' entry points: declared here with the interface they implement, defined by each backend
// (src/cpu/, src/cuda/; src/run/no_cuda.cpp without the CUDA toolkit) and called from src/run/.
std::unique_ptr<Executor> make_reference_executor();
std::unique_ptr<Executor> make_cpu_executor(int threads);  // threads <= 0: all cores
// nullptr when this build has no CUDA backend; throws apron::Error when it has one but no device.
// stream: the caller's cudaStream_t, or nullptr for a stream of the executor's own.
std::unique_ptr<Executor> make_cuda_executor(void* stream = nullptr);
// Makes CUDA device `device` current until the returned guard is released, then restores the caller's;
// nothing when device < 0 or in a build without CUDA. Throws apron::Error for a device that does not exist.
std::shared_ptr<void> use_cuda_device(int device);
// Page-locked host memory from the CUDA backend (nullptr without a device); the run layer installs these as
// the core's hooks (core/host_memory.hpp). Freed blocks are kept for the next request of their size (a batch's
// images are mostly of one size): a caller that counts its memory against a budget (the band engine) releases
// them for real.
void* cuda_allocate_pinned(std::size_t bytes);
void cuda_free_pinned(void* p);
void release_kept_pinned();
std::size_t kept_pinned_bytes();  // bytes of freed pinned blocks kept now
// Whether p points into page-locked host memory the CUDA backend can copy from asynchronously.
bool is_pinned(const void* p);
// Whether make_cuda_executor() would find a device (auto picks CUDA then).
bool cuda_available();
// The current CUDA device's compute capability x 10 (picks its calibration table); 0 without one.
int cuda_device_arch();
// The current CUDA device's name ("NVIDIA H200"), which picks its calibration table; "" without one.
std::string cuda_device_name();

} // namespace apron
