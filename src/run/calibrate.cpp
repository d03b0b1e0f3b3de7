// `apron calibrate`: time every linear path of a backend and write the planner's table (calibrate.hpp).
// Times are of the step alone, in the executor's memory (device memory on CUDA: no transfers), after a
// run that builds whatever the path caches (run-time compiled kernels, FFT plans and mask spectra), as the
// mean of enough runs to fill ~0.2 s.
#include "apron/calibrate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "apron/devices.hpp"
#include "apron/errors.hpp"
#include "apron/memory.hpp"
#include "plan/cost_model.hpp"
#include "plan/memory_estimate.hpp"
#include "plan/plan.hpp"
#include "plan/step_kind.hpp"

namespace apron {
namespace {

using Clock = std::chrono::steady_clock;

Backend resolve(Backend b) {
    if (b == Backend::automatic) return cuda_available() ? Backend::cuda : Backend::cpu;
    if (b == Backend::reference) fail("--backend", "the reference backend has no paths to calibrate");
    return b;
}

std::unique_ptr<Executor> executor_for(Backend b) {
    if (b == Backend::cuda) {
        auto e = make_cuda_executor();
        if (!e) fail("--backend", "cuda: this build has no CUDA backend");
        return e;
    }
    return make_cpu_executor(0);
}

Image random_image(const ImageShape& shape, std::uint32_t seed) {
    Image img(shape);
    std::mt19937 rng(seed);
    for (int y = 0; y < shape.height; ++y) {
        const int n = shape.width * shape.channels;
        if (shape.type == PixelType::f32) {
            float* r = img.row<float>(y);
            for (int k = 0; k < n; ++k) r[k] = float(rng() % 100000) * 1e-5f;
        } else if (shape.type == PixelType::u16) {
            auto* r = img.row<std::uint16_t>(y);
            for (int k = 0; k < n; ++k) r[k] = std::uint16_t(rng());
        } else {
            auto* r = img.row<std::uint8_t>(y);
            for (int k = 0; k < n; ++k) r[k] = std::uint8_t(rng());
        }
    }
    return img;
}

// Masks of each kind, deterministic. Integer masks keep their weights in -8..8 (byte weights, and sums
// that stay below 2^24 up to 31x31).
enum class MaskKind { full, separable, rank2 };
Mask make_mask(int w, int h, bool integer, MaskKind kind, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    std::uniform_int_distribution<int> small(-8, 8);
    auto value = [&] { return integer ? double(small(rng)) : u(rng); };
    std::vector<double> weights(static_cast<std::size_t>(w) * h);
    if (kind == MaskKind::full) {
        for (double& x : weights) x = value();
    } else {
        const int rank = kind == MaskKind::rank2 ? 2 : 1;
        for (int t = 0; t < rank; ++t) {
            std::vector<double> row(static_cast<std::size_t>(w)), col(static_cast<std::size_t>(h));
            // Integer factors 1..2 with random signs: products stay in -4..4, never all zero.
            auto factor = [&] { return integer ? double((rng() & 1 ? 1 : -1) * int(1 + rng() % 2)) : u(rng); };
            for (double& x : row) x = factor();
            for (double& x : col) x = factor();
            for (int j = 0; j < h; ++j)
                for (int i = 0; i < w; ++i) weights[std::size_t(j) * w + i] += col[std::size_t(j)] * row[std::size_t(i)];
        }
    }
    if (kind == MaskKind::full) weights[weights.size() / 2] += integer ? 1 : 0.5;  // never all zeros
    return Mask(w, h, std::move(weights));
}

// One correlation with this mask (reflect border, raw sum): what every timed case runs.
OpProgram correlation(const Mask& m) {
    Step step;
    step.action = LinearStep{m};
    return OpProgram{"calibrate", {step}};
}

struct Class {
    const char* name;
    PixelType in;
    bool integer_mask;
};
constexpr Class classes[] = {{"f32", PixelType::f32, false}, {"u8", PixelType::u8, false}, {"u8-int", PixelType::u8, true}};

// The host memory a Bench of this size and its runs take, checked against the budget before any of it is
// allocated: the random image it is made from, and on the CPU the u8 and f32 inputs and outputs and what the
// costliest timed step holds besides (intermediates, tables, scratch; its largest mask on every path).
void require_bench_memory(const CalibrateOptions& o, Backend backend, int width, int height, int largest_side) {
    const std::uint64_t pixels = std::uint64_t(width) * std::uint64_t(height);
    const std::uint64_t host_image = pixels * 4 * 4;  // the largest random image: f32 on 4 channels
    std::uint64_t buffers = 0, step = 0;
    if (backend == Backend::cpu) {
        buffers = 2 * pixels * (1 + 4) * (1 + 3 + 4);  // u8 and f32 inputs and outputs on 1, 3 and 4 channels
        for (const Class& c : classes)
            for (Algorithm path : {Algorithm::direct, Algorithm::separable, Algorithm::fft})
                for (MaskKind kind : {MaskKind::full, MaskKind::separable}) {
                    const Mask m = make_mask(largest_side, largest_side, c.integer_mask, kind, 1);
                    try {
                        const ExecutionPlan plan = make_plan({correlation(m)}, {width, height, 1, c.in}, c.in, backend, path);
                        step = std::max(step, estimate_memory(plan, 0, false).total());
                    } catch (const Error&) {
                        // a path that declines this case is not timed
                    }
                }
    }
    require_memory(host_image + buffers + step, o.memory_budget, "calibrate --size " + std::to_string(width) + "x" + std::to_string(height),
                   "images " + format_bytes(host_image + buffers) + ", the largest step " + format_bytes(step));
}

// One backend, one image size: inputs of each type and outputs, in the executor's memory.
class Bench {
public:
    Bench(Backend b, int width, int height) : backend_(b), ex_(executor_for(b)), width_(width), height_(height) {
        for (PixelType t : {PixelType::u8, PixelType::f32}) make_images(t, 1);
    }
    Backend backend() const { return backend_; }
    ImageShape shape(PixelType t, int channels = 1) const { return {width_, height_, channels, t}; }

