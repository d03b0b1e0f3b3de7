// NPP peer benchmark: the NPP counterparts of the cases bench/bench_gpu.cpp times for apron, timed the same way
// (device-resident square images, random input with a fixed seed, CUDA events on one stream, warm-up, median
// of repetitions). Writes CSV in the common schema bench/report.py merges:
//   impl,op,type,param,size,ms,mpix_s,channels,shape
// channels and shape: the user cases' (bench/peers/npp_user_cases.cuh: 1, 3 and 4 channels, u8/u16/f32,
// FilterBorder, FilterGaussBorder, DilateBorder and ErodeBorder with bench_gpu's elements), 1 and empty on the
// single-channel cases below.
// Single-channel rows (impl npp, border replicate everywhere, the only border these NPP calls support):
//   correlate      f32  k   nppiFilterBorder_32f_C1R_Ctx, random float k x k kernel
//   correlate      u8   k   nppiFilterBorder32f_8u_C1R_Ctx, random float k x k kernel on 8-bit pixels
//   correlate_int  u8   k   nppiFilterBorder_8u_C1R_Ctx, random integer kernel (-3..3) with divisor 8
//   gaussian_mask  f32/u8 w nppiFilterGaussBorder_*_C1R_Ctx, fixed w x w mask (w = 3..15, NPP's only sizes)
//   dilate, erode  u8   k   nppiDilateBorder_8u_C1R_Ctx / nppiErodeBorder_8u_C1R_Ctx, k x k rectangle
// Rank cases (--cases rank; bench/peers/npp_rank_cases.cuh): median, nppiFilterMedian 8u C1R/C3R at 3x3, 5x5, 7x7
// and 31x31, 16u and 32f C1R at 3x3, on the interior ROI (NPP's median has no border mode).
// A call that returns an error status is reported on stderr and writes no row.
// --large adds the masks of any size (bench_gpu --large): correlate f32 and correlate_int u8 also at
// k = 41, 51, 63, 85, 127 (correlate u8 with a float kernel stays at k <= 31, as apron's default cases).
//
// Build and run (on the GPU machine):
//   nvcc -O3 -arch=sm_90 bench/peers/npp_peers.cu -o npp_peers -lnppif -lnppim -lnppc
//   ./npp_peers --sizes 8192[,4096,...] --csv npp.csv [--reps 15] [--warmup 3] [--large] [--full]
//               [--cases classic,user,rank]
// --cases: which case sets run (default all three); --full: the user cases' full sweep (bench_gpu --full).
#include <cuda_runtime.h>
#include <npp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

#define CUDA_CHECK(call)                                                                                   \
    do {                                                                                                   \
        cudaError_t e_ = (call);                                                                           \
        if (e_ != cudaSuccess) {                                                                           \
            std::fprintf(stderr, "npp_peers: %s failed: %s (%s:%d)\n", #call, cudaGetErrorString(e_),      \
                         __FILE__, __LINE__);                                                              \
            std::exit(1);                                                                                  \
        }                                                                                                  \
    } while (0)

// A pitched device image of one channel.
struct DeviceImage {
    void* ptr = nullptr;
    size_t pitch = 0;
    DeviceImage(int size, size_t sample_bytes) {
        CUDA_CHECK(cudaMallocPitch(&ptr, &pitch, size_t(size) * sample_bytes, size_t(size)));
    }
    ~DeviceImage() { cudaFree(ptr); }
    DeviceImage(const DeviceImage&) = delete;
    DeviceImage& operator=(const DeviceImage&) = delete;
    template <class T> T* as() const { return static_cast<T*>(ptr); }
    int step() const { return int(pitch); }
};

template <class T> void* device_copy(const std::vector<T>& v) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, v.size() * sizeof(T)));
    CUDA_CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return p;
}

NppStreamContext make_context(cudaStream_t stream) {
    NppStreamContext ctx;
    std::memset(&ctx, 0, sizeof ctx);  // also zeroes the workspace handle / reserved field
    ctx.hStream = stream;
    CUDA_CHECK(cudaGetDevice(&ctx.nCudaDeviceId));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, ctx.nCudaDeviceId));
    ctx.nMultiProcessorCount = prop.multiProcessorCount;
    ctx.nMaxThreadsPerMultiProcessor = prop.maxThreadsPerMultiProcessor;
    ctx.nMaxThreadsPerBlock = prop.maxThreadsPerBlock;
    ctx.nSharedMemPerBlock = prop.sharedMemPerBlock;
    ctx.nCudaDevAttrComputeCapabilityMajor = prop.major;
    ctx.nCudaDevAttrComputeCapabilityMinor = prop.minor;
    unsigned int flags = 0;
    CUDA_CHECK(cudaStreamGetFlags(stream, &flags));
    ctx.nStreamFlags = flags;
    return ctx;
}

