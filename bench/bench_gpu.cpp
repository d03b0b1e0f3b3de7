// GPU benchmark of the CUDA backend: kernel-only throughput per operation, type, mask size and image size
// (CUDA events on a stream of the benchmark's own, handed to the executor; warm-up, median of repetitions;
// the image is device-resident and larger than L2 at the default size), and host-to-host time of one pinned
// image through a 5x5 filter (copies overlapped with compute). Prints a table and writes CSV in the schema
// bench/report.py merges with the peers' (bench/peers/):
//   impl,op,type,param,size,ms,mpix_s,algorithm,roofline_pct,fma_peak,channels,shape,gpix_s,gsamples_s,
//   roofline_gpix_s,kernel,check
// algorithm: the plan's step label (a low-rank plan: "low-rank, N steps: " and every step's label).
// roofline_pct: the row's throughput as a share of its roofline, pixels/s. Kernel-only rows: the direct
// algorithm's FP32 roofline, channel-scaled: min(bandwidth / (2 C bytes per sample), fma_peak / (taps C))
// with taps = k^2 for the correlate cases whatever path ran (an FFT or tensor row can exceed 100%),
// memory-bound ops bandwidth only; host-to-host rows: pinned PCIe with both directions at once.
// fma_peak: the FP32 FMA ceiling, FMA/s (the same on every row; bench/report.py's large-mask targets).
// channels: interleaved channels C; shape: the user case's mask, sigma or element ("3x3", "sigma=2",
// "disk:7", "random:15x15"; bench/user_cases.hpp), empty on the single-channel cases above; gpix_s and
// gsamples_s: pixels and samples (pixels x C) per second, 1e9; roofline_gpix_s: the roofline in Gpix/s;
// kernel: what ExecutionPlan::describe() says of the steps (its step lines, '; '-joined); check: the
// output against the CPU backend on the top and bottom bands of rows before timing (bench/band_check.hpp):
// "ok (...)" or "MISMATCH (...)"; host-to-host rows are not checked.
// Rooflines use ceilings measured in the same process on the same GPU: device-to-device copy bandwidth
// (bytes read + written), pinned PCIe with both directions at once, and the FP32 FMA peak from the SM
// count and clock (128 lanes per SM on sm_80+).
//
//   bench_gpu [--sizes 8192,...] [--sweep] [--book] [--large] [--reps N] [--csv FILE] [--op NAME]
//             [--type u8|u16|f32] [--k N] [--channels C] [--shape S] [--cases classic,user,rank] [--full]
// --sweep adds sizes 512 to 16384 for a subset of cases; --book the book chapter's cases (u8 images 512 to
// 4096, masks 3x3 to 7x7, kernel only and host to host; bench/book_chapter_c2070.md); --op/--type/--k
// restrict the cases (profiling; --op takes the name without '@'; --channels and --shape the user cases', e.g.
// --shape disk:7).
// --cases: which case sets run (default all three): classic, the single-channel cases of the sizes above;
// user, the shapes users run (bench/user_cases.hpp: 1, 3 and 4 channels, u8/u16/f32, correlate, gaussian,
// box, sharpen, and dilate/erode with rect, ellipse, cross, disk and random elements); rank, the rank filters
// (bench/rank_cases.hpp: median over rect 3x3 to 31x31 and disk:15 on u8 gray and RGB, 3x3 on u16 and f32;
// memory-bound roofline; peers NPP nppiFilterMedian on the interior ROI and CuPy median_filter). --full: the
// user cases' full sweep (every type for every family, erode on every element, elements up to 63x63).
// --large: masks of any size instead of the default cases (issue "masks of any size"): random non-separable
// k x k masks, correlate f32 and correlate_int u8 (integer weights, exact) at k = 3..127, and correlate_rank2
// f32 (a sum of two random outer products) at k = 15, 31, 63, 127. Each case is timed with the planner's
// choice (op as is, algorithm = the chosen step label) and with every path forced (RunOptions::algorithm,
// op named OP@PATH: correlate@fft, correlate_int@tensor, correlate_rank2@low-rank); a path that cannot run
// the case (the planner's --algo error) is skipped. Slow cases take fewer repetitions: max(3, 2 s / one run).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <random>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "apron/errors.hpp"
#include "apron/pipeline.hpp"
#include "band_check.hpp"
#include "plan/plan.hpp"
#include "rank_cases.hpp"
#include "user_cases.hpp"

