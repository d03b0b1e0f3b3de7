// Batch throughput host to host (issue 5's first target): COUNT generated N x N u8 images in pinned memory
// through run_batch with a 5x5 filter, results handed to a sink that keeps nothing. Measures images/s and
// the bytes moved each way against the pinned PCIe rate (55 GB/s each way on the lent machine).
//
// Before timing, every output of one round over the distinct images is checked bit for bit against the
// CPU backend (exact integer path), so the timed run cannot be fast by being wrong.
//
//   bench_batch [--count 1000] [--size 4096] [--distinct 16] [--op correlate:mask=...]
//               [--streams 1,2,3,4] [--devices 0 | 0,1 | all] [--pcie 55]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#if APRON_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "apron/batch.hpp"
#include "apron/errors.hpp"
#include "apron/pipeline.hpp"

namespace {

std::vector<int> int_list(const std::string& s) {
    std::vector<int> v;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) v.push_back(std::stoi(item));
    return v;
}

void fill_random(apron::Image& img, unsigned seed) {
    std::mt19937 rng(seed);
    for (int y = 0; y < img.height(); ++y) {
        auto* row = img.row<std::uint8_t>(y);
        for (int x = 0; x < img.width(); x += 4) {
            const std::uint32_t r = rng();
            for (int k = 0; k < 4 && x + k < img.width(); ++k) row[x + k] = std::uint8_t(r >> (8 * k));
        }
    }
}

#if APRON_HAVE_CUDA
// The PCIe ceilings of this machine, in the same run: one direction alone, then both at once (the batch
// moves both ways at the same time). 256 MB pinned buffers, best of 5.
void measure_pcie() {
    const std::size_t bytes = std::size_t(256) << 20;
    void *h_up = nullptr, *h_down = nullptr, *d_up = nullptr, *d_down = nullptr;
    if (cudaMallocHost(&h_up, bytes) || cudaMallocHost(&h_down, bytes) || cudaMalloc(&d_up, bytes) || cudaMalloc(&d_down, bytes))
        return;
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    auto best = [&](bool up, bool down) {
        float best_ms = 1e30f;
        for (int r = 0; r < 5; ++r) {
            cudaDeviceSynchronize();
            cudaEventRecord(a, s1);
            cudaStreamWaitEvent(s2, a, 0);
            if (up) cudaMemcpyAsync(d_up, h_up, bytes, cudaMemcpyHostToDevice, s1);
            if (down) cudaMemcpyAsync(h_down, d_down, bytes, cudaMemcpyDeviceToHost, s2);
            cudaEvent_t done2;
            cudaEventCreate(&done2);
            cudaEventRecord(done2, s2);
            cudaStreamWaitEvent(s1, done2, 0);
            cudaEventRecord(b, s1);
            cudaEventSynchronize(b);
            cudaEventDestroy(done2);
            float ms = 0;
            cudaEventElapsedTime(&ms, a, b);
            best_ms = std::min(best_ms, ms);
        }
        return double(bytes) / (best_ms * 1e-3) / 1e9;
    };
    const double up = best(true, false), down = best(false, true), both = best(true, true);
    std::printf("PCIe pinned ceilings: up alone %.1f GB/s, down alone %.1f GB/s, both at once %.1f GB/s each way\n", up,
                down, both);
    cudaFreeHost(h_up), cudaFreeHost(h_down), cudaFree(d_up), cudaFree(d_down);
    cudaStreamDestroy(s1), cudaStreamDestroy(s2);
    cudaEventDestroy(a), cudaEventDestroy(b);
}

// Every GPU at once, both directions (do they share a link to the host?): host wall clock, best of 5.
void measure_pcie_all_devices() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 2) return;
    const std::size_t bytes = std::size_t(256) << 20;
    struct Dev {
        void *h_up, *h_down, *d_up, *d_down;
        cudaStream_t up, down;
    };
    std::vector<Dev> devs(static_cast<std::size_t>(n));
    for (int d = 0; d < n; ++d) {
        cudaSetDevice(d);
        Dev& v = devs[std::size_t(d)];
        if (cudaMallocHost(&v.h_up, bytes) || cudaMallocHost(&v.h_down, bytes) || cudaMalloc(&v.d_up, bytes) ||
            cudaMalloc(&v.d_down, bytes))
            return;
        cudaStreamCreate(&v.up);
        cudaStreamCreate(&v.down);
    }
    double best = 1e30;
    for (int r = 0; r < 5; ++r) {
        for (int d = 0; d < n; ++d) cudaSetDevice(d), cudaDeviceSynchronize();
        const auto t0 = std::chrono::steady_clock::now();
        for (int d = 0; d < n; ++d) {
            cudaSetDevice(d);
            Dev& v = devs[std::size_t(d)];
            cudaMemcpyAsync(v.d_up, v.h_up, bytes, cudaMemcpyHostToDevice, v.up);
            cudaMemcpyAsync(v.h_down, v.d_down, bytes, cudaMemcpyDeviceToHost, v.down);
        }
        for (int d = 0; d < n; ++d) cudaSetDevice(d), cudaDeviceSynchronize();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("PCIe pinned ceiling with all %d GPUs copying both ways at once: %.1f GB/s each way in total "
                "(%.1f per GPU)\n", n, n * double(bytes) / best / 1e9, double(bytes) / best / 1e9);
    for (int d = 0; d < n; ++d) {
        cudaSetDevice(d);
        Dev& v = devs[std::size_t(d)];
        cudaFreeHost(v.h_up), cudaFreeHost(v.h_down), cudaFree(v.d_up), cudaFree(v.d_down);
        cudaStreamDestroy(v.up), cudaStreamDestroy(v.down);
    }
    cudaSetDevice(0);
}
#else
void measure_pcie() {}
void measure_pcie_all_devices() {}
#endif

} // namespace