NppiMaskSize gauss_mask(int w) {
    switch (w) {
    case 3: return NPP_MASK_SIZE_3_X_3;
    case 5: return NPP_MASK_SIZE_5_X_5;
    case 7: return NPP_MASK_SIZE_7_X_7;
    case 9: return NPP_MASK_SIZE_9_X_9;
    case 11: return NPP_MASK_SIZE_11_X_11;
    case 13: return NPP_MASK_SIZE_13_X_13;
    default: return NPP_MASK_SIZE_15_X_15;
    }
}

class Timer {
public:
    Timer(cudaStream_t stream, int reps, int warmup) : stream_(stream), reps_(reps), warmup_(warmup) {
        CUDA_CHECK(cudaEventCreate(&a_));
        CUDA_CHECK(cudaEventCreate(&b_));
    }
    ~Timer() {
        cudaEventDestroy(a_);
        cudaEventDestroy(b_);
    }

    // Median milliseconds of one call, or a negative value when NPP (or CUDA) reported an error.
    double median_ms(const std::string& what, const std::function<NppStatus()>& call) {
        float last_ms = 0;  // the last warm-up's time: a call slower than 50 ms is timed over 5 repetitions only
        for (int k = 0; k < warmup_; ++k) {
            CUDA_CHECK(cudaEventRecord(a_, stream_));
            const NppStatus s = call();
            CUDA_CHECK(cudaEventRecord(b_, stream_));
            if (s < 0) {  // errors are negative, warnings positive
                std::fprintf(stderr, "npp_peers: %s: NPP error status %d, skipped\n", what.c_str(), int(s));
                cudaStreamSynchronize(stream_);
                cudaGetLastError();
                return -1;
            }
            if (s > 0 && k == 0) std::fprintf(stderr, "npp_peers: %s: NPP warning status %d\n", what.c_str(), int(s));
            const cudaError_t e = cudaEventSynchronize(b_);
            if (e != cudaSuccess) {
                std::fprintf(stderr, "npp_peers: %s: CUDA error %s, skipped\n", what.c_str(), cudaGetErrorString(e));
                cudaGetLastError();
                return -1;
            }
            CUDA_CHECK(cudaEventElapsedTime(&last_ms, a_, b_));
        }
        const int reps = last_ms > 50 ? std::min(reps_, 5) : reps_;
        std::vector<double> t;
        for (int k = 0; k < reps; ++k) {
            CUDA_CHECK(cudaEventRecord(a_, stream_));
            call();
            CUDA_CHECK(cudaEventRecord(b_, stream_));
            CUDA_CHECK(cudaEventSynchronize(b_));
            float ms = 0;
            CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
            t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    }

private:
    cudaStream_t stream_;
    int reps_, warmup_;
    cudaEvent_t a_ = nullptr, b_ = nullptr;
};

std::vector<int> parse_sizes(const std::string& s) {
    std::vector<int> out;
    std::stringstream in(s);
    for (std::string part; std::getline(in, part, ',');)
        if (!part.empty()) out.push_back(std::stoi(part));
    return out;
}

} // namespace

#include "npp_user_cases.cuh"
#include "npp_rank_cases.cuh"