using namespace apron;

namespace {

struct Ceilings {
    double bandwidth = 0;  // device copy, bytes read + written per second
    double fma_peak = 0;   // FP32 FMA per second
    double h2d = 0, d2h = 0, duplex = 0;  // pinned PCIe bytes/s; duplex: each way while both run
};
Ceilings ceil_;

struct Case {
    std::string op;     // correlate, correlate_int, correlate_rank2, gaussian, dilate, erode, h2h_correlate
    PixelType type;
    double param;       // mask size k (k x k) or sigma
    OpProgram program;  // the apron operation
    double taps;        // multiply-adds per pixel of the direct algorithm, 0: memory-bound algorithm
    Algorithm algorithm = Algorithm::automatic;  // forced path (--large), automatic: the planner's choice
    int channels = 1;
    std::string shape;  // the user cases' ("3x3", "disk:7"); empty for the classic cases
    std::optional<PixelType> out = {};  // the output type, if not the input's

    // The CSV's op: forced paths carry theirs, "correlate@fft".
    std::string name() const {
        return algorithm == Algorithm::automatic ? op : op + "@" + to_string(algorithm);
    }
};

struct Result {
    Case c;
    int size;
    double ms, mpix_s, roofline_pct, roofline_pix_s;
    std::string algorithm, kernel, check;
    double predicted_ms = -1;  // the planner's predicted time of the chosen paths (-1: no estimate)
};

// The planner's prediction for a plan: its linear steps' chosen estimates added (-1 where a step has none:
// morphology and combines are not in the cost model).
double predicted_ms(const ExecutionPlan& plan) {
    double ms = 0;
    bool any = false;
    for (const StepPlan& s : plan.operations.at(0).steps)
        for (const PathEstimate& e : s.estimates)
            if (e.chosen && e.seconds == e.seconds) ms += e.seconds * 1e3, any = true;
    return any ? ms : -1;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// A random non-separable k x k mask (the general direct path), border replicate as NPP's. Integer masks
// as NPP's too: weights -3..3 over 8 (an exact plan on integer images).
OpProgram random_correlation(int k, bool integer) {
    std::mt19937 rng{unsigned(k)};
    std::vector<double> w(std::size_t(k) * k);
    // Float weights: not integers over any small divisor, so u8 images take the float path too.
    std::uniform_real_distribution<double> real(-1, 1);
    for (double& v : w) v = integer ? int(rng() % 7) - 3 : real(rng) / k;
    LinearStep step{Mask(k, k, w), BorderMode::nearest};
    if (integer) step.scale = 0.125;
    return OpProgram{"correlate " + std::to_string(k) + "x" + std::to_string(k), {Step{step}}};
}

// A random k x k mask of rank 2 (the sum of two random outer products, float weights), border replicate:
// the low-rank path's case.
OpProgram random_rank2_correlation(int k) {
    std::mt19937 rng{unsigned(1000 + k)};
    std::uniform_real_distribution<double> real(-1, 1);
    const std::size_t n = std::size_t(k);
    std::vector<double> a1(n), b1(n), a2(n), b2(n);
    for (auto* v : {&a1, &b1, &a2, &b2})
        for (double& x : *v) x = real(rng);
    std::vector<double> w(n * n);
    for (std::size_t j = 0; j < n; ++j)
        for (std::size_t i = 0; i < n; ++i) w[j * n + i] = (a1[j] * b1[i] + a2[j] * b2[i]) / k;
    LinearStep step{Mask(k, k, w), BorderMode::nearest};
    return OpProgram{"correlate " + std::to_string(k) + "x" + std::to_string(k) + " rank 2", {Step{step}}};
}

// --large: every mask size, each case with the planner's choice and then every path forced.
std::vector<Case> large_cases() {
    std::vector<Case> out;
    auto add = [&](const std::string& op, PixelType t, int k, const OpProgram& program,
                   std::initializer_list<Algorithm> forced) {
        out.push_back({op, t, double(k), program, double(k) * k});
        for (Algorithm a : forced) out.push_back({op, t, double(k), program, double(k) * k, a});
    };
    const std::vector<int> ks = {3, 5, 7, 9, 11, 13, 15, 17, 21, 25, 31, 41, 51, 63, 85, 127};
    for (int k : ks)
        add("correlate", PixelType::f32, k, random_correlation(k, false),
            {Algorithm::direct, Algorithm::fft, Algorithm::tensor});
    for (int k : ks)
        add("correlate_int", PixelType::u8, k, random_correlation(k, true),
            {Algorithm::direct, Algorithm::fft, Algorithm::tensor});
    for (int k : {15, 31, 63, 127})
        add("correlate_rank2", PixelType::f32, k, random_rank2_correlation(k),
            {Algorithm::direct, Algorithm::low_rank, Algorithm::fft});
    return out;
}

// The user cases (bench/user_cases.hpp) as bench cases.
std::vector<Case> user_bench_cases(bool full) {
    std::vector<Case> out;
    for (const bench::UserCase& u : bench::user_cases(full))
        out.push_back({u.op, u.type, u.param, u.program, u.taps, Algorithm::automatic, u.channels, u.shape, u.out});
    return out;
}

// The rank-filter cases (bench/rank_cases.hpp) as bench cases: bound by memory (taps 0), their roofline the
// device copy's.
std::vector<Case> rank_bench_cases() {
    std::vector<Case> out;
    for (const bench::RankCase& r : bench::rank_cases())
        out.push_back({r.op, r.type, double(r.param), r.program, 0, Algorithm::automatic, r.channels, r.shape});
    return out;
}

// What ExecutionPlan::describe() says of the steps: its lines after the header, op specs left out, '; '-joined.
std::string describe_steps(const ExecutionPlan& plan) {
    std::istringstream in(plan.describe());
    std::string line, out;
    std::getline(in, line);  // "backend cuda, input ..."
    while (std::getline(in, line)) {
        if (line.empty() || line[0] != ' ') continue;
        line.erase(0, line.find_first_not_of(' '));
        out += (out.empty() ? "" : "; ") + line;
    }
    return out;
}

// What the plan does: its one step's label, or a low-rank plan's steps ("low-rank, 3 steps: ...; ...").
std::string plan_label(const OperationPlan& op) {
    if (op.steps.size() == 1) return op.steps[0].label;
    std::string s = "low-rank, " + std::to_string(op.steps.size()) + " steps: ";
    for (std::size_t k = 0; k < op.steps.size(); ++k) s += (k ? "; " : "") + op.steps[k].label;
    return s;
}

std::vector<Case> cases(bool sweep_subset) {
    std::vector<Case> out;
    const std::vector<int> direct_ks = sweep_subset ? std::vector<int>{3, 5, 9, 17, 31}
                                                    : std::vector<int>{3, 5, 7, 9, 11, 13, 15, 17, 21, 25, 31};
    for (PixelType t : {PixelType::f32, PixelType::u8})
        for (int k : direct_ks) out.push_back({"correlate", t, double(k), random_correlation(k, false), double(k) * k});
    if (!sweep_subset)
        for (int k : direct_ks)
            out.push_back({"correlate_int", PixelType::u8, double(k), random_correlation(k, true), double(k) * k});
    for (PixelType t : {PixelType::f32, PixelType::u8})
        for (double s : sweep_subset ? std::vector<double>{2} : std::vector<double>{1, 2, 3, 4, 8}) {
            char spec[64];
            std::snprintf(spec, sizeof spec, "gaussian:sigma=%g", s);
            out.push_back({"gaussian", t, s, parse_operation(spec), 0});
        }
    for (const char* op : {"dilate", "erode"}) {
        if (sweep_subset && std::string(op) == "erode") continue;
        for (int k : sweep_subset ? std::vector<int>{5} : std::vector<int>{3, 5, 7, 9, 15, 21, 31}) {
            const std::string se = std::to_string(k) + "x" + std::to_string(k);
            out.push_back({op, PixelType::u8, double(k), parse_operation(std::string(op) + ":se=rect:" + se), 0});
        }
    }
    return out;
}

// Random samples: f32 integers 0..255, integer types every bit random (four bytes per draw: a 1 GiB image
// in about a second).
void fill_random(Image& img, unsigned seed) {
    std::mt19937 rng(seed);
    const std::size_t samples = std::size_t(img.width()) * img.channels();
    for (int y = 0; y < img.height(); ++y) {
        if (img.type() == PixelType::f32) {
            for (std::size_t x = 0; x < samples; ++x) img.row<float>(y)[x] = float(rng() % 256);
            continue;
        }
        auto* b = reinterpret_cast<unsigned char*>(img.row<std::uint8_t>(y));
        const std::size_t n = img.shape().row_bytes();
        for (std::size_t i = 0; i < n; i += 4) {
            const std::uint32_t r = rng();
            std::memcpy(b + i, &r, std::min<std::size_t>(4, n - i));
        }
    }
}

class Bench {
public:
    Bench(int reps) : reps_(reps) {
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
        cudaEventCreate(&a_);
        cudaEventCreate(&b_);
        cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming);
        ex_ = make_cuda_executor(stream_);
    }
    ~Bench() {
        inputs_.clear();  // freed on the stream, before it goes
        ex_.reset();
        cudaEventDestroy(a_);
        cudaEventDestroy(b_);
        cudaEventDestroy(fork_);
        cudaStreamDestroy(stream_);
    }

    // Kernel only: the executor's calls on device-resident buffers, timed by events on its stream. Every
    // step of the plan runs (a low-rank plan: its separable passes and the additions), intermediates
    // allocated once beforehand.
    Result kernel_only(const Case& c, int size) {
        const ImageShape shape{size, size, c.channels, c.type};
        const PixelType out_type = c.out.value_or(c.type);
        const ExecutionPlan plan = make_plan({c.program}, shape, out_type, Backend::cuda, c.algorithm);
        if (plan.operations.size() != 1 || plan.operations[0].steps.empty())
            throw Error("bench_gpu: " + c.program.spec + " is not one operation");
        const std::vector<StepPlan>& steps = plan.operations[0].steps;
        const Input& input_pair = input(shape);
        const Buffer& in = input_pair.device;
        std::vector<Buffer> results;
        for (std::size_t k = 0; k < steps.size(); ++k)
            results.push_back(ex_->allocate(k + 1 == steps.size() ? plan.output : steps[k].out_shape));
        auto view_of = [&](int index) -> ConstImageView {
            if (index == no_operand) return {};
            return index == op_input ? in.cview() : results.at(std::size_t(index)).cview();
        };
        auto launch = [&] {
            for (std::size_t k = 0; k < steps.size(); ++k) {
                const StepPlan& step = steps[k];
                run_step_kind(*ex_, step, view_of(step.input), view_of(step.second), results[k].view);
            }
        };
        // Checked once, before timing: the whole output down, the CPU backend on its top and bottom bands.
        launch();
        ex_->synchronize();
        Image got(plan.output);
        ex_->download(results.back().cview(), got.view());
        ex_->synchronize();
        const bench::CheckResult check =
            bench::compare_bands(reference(c, input_pair.host, out_type), c.program, plan, got.view());
        const double ms = time_events(launch);
        // Channel-scaled roofline: C samples read and written per pixel, taps x C multiply-adds.
        const double bpp = double(bytes_per_sample(c.type) + bytes_per_sample(out_type)) * c.channels;
        double roof = ceil_.bandwidth / bpp;
        if (c.taps > 0) roof = std::min(roof, ceil_.fma_peak / (c.taps * c.channels));
        Result r = finish(c, size, ms, roof, plan_label(plan.operations[0]));
        r.kernel = describe_steps(plan);
        r.predicted_ms = predicted_ms(plan);
        r.check = check.text();
        return r;
    }

    // Host to host: a pinned image through the whole pipeline (upload, filter, download overlapped).
    Result host_to_host(const Case& c, int size) {
        const ImageShape shape{size, size, 1, c.type};
        Image host(shape, HostMemory::pinned), result(shape, HostMemory::pinned);
        fill_random(host, 7);
        Pipeline p;
        p.add(c.program);
        const RunOptions o{.backend = Backend::cuda, .cuda_stream = stream_};
        std::vector<double> t;
        for (int r = 0; r < reps_ + 2; ++r) {
            const auto start = std::chrono::steady_clock::now();
            p.run(host.view(), result.view(), o);
            cudaStreamSynchronize(stream_);
            if (r >= 2) t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        }
        const double bytes = double(shape.row_bytes()) * size;
        const double roof = double(size) * size / (bytes / ceil_.duplex);  // pixels/s when up and down overlap fully
        const std::string how = host.pinned() ? "pinned, overlapped bands" : "pageable (no pinned memory)";
        return finish(c, size, median(t), roof, how);
    }

    // The ceilings, measured here: 1 GiB device copies, 256 MiB pinned copies each way and both at once.
    Ceilings measure_ceilings() {
        Ceilings c;
        int dev = 0, sms = 0, khz = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
        c.fma_peak = double(sms) * 128 * khz * 1e3;
        const std::size_t big = std::size_t(1) << 30, pci = std::size_t(256) << 20;
        void *a = nullptr, *b = nullptr, *h1 = nullptr, *h2 = nullptr;
        cudaMalloc(&a, big);
        cudaMalloc(&b, big);
        cudaMallocHost(&h1, pci);
        cudaMallocHost(&h2, pci);
        cudaMemset(a, 1, big);
        std::memset(h1, 1, pci);
        cudaStream_t other = nullptr;
        cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
        c.bandwidth = 2.0 * big / (time_events([&] { cudaMemcpyAsync(b, a, big, cudaMemcpyDeviceToDevice, stream_); }) / 1e3);
        c.h2d = pci / (time_events([&] { cudaMemcpyAsync(a, h1, pci, cudaMemcpyHostToDevice, stream_); }) / 1e3);
        c.d2h = pci / (time_events([&] { cudaMemcpyAsync(h2, b, pci, cudaMemcpyDeviceToHost, stream_); }) / 1e3);
        const double both = time_events([&] {
            cudaEventRecord(fork_, stream_);
            cudaStreamWaitEvent(other, fork_);
            cudaMemcpyAsync(a, h1, pci, cudaMemcpyHostToDevice, stream_);
            cudaMemcpyAsync(h2, b, pci, cudaMemcpyDeviceToHost, other);
            cudaEventRecord(fork_, other);
            cudaStreamWaitEvent(stream_, fork_);
        });
        c.duplex = pci / (both / 1e3);
        cudaStreamDestroy(other);
        cudaFree(a);
        cudaFree(b);
        cudaFreeHost(h1);
        cudaFreeHost(h2);
        return c;
    }

private:
    struct Input {
        Image host;     // for the check
        Buffer device;  // timed
    };

    // The CPU backend's results on the check's bands, once per case (the forced paths of a case share them).
    const bench::ReferenceBands& reference(const Case& c, const Image& host, PixelType out) {
        std::ostringstream key;
        key << c.op << '|' << c.program.spec << '|' << host.width() << 'x' << host.height() << 'x' << host.channels()
            << to_string(host.type()) << '>' << to_string(out);
        if (references_.size() > 64) references_.clear();
        auto it = references_.find(key.str());
        if (it == references_.end())
            it = references_.emplace(key.str(), bench::reference_bands(c.program, host, out, Backend::cpu)).first;
        return it->second;
    }

    // The random input image of this shape on the device (and its host copy), made once (the last size's
    // images are kept).
    const Input& input(const ImageShape& shape) {
        if (!inputs_.empty() && std::get<0>(inputs_.begin()->first) != shape.width) inputs_.clear();
        const auto key = std::make_tuple(shape.width, shape.channels, int(shape.type));
        auto it = inputs_.find(key);
        if (it == inputs_.end()) {
            Input in{Image(shape), ex_->allocate(shape)};
            fill_random(in.host, unsigned(shape.width) + 7919u * unsigned(shape.channels));
            ex_->upload(apron::as_const(in.host.view()), in.device.view);
            ex_->synchronize();
            it = inputs_.emplace(key, std::move(in)).first;
        }
        return it->second;
    }

    // Median of event-timed launches after 3 warm-up launches: reps_ of them, fewer for a slow launch (the
    // last warm-up's time): max(3, 2 s / that time).
    double time_events(const std::function<void()>& launch) {
        for (int k = 0; k < 2; ++k) launch();
        cudaEventRecord(a_, stream_);
        launch();
        cudaEventRecord(b_, stream_);
        cudaEventSynchronize(b_);
        float warm_ms = 0;
        cudaEventElapsedTime(&warm_ms, a_, b_);
        const int reps = warm_ms > 0 ? std::min(reps_, std::max(3, int(2000.0 / warm_ms))) : reps_;
        std::vector<double> t;
        for (int k = 0; k < reps; ++k) {
            cudaEventRecord(a_, stream_);
            launch();
            cudaEventRecord(b_, stream_);
            cudaEventSynchronize(b_);
            float ms = 0;
            cudaEventElapsedTime(&ms, a_, b_);
            t.push_back(ms);
        }
        return median(t);
    }

    static Result finish(const Case& c, int size, double ms, double roof_pix_s, const std::string& algorithm) {
        const double mpix_s = double(size) * size / 1e6 / (ms / 1e3);
        return {c, size, ms, mpix_s, 100 * mpix_s * 1e6 / roof_pix_s, roof_pix_s, algorithm, "", ""};
    }

    int reps_;
    cudaStream_t stream_ = nullptr;
    cudaEvent_t a_ = nullptr, b_ = nullptr, fork_ = nullptr;
    std::unique_ptr<Executor> ex_;
    std::map<std::tuple<int, int, int>, Input> inputs_;  // (side, channels, pixel type) -> input
    std::map<std::string, bench::ReferenceBands> references_;
};

std::vector<int> parse_sizes(const std::string& s) {
    std::vector<int> out;
    std::stringstream in(s);
    for (std::string part; std::getline(in, part, ',');) out.push_back(std::stoi(part));
    return out;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes = {8192};
    int reps = 15;
    bool sweep = false, book = false, large = false, full = false;
    bool classic_cases = true, user_set = true, rank_set = true;
    std::string csv, only_op, only_type, only_shape;
    double only_k = 0;
    int only_channels = 0;
    for (int k = 1; k < argc; ++k) {
        const std::string a = argv[k];
        auto next = [&]() -> std::string {
            if (k + 1 >= argc) {
                std::fprintf(stderr, "bench_gpu: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++k];
        };
        if (a == "--sizes" || a == "--size") sizes = parse_sizes(next());
        else if (a == "--reps") reps = std::max(1, std::stoi(next()));
        else if (a == "--csv") csv = next();
        else if (a == "--op") only_op = next();
        else if (a == "--type") only_type = next();
        else if (a == "--k") only_k = std::stod(next());
        else if (a == "--channels") only_channels = std::stoi(next());
        else if (a == "--shape") only_shape = next();
        else if (a == "--full") full = true;
        else if (a == "--cases") {
            const std::string v = "," + next() + ",";
            classic_cases = v.find(",classic,") != std::string::npos;
            user_set = v.find(",user,") != std::string::npos;
            rank_set = v.find(",rank,") != std::string::npos;
        }
        else if (a == "--sweep") sweep = true;
        else if (a == "--book") book = true;
        else if (a == "--large") large = true;
        else {
            std::fprintf(stderr, "bench_gpu: unknown argument %s\n", a.c_str());
            return 2;
        }
    }
    if (!cuda_available()) {
        std::fprintf(stderr, "bench_gpu: no CUDA device\n");
        return 1;
    }
    auto wanted = [&](const Case& c) {
        return (only_op.empty() || c.op == only_op) && (only_type.empty() || only_type == to_string(c.type)) &&
               (only_k == 0 || c.param == only_k) && (only_channels == 0 || c.channels == only_channels) &&
               (only_shape.empty() || c.shape == only_shape);
    };
    Bench bench(reps);
    ceil_ = bench.measure_ceilings();
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("%s: device copy %.0f GB/s (read + write), FP32 FMA peak %.1f T/s, pinned PCIe %.1f GB/s up, "
                "%.1f GB/s down, %.1f GB/s each way at once\n",
                prop.name, ceil_.bandwidth / 1e9, ceil_.fma_peak / 1e12, ceil_.h2d / 1e9, ceil_.d2h / 1e9,
                ceil_.duplex / 1e9);
    // Rows go out as they are measured, so that a run cut short keeps what it had.
    std::ofstream f;
    if (!csv.empty()) {
        f.open(csv);
        f << "impl,op,type,param,size,ms,mpix_s,algorithm,roofline_pct,fma_peak,channels,shape,gpix_s,gsamples_s,"
             "roofline_gpix_s,kernel,check,predicted_ms\n";
        f.flush();
    }
    auto quoted = [](std::string v) {
        for (char& ch : v)
            if (ch == '"') ch = '\'';
        return '"' + v + '"';
    };
    auto write_row = [&](const Result& r) {
        if (!f.is_open()) return;
        f << "apron," << r.c.name() << ',' << to_string(r.c.type) << ',' << r.c.param << ',' << r.size << ','
          << r.ms << ',' << r.mpix_s << ',' << quoted(r.algorithm) << ',' << r.roofline_pct << ','
          << ceil_.fma_peak << ',' << r.c.channels << ',' << quoted(r.c.shape) << ',' << r.mpix_s / 1e3 << ','
          << r.mpix_s * r.c.channels / 1e3 << ',' << r.roofline_pix_s / 1e9 << ',' << quoted(r.kernel) << ','
          << quoted(r.check) << ',' << (r.predicted_ms > 0 ? std::to_string(r.predicted_ms) : std::string()) << std::endl;
    };
    std::vector<Result> results;
    auto run = [&](const Case& c, int size) {
        try {
            results.push_back(c.op == "h2h_correlate" ? bench.host_to_host(c, size) : bench.kernel_only(c, size));
            const Result& r = results.back();
            write_row(r);
            std::printf("%-14s %-4s C%d %-13s %5g %6d %9.3f ms %10.0f Mpix/s %6.1f%%  %s%s%s\n", r.c.name().c_str(),
                        to_string(r.c.type), r.c.channels, r.c.shape.c_str(), r.c.param, r.size, r.ms, r.mpix_s,
                        r.roofline_pct, r.algorithm.c_str(), r.check.empty() ? "" : "  check ", r.check.c_str());
            std::fflush(stdout);
        } catch (const Error& e) {
            // A forced path that cannot run the case: the planner's --algo error, no row.
            const bool cannot = c.algorithm != Algorithm::automatic && std::strstr(e.what(), "--algo");
            std::printf("%-14s %-4s C%d %-13s %5g %6d %s: %s\n", c.name().c_str(), to_string(c.type), c.channels,
                        c.shape.c_str(), c.param, size, cannot ? "skipped" : "failed", e.what());
        } catch (const std::exception& e) {
            std::printf("%-14s %-4s C%d %-13s %5g %6d failed: %s\n", c.name().c_str(), to_string(c.type), c.channels,
                        c.shape.c_str(), c.param, size, e.what());
        }
    };
    std::printf("%-14s %-4s %-2s %-13s %5s %6s %12s %17s %7s  %s\n", "op", "type", "C", "shape", "param", "size", "time",
                "throughput", "%roof", "algorithm");
    const Case h2h{"h2h_correlate", PixelType::u8, 5, random_correlation(5, true), 25};
    if (!large) {
        // The user cases first: a run cut short by its time limit keeps them.
        if (user_set) {
            const std::vector<Case> user = user_bench_cases(full);
            for (int size : sizes)
                for (const Case& c : user)
                    if (wanted(c)) run(c, size);
        }
        if (rank_set) {
            const std::vector<Case> ranks = rank_bench_cases();
            for (int size : sizes)
                for (const Case& c : ranks)
                    if (wanted(c)) run(c, size);
        }
        if (classic_cases) {
            for (int size : sizes)
                for (const Case& c : cases(false))
                    if (wanted(c)) run(c, size);
            for (int size : sizes)
                if (wanted(h2h)) run(h2h, size);
        }
    } else {
        const std::vector<Case> all = large_cases();
        for (int size : sizes)
            for (const Case& c : all)
                if (wanted(c)) run(c, size);
    }
    if (sweep)
        for (int size : {512, 1024, 2048, 4096, 16384}) {
            for (const Case& c : cases(true))
                if (wanted(c)) run(c, size);
            if (wanted(h2h)) run(h2h, size);
        }
    if (book)
        for (int size : {512, 1024, 2048, 4096})
            for (int k : {3, 5, 7}) {
                const Case kernel{"correlate", PixelType::u8, double(k), random_correlation(k, false), double(k) * k};
                if (wanted(kernel)) run(kernel, size);
                Case h2h_k = kernel;
                h2h_k.op = "h2h_correlate";
                if (wanted(h2h_k)) run(h2h_k, size);
            }
    return 0;
}