int main(int argc, char** argv) {
    int count = 1000, size = 4096, distinct = 16;
    double pcie = 55.0;
    std::string op = "correlate:mask=samples/masks/binomial5x5.kernel,normalize=sum", streams = "1,2,3,4", devices;
    for (int k = 1; k < argc; ++k) {
        const std::string a = argv[k];
        auto value = [&]() -> std::string {
            if (k + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++k];
        };
        if (a == "--count") count = std::stoi(value());
        else if (a == "--size") size = std::stoi(value());
        else if (a == "--distinct") distinct = std::stoi(value());
        else if (a == "--op") op = value();
        else if (a == "--streams") streams = value();
        else if (a == "--devices") devices = value();
        else if (a == "--pcie") pcie = std::stod(value());
        else throw std::runtime_error("unknown argument " + a);
    }
    try {
        measure_pcie();
        measure_pcie_all_devices();
        const apron::Pipeline pipeline({op});
        std::vector<apron::Image> images;
        for (int i = 0; i < distinct; ++i) {
            images.emplace_back(apron::ImageShape{size, size, 1, apron::PixelType::u8}, apron::HostMemory::pinned);
            fill_random(images.back(), unsigned(100 + i));
        }
        std::vector<apron::BatchItem> items(static_cast<std::size_t>(count));
        for (int i = 0; i < count; ++i) items[std::size_t(i)] = {"image" + std::to_string(i), "", 0, 0};

        apron::BatchOptions o;
        o.pipeline = pipeline;
        o.run.backend = apron::Backend::automatic;
        o.source = [&](std::size_t i) { return apron::ConstImageView(images[i % images.size()].view()); };
        if (!devices.empty() && devices != "all") o.devices = int_list(devices);

        // Correctness: one round over the distinct images against the CPU backend, bit for bit.
        {
            std::vector<apron::BatchItem> round(items.begin(), items.begin() + std::min(count, distinct));
            std::vector<apron::Image> got(round.size());
            apron::BatchOptions c = o;
            c.sink = [&](std::size_t i, apron::ConstImageView v) {
                got[i] = apron::Image(v.shape);
                for (int y = 0; y < v.height(); ++y) std::memcpy(got[i].view().row_bytes(y), v.row_bytes(y), v.shape.row_bytes());
            };
            const apron::BatchReport r = apron::run_batch(round, c);
            if (r.failed) throw std::runtime_error("check round: " + r.failures[0].message);
            for (std::size_t i = 0; i < round.size(); ++i) {
                const apron::Image want = pipeline.run(images[i].view(), {.backend = apron::Backend::cpu});
                for (int y = 0; y < want.height(); ++y)
                    if (std::memcmp(want.view().row_bytes(y), got[i].view().row_bytes(y), want.shape().row_bytes()) != 0)
                        throw std::runtime_error("image " + std::to_string(i) + " row " + std::to_string(y) + " differs from the CPU backend");
            }
            std::printf("check: %zu outputs bit-identical to the CPU backend\n", round.size());
        }

        o.sink = [](std::size_t, apron::ConstImageView) {};
        std::printf("%-8s %-7s %8s %10s %10s %10s %9s  %s\n", "streams", "images", "seconds", "images/s", "GB/s up", "GB/s down",
                    "% of PCIe", "workers");
        for (int s : int_list(streams)) {
            o.streams_per_device = s;
            const apron::BatchReport r = apron::run_batch(items, o);
            if (r.failed) throw std::runtime_error(r.failures[0].message);
            const double up = double(r.bytes_in) / r.seconds / 1e9, down = double(r.bytes_out) / r.seconds / 1e9;
            std::printf("%-8d %-7zu %8.3f %10.1f %10.1f %10.1f %8.0f%%  %s\n", s, r.done, r.seconds, double(r.done) / r.seconds,
                        up, down, 100.0 * std::min(up, down) / pcie, r.workers.c_str());
            std::printf("%s", r.summary.c_str());
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_batch: %s\n", e.what());
        return 1;
    }
    return 0;
}
