// GPU benchmark: kernel-only throughput of the CUDA executor per operation and mask size on one
// device-resident image (CUDA events, warm-up, median of repetitions), plus host-to-host time through the
// whole pipeline. Prints a table and writes CSV (--csv FILE). The roofline column uses the ceilings
// measured on the lent H200 (docs/perf-notes.md): 4156 GB/s device copy, 33.4 T FP32 FMA/s.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "apron/pipeline.hpp"
#include "plan/plan.hpp"

using namespace apron;

namespace {

constexpr double bandwidth = 4156e9, fma_peak = 33.4e12;

struct Result {
    std::string name;
    int size;
    double ms, gpix, roofline_pct;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Times one step's executor call on device buffers, kernel only.
template <class F>
double time_ms(Executor& ex, F&& launch, int reps) {
    for (int k = 0; k < 3; ++k) launch();
    ex.synchronize();
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<double> t;
    for (int k = 0; k < reps; ++k) {
        cudaEventRecord(a);  // legacy default stream: orders with the executor's non-blocking stream? no:
        // the executor's stream is non-blocking, so synchronise around each repetition instead.
        ex.synchronize();
        const auto start = std::chrono::steady_clock::now();
        launch();
        ex.synchronize();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return median(t);
}

} // namespace

int main(int argc, char** argv) {
    int size = 8192, reps = 10;
    std::string csv, only_type;
    int only_k = 0;  // --type u8|f32 and --k N restrict the cases (for profiling one kernel)
    for (int k = 1; k < argc; ++k) {
        const std::string a = argv[k];
        if (a == "--size" && k + 1 < argc) size = std::stoi(argv[++k]);
        else if (a == "--reps" && k + 1 < argc) reps = std::stoi(argv[++k]);
        else if (a == "--csv" && k + 1 < argc) csv = argv[++k];
        else if (a == "--type" && k + 1 < argc) only_type = argv[++k];
        else if (a == "--k" && k + 1 < argc) only_k = std::stoi(argv[++k]);
    }
    if (!cuda_available()) {
        std::fprintf(stderr, "bench_gpu: no CUDA device\n");
        return 1;
    }
    auto ex = make_cuda_executor();
    std::vector<Result> results;
    const double mpix = double(size) * size / 1e6;
    for (PixelType type : {PixelType::f32, PixelType::u8}) {
        if (!only_type.empty() && only_type != to_string(type)) continue;
        Image host(size, size, 1, type);
        for (int y = 0; y < size; ++y)
            for (std::size_t b = 0; b < host.shape().row_bytes(); ++b)
                reinterpret_cast<unsigned char*>(host.row<std::uint8_t>(y))[b] = (unsigned char)(y * 131 + b * 7);
        if (type == PixelType::f32)
            for (int y = 0; y < size; ++y)
                for (int x = 0; x < size; ++x) host.row<float>(y)[x] = float((x * 7 + y * 13) % 251);
        Buffer in = ex->allocate(host.shape());
        ex->upload(host.view(), in.view);
        Buffer out = ex->allocate(host.shape());
        for (int k : {3, 5, 7, 9, 13, 17, 31}) {
            if (only_k && k != only_k) continue;
            // A random-looking non-separable float mask (the general direct path).
            std::vector<double> w(std::size_t(k) * k);
            for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.01 * double((i * 37) % 17) - 0.05;
            OpProgram op{"correlate " + std::to_string(k), {Step{LinearStep{Mask(k, k, w), BorderMode::constant}}}};
            const ExecutionPlan plan = make_plan({op}, host.shape(), type, Backend::cuda);
            const auto& lp = std::get<LinearPlan>(plan.operations[0].steps[0].what);
            const double ms = time_ms(*ex, [&] { ex->linear(lp, in.cview(), out.view); }, reps);
            const double gpix = mpix / ms;  // Mpix per ms = Gpix per s
            const double bpp = type == PixelType::f32 ? 8 : 2;
            const double roof = std::min(bandwidth / bpp, fma_peak / (k * k)) / 1e9;
            results.push_back({std::string("correlate ") + to_string(type) + " " + std::to_string(k) + "x" + std::to_string(k),
                               size, ms, gpix, 100 * gpix / roof});
        }
    }
    std::printf("%-28s %7s %10s %9s %8s\n", "case", "size", "ms", "Gpix/s", "%roof");
    for (const auto& r : results)
        std::printf("%-28s %7d %10.3f %9.2f %7.1f%%\n", r.name.c_str(), r.size, r.ms, r.gpix, r.roofline_pct);
    if (!csv.empty()) {
        std::ofstream f(csv);
        f << "case,size,ms,gpix_per_s,roofline_pct\n";
        for (const auto& r : results) f << r.name << ',' << r.size << ',' << r.ms << ',' << r.gpix << ',' << r.roofline_pct << '\n';
    }
    return 0;
}