int main(int argc, char** argv) {
    std::vector<int> sizes = {8192};
    std::string csv;
    int reps = 15, warmup = 3;
    bool large = false, full = false, classic_cases = true, user_set = true, rank_set = true;
    for (int k = 1; k < argc; ++k) {
        const std::string a = argv[k];
        auto next = [&]() -> std::string {
            if (k + 1 >= argc) {
                std::fprintf(stderr, "npp_peers: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++k];
        };
        if (a == "--sizes" || a == "--size") sizes = parse_sizes(next());
        else if (a == "--csv") csv = next();
        else if (a == "--reps") reps = std::max(1, std::stoi(next()));
        else if (a == "--warmup") warmup = std::max(1, std::stoi(next()));
        else if (a == "--large") large = true;
        else if (a == "--full") full = true;
        else if (a == "--cases") {
            const std::string v = "," + next() + ",";
            classic_cases = v.find(",classic,") != std::string::npos;
            user_set = v.find(",user,") != std::string::npos;
            rank_set = v.find(",rank,") != std::string::npos;
        }
        else {
            std::fprintf(stderr,
                         "usage: npp_peers --sizes 8192[,4096...] --csv FILE [--reps N] [--warmup N] [--large] "
                         "[--full] [--cases classic,user,rank]\n");
            return 2;
        }
    }

    const NppLibraryVersion* v = nppGetLibVersion();
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("npp_peers: NPP %d.%d.%d on %s\n", v->major, v->minor, v->build, prop.name);

    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const NppStreamContext ctx = make_context(stream);
    Timer timer(stream, reps, warmup);
    // Rows go out as they are measured, so that a run cut short keeps what it had.
    FILE* out = nullptr;
    if (!csv.empty()) {
        out = std::fopen(csv.c_str(), "w");
        if (!out) {
            std::fprintf(stderr, "npp_peers: cannot write %s\n", csv.c_str());
            return 1;
        }
        std::fprintf(out, "impl,op,type,param,size,ms,mpix_s,channels,shape\n");
        std::fflush(out);
    }
    int rows = 0;

    auto record = [&](const char* op, const char* type, int param, int size, double ms, int channels = 1,
                      const std::string& shape = "") {
        if (ms <= 0) return;
        const double mpix_s = double(size) * size / 1e6 / (ms / 1e3);
        ++rows;
        if (out) {
            std::fprintf(out, "npp,%s,%s,%d,%d,%.6g,%.6g,%d,\"%s\"\n", op, type, param, size, ms, mpix_s, channels,
                         shape.c_str());
            std::fflush(out);
        }
        std::printf("npp %-14s %-4s C%d %-13s %3d %6d %9.3f ms %10.0f Mpix/s\n", op, type, channels, shape.c_str(),
                    param, size, ms, mpix_s);
        std::fflush(stdout);
    };

    std::vector<int> filter_ks = {3, 5, 7, 9, 11, 13, 15, 17, 21, 25, 31};
    constexpr int default_max_k = 31;  // beyond: --large, correlate f32 and correlate_int u8 only
    if (large) filter_ks.insert(filter_ks.end(), {41, 51, 63, 85, 127});
    const std::vector<int> gauss_ws = {3, 5, 7, 9, 11, 13, 15};
    const std::vector<int> morph_ks = {3, 5, 7, 9, 15, 21, 31};

    for (const int size : classic_cases ? sizes : std::vector<int>{}) {
        DeviceImage src32(size, 4), dst32(size, 4), src8(size, 1), dst8(size, 1);
        {
            std::mt19937 rng{unsigned(size)};
            std::vector<float> h32(size_t(size) * size);
            std::vector<unsigned char> h8(size_t(size) * size);
            for (size_t i = 0; i < h32.size(); ++i) {
                const unsigned r = rng();
                h32[i] = float(r % 256);
                h8[i] = (unsigned char)(r >> 8);
            }
            CUDA_CHECK(cudaMemcpy2D(src32.ptr, src32.pitch, h32.data(), size_t(size) * 4, size_t(size) * 4, size,
                                    cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy2D(src8.ptr, src8.pitch, h8.data(), size_t(size), size_t(size), size,
                                    cudaMemcpyHostToDevice));
        }
        const NppiSize roi{size, size};
        const NppiPoint origin{0, 0};

        for (const int k : filter_ks) {
            std::mt19937 rng{unsigned(k)};
            std::vector<float> wf(size_t(k) * k);
            std::vector<Npp32s> wi(size_t(k) * k);
            for (size_t i = 0; i < wf.size(); ++i) {
                const int w = int(rng() % 7) - 3;
                wi[i] = w;
                wf[i] = float(w) + 0.01f * float(rng() % 17);
            }
            // Scaled so that the 8-bit float-kernel output stays in range (the speed does not depend on it).
            std::vector<float> wf8(wf);
            for (float& w : wf8) w /= float(k * k);
            auto* dwf = static_cast<Npp32f*>(device_copy(wf));
            auto* dwf8 = static_cast<Npp32f*>(device_copy(wf8));
            auto* dwi = static_cast<Npp32s*>(device_copy(wi));
            const NppiSize ks{k, k};
            const NppiPoint anchor{k / 2, k / 2};
            const std::string tag = std::to_string(k) + "x" + std::to_string(k) + " @" + std::to_string(size);

            record("correlate", "f32", k, size, timer.median_ms("FilterBorder_32f " + tag, [&] {
                return nppiFilterBorder_32f_C1R_Ctx(src32.as<Npp32f>(), src32.step(), roi, origin, dst32.as<Npp32f>(),
                                                    dst32.step(), roi, dwf, ks, anchor, NPP_BORDER_REPLICATE, ctx);
            }));
            if (k <= default_max_k)
                record("correlate", "u8", k, size, timer.median_ms("FilterBorder32f_8u " + tag, [&] {
                    return nppiFilterBorder32f_8u_C1R_Ctx(src8.as<Npp8u>(), src8.step(), roi, origin,
                                                          dst8.as<Npp8u>(), dst8.step(), roi, dwf8, ks, anchor,
                                                          NPP_BORDER_REPLICATE, ctx);
                }));
            record("correlate_int", "u8", k, size, timer.median_ms("FilterBorder_8u " + tag, [&] {
                return nppiFilterBorder_8u_C1R_Ctx(src8.as<Npp8u>(), src8.step(), roi, origin, dst8.as<Npp8u>(),
                                                   dst8.step(), roi, dwi, ks, anchor, 8, NPP_BORDER_REPLICATE, ctx);
            }));
            CUDA_CHECK(cudaDeviceSynchronize());
            cudaFree(dwf);
            cudaFree(dwf8);
            cudaFree(dwi);
        }

        for (const int w : gauss_ws) {
            const std::string tag = std::to_string(w) + "x" + std::to_string(w) + " @" + std::to_string(size);
            record("gaussian_mask", "f32", w, size, timer.median_ms("FilterGaussBorder_32f " + tag, [&] {
                return nppiFilterGaussBorder_32f_C1R_Ctx(src32.as<Npp32f>(), src32.step(), roi, origin,
                                                         dst32.as<Npp32f>(), dst32.step(), roi, gauss_mask(w),
                                                         NPP_BORDER_REPLICATE, ctx);
            }));
            record("gaussian_mask", "u8", w, size, timer.median_ms("FilterGaussBorder_8u " + tag, [&] {
                return nppiFilterGaussBorder_8u_C1R_Ctx(src8.as<Npp8u>(), src8.step(), roi, origin, dst8.as<Npp8u>(),
                                                        dst8.step(), roi, gauss_mask(w), NPP_BORDER_REPLICATE, ctx);
            }));
        }

        for (const int k : morph_ks) {
            auto* mask = static_cast<Npp8u*>(device_copy(std::vector<Npp8u>(size_t(k) * k, 1)));
            const NppiSize ms{k, k};
            const NppiPoint anchor{k / 2, k / 2};
            const std::string tag = std::to_string(k) + "x" + std::to_string(k) + " @" + std::to_string(size);
            record("dilate", "u8", k, size, timer.median_ms("DilateBorder_8u " + tag, [&] {
                return nppiDilateBorder_8u_C1R_Ctx(src8.as<Npp8u>(), src8.step(), roi, origin, dst8.as<Npp8u>(),
                                                   dst8.step(), roi, mask, ms, anchor, NPP_BORDER_REPLICATE, ctx);
            }));
            record("erode", "u8", k, size, timer.median_ms("ErodeBorder_8u " + tag, [&] {
                return nppiErodeBorder_8u_C1R_Ctx(src8.as<Npp8u>(), src8.step(), roi, origin, dst8.as<Npp8u>(),
                                                  dst8.step(), roi, mask, ms, anchor, NPP_BORDER_REPLICATE, ctx);
            }));
            CUDA_CHECK(cudaDeviceSynchronize());
            cudaFree(mask);
        }
    }

    if (user_set)
        for (const int size : sizes) {
            user_cases::run_type<Npp8u>("u8", true, full, size, timer, ctx, record);
            user_cases::run_type<Npp16u>("u16", full, full, size, timer, ctx, record);
            user_cases::run_type<Npp32f>("f32", full, full, size, timer, ctx, record);
        }

    if (rank_set)
        for (const int size : sizes) rank_cases::run_all(size, timer, ctx, record);

    if (out) {
        std::fclose(out);
        std::printf("npp_peers: %d rows to %s\n", rows, csv.c_str());
    }
    cudaStreamDestroy(stream);
    return 0;
}