    // Seconds per run of one step on `channels` interleaved channels (nullopt when the planner declines the
    // forced path).
    std::optional<double> time_linear(const Mask& m, PixelType in, Algorithm path, int channels = 1) {
        const Key key{in, channels};
        if (!inputs_.count(key)) make_images(in, channels);
        ExecutionPlan plan;
        try {
            plan = make_plan({correlation(m)}, shape(in, channels), in, backend_, path);
        } catch (const Error&) {
            return std::nullopt;
        }
        const auto& steps = plan.operations.at(0).steps;
        auto run = [&] {
            std::vector<Buffer> results;
            for (const StepPlan& s : steps) {
                auto view_of = [&](int i) { return i == op_input ? inputs_[key].cview() : results.at(std::size_t(i)).cview(); };
                Buffer out = &s == &steps.back() ? outputs_[Key{s.out_shape.type, channels}] : ex_->allocate(s.out_shape);
                run_step_kind(*ex_, s, view_of(s.input), s.second == no_operand ? ConstImageView{} : view_of(s.second), out.view);
                results.push_back(std::move(out));
            }
        };
        return seconds_of(run);
    }

    std::optional<double> time_combine() {
        const CombinePlan c{CombineStep{1, 1, 0}, PixelType::f32, PixelType::f32, PixelType::f32};
        const Key f32{PixelType::f32, 1};
        return seconds_of([&] { ex_->combine(c, inputs_[f32].cview(), inputs_[f32].cview(), outputs_[f32].view); });
    }

private:
    template <class F>
    double seconds_of(F&& run) {
        run();  // builds the caches
        ex_->synchronize();
        auto start = Clock::now();
        run();
        ex_->synchronize();
        const double once = std::chrono::duration<double>(Clock::now() - start).count();
        const int reps = std::clamp(int(0.2 / std::max(once, 1e-6)), 1, 50);
        start = Clock::now();
        for (int r = 0; r < reps; ++r) run();
        ex_->synchronize();
        return std::chrono::duration<double>(Clock::now() - start).count() / reps;
    }

    using Key = std::pair<PixelType, int>;  // type, channels

    // A random input and an output of this type and channel count (f32 outputs too: raw sums of u8).
    void make_images(PixelType t, int channels) {
        for (PixelType u : {t, PixelType::f32}) {
            const Key key{u, channels};
            if (inputs_.count(key)) continue;
            const ImageShape s = shape(u, channels);
            const Image host = random_image(s, 1234 + unsigned(u) + 17 * unsigned(channels));
            Buffer in = ex_->allocate(s);
            ex_->upload(host.view(), in.view);
            inputs_[key] = std::move(in);
            outputs_[key] = ex_->allocate(s);
        }
        ex_->synchronize();
    }

    Backend backend_;
    std::unique_ptr<Executor> ex_;
    int width_, height_;
    std::map<Key, Buffer> inputs_, outputs_;
};

std::vector<int> default_sides(Backend b) {
    if (b == Backend::cuda) return {3, 5, 7, 9, 11, 13, 15, 17, 21, 25, 31, 41, 51, 63, 85, 127};
    return {3, 5, 7, 9, 13, 17, 21, 25, 31, 41, 63, 95, 127};
}

std::string device_name(Backend b) {
    if (b == Backend::cuda) {
        const auto d = cuda_devices();
        if (!d.empty()) {
            std::string s = d[0];
            const auto colon = s.find(": ");
            return colon == std::string::npos ? s : s.substr(colon + 2);
        }
        return "unknown GPU";
    }
    return "CPU backend, " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " threads";
}

void say(const CalibrateOptions& o, const std::string& line) {
    if (o.progress) o.progress(line);
}

} // namespace

std::string calibrate(const CalibrateOptions& o) {
    const Backend backend = resolve(o.backend);
    const int width = o.width > 0 ? o.width : backend == Backend::cuda ? 8192 : 1024;
    const int height = o.height > 0 ? o.height : width;
    validate_shape({width, height, 1, PixelType::f32}, "--size");
    std::vector<int> sides = o.sides.empty() ? default_sides(backend) : o.sides;
    std::sort(sides.begin(), sides.end());
    for (int k : sides)
        if (k < 1 || k > 1024) fail("--sides", std::to_string(k) + " is not a mask side in 1..1024");
    require_bench_memory(o, backend, width, height, sides.back());
    Bench bench(backend, width, height);
    CostTable table;
    table.backend = backend == Backend::cuda ? "cuda" : "cpu";
    table.arch = backend == Backend::cuda ? cuda_device_arch() : 0;
    table.device = device_name(backend);
    const double samples = double(width) * height;
    std::vector<Algorithm> paths = {Algorithm::direct, Algorithm::separable, Algorithm::fft};
    if (backend == Backend::cuda) paths.push_back(Algorithm::tensor);
    for (const Class& c : classes)
        for (Algorithm path : paths) {
            bool give_up = false;
            for (int k : sides) {
                if (give_up) break;
                const MaskKind kind = path == Algorithm::separable ? MaskKind::separable : MaskKind::full;
                const Mask m = make_mask(k, k, c.integer_mask, kind, 77 + unsigned(k));
                const auto s = bench.time_linear(m, c.in, path);
                if (!s) continue;  // the path cannot take this case (the tensor cores past 31x31, ...)
                give_up = *s > o.give_up_seconds;
                table.points.push_back({to_string(path), c.name, double(k), samples / *s * 1e-9});
                char line[128];
                std::snprintf(line, sizeof line, "%-9s %-6s %4dx%-4d %10.3f ms %9.2f Gpix/s", to_string(path), c.name, k, k,
                              *s * 1e3, samples / *s * 1e-9);
                say(o, line);
            }
        }
    // Colour: the direct and separable paths on 3 and 4 interleaved channels, where their order can differ
    // from gray (the FFT and the tensor cores transform or stage each channel alone: their gray rate holds).
    for (int channels : {3, 4})
        for (const Class& c : classes)
            for (Algorithm path : {Algorithm::direct, Algorithm::separable})
                for (int k : sides) {
                    if (k > 31) break;
                    const MaskKind kind = path == Algorithm::separable ? MaskKind::separable : MaskKind::full;
                    const Mask m = make_mask(k, k, c.integer_mask, kind, 77 + unsigned(k));
                    const auto s = bench.time_linear(m, c.in, path, channels);
                    if (!s) continue;
                    const std::string cls = std::string(c.name) + "-c" + std::to_string(channels);
                    const double colour_samples = samples * channels;
                    table.points.push_back({to_string(path), cls, double(k), colour_samples / *s * 1e-9});
                    char line[128];
                    std::snprintf(line, sizeof line, "%-9s %-9s %4dx%-4d %10.3f ms %9.2f Gsamples/s", to_string(path), cls.c_str(), k, k,
                                  *s * 1e3, colour_samples / *s * 1e-9);
                    say(o, line);
                }
    if (const auto s = bench.time_combine()) {
        table.points.push_back({"combine", "f32", 1, samples / *s * 1e-9});
        say(o, "combine   f32               " + std::to_string(*s * 1e3) + " ms");
    }
    char when[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y-%m-%d", std::gmtime(&now));
    std::ostringstream out;
    out << "# apron calibration table (apron calibrate): throughput of each linear path, 1e9 output samples/s\n"
        << "# measured " << when << ", apron " << APRON_VERSION << ", image " << width << "x" << height
        << "x1, the step alone in the executor's memory, mean of runs filling 0.2 s\n"
        << "# classes: f32 image and float mask; u8 image and float mask; u8-int: u8 image, integer weights -8..8;\n"
        << "# CLASS-cN: the same on N interleaved channels (direct and separable, sides up to 31)\n"
        << format_cost_table(table);
    return out.str();
}

PlannerCheck check_planner(const CalibrateOptions& o) {
    const Backend backend = resolve(o.backend);
    const int width = o.width > 0 ? o.width : backend == Backend::cuda ? 4096 : 1024;
    const int height = o.height > 0 ? o.height : width;
    validate_shape({width, height, 1, PixelType::f32}, "--size");
    require_bench_memory(o, backend, width, height, 99);  // the largest held-out case
    Bench bench(backend, width, height);
    struct Case {
        const Class* cls;
        int k;
        MaskKind kind;
    };
    std::vector<Case> cases;
    const std::vector<int> held_out = backend == Backend::cuda ? std::vector<int>{4, 6, 10, 19, 23, 37, 47, 71, 99}
                                                               : std::vector<int>{4, 10, 19, 37, 47};
    for (const Class& c : classes)
        for (int k : held_out) cases.push_back({&c, k, MaskKind::full});
    for (int k : {15, 31, 63}) cases.push_back({&classes[0], k, MaskKind::rank2});
    PlannerCheck result;
    std::ostringstream r;
    r << "| case | direct | separable | low-rank | fft | tensor | chosen | chosen / fastest |\n|---|---|---|---|---|---|---|---|\n";
    for (const Case& cs : cases) {
        const Mask m = make_mask(cs.k, cs.k, cs.cls->integer_mask, cs.kind, 991 + unsigned(cs.k));
        const ExecutionPlan auto_plan = make_plan({correlation(m)}, bench.shape(cs.cls->in), cs.cls->in, backend);
        Algorithm chosen = Algorithm::direct;
        for (const auto& e : auto_plan.operations[0].steps[0].estimates)
            if (e.chosen) chosen = e.path;
        std::map<Algorithm, double> t;
        double best = INFINITY;
        for (Algorithm a : {Algorithm::direct, Algorithm::separable, Algorithm::low_rank, Algorithm::fft, Algorithm::tensor}) {
            const auto s = bench.time_linear(m, cs.cls->in, a);
            if (!s) continue;
            t[a] = *s;
            best = std::min(best, *s);
        }
        const double ratio = t.count(chosen) ? t[chosen] / best : INFINITY;
        result.worst_ratio = std::max(result.worst_ratio, ratio);
        char name[64];
        std::snprintf(name, sizeof name, "%s %dx%d%s", cs.cls->name, cs.k, cs.k, cs.kind == MaskKind::rank2 ? " rank 2" : "");
        r << "| " << name;
        for (Algorithm a : {Algorithm::direct, Algorithm::separable, Algorithm::low_rank, Algorithm::fft, Algorithm::tensor}) {
            char cell[32] = "-";
            if (t.count(a)) std::snprintf(cell, sizeof cell, "%.3f ms", t[a] * 1e3);
            r << " | " << cell;
        }
        char rs[32];
        std::snprintf(rs, sizeof rs, "%.2f", ratio);
        r << " | " << to_string(chosen) << " | " << rs << " |\n";
        say(o, std::string(name) + ": chosen " + to_string(chosen) + ", " + rs + " x the fastest");
    }
    char worst[64];
    std::snprintf(worst, sizeof worst, "\nWorst chosen / fastest: %.2f (image %dx%d)\n", result.worst_ratio, width, height);
    r << worst;
    result.report = r.str();
    return result;
}

} // namespace apron
