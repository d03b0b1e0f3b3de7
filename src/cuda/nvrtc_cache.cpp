// NVRTC through dlopen, the disk cache of compiled binaries and the in-memory cache of loaded kernels
// (see nvrtc_cache.hpp).
#include "core/overrides.hpp"
#include "cuda/nvrtc_cache.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "apron/errors.hpp"
#include "cuda/rtc_source.hpp"

#ifndef APRON_NVRTC_SONAME
#define APRON_NVRTC_SONAME "libnvrtc.so"
#endif
#ifndef APRON_NVRTC_PATH
#define APRON_NVRTC_PATH ""
#endif

namespace apron::cuda::rtc {
namespace {

// ---- NVRTC, opened on first use ----------------------------------------------------------------------
struct Nvrtc {
    bool ok = false;
    std::string why, version;
    decltype(&::nvrtcVersion) version_fn = nullptr;
    decltype(&::nvrtcGetErrorString) error_string = nullptr;
    decltype(&::nvrtcCreateProgram) create = nullptr;
    decltype(&::nvrtcCompileProgram) compile = nullptr;
    decltype(&::nvrtcDestroyProgram) destroy = nullptr;
    decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
    decltype(&::nvrtcGetProgramLog) log = nullptr;
    decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
    decltype(&::nvrtcGetCUBIN) cubin = nullptr;
    decltype(&::nvrtcGetPTXSize) ptx_size = nullptr;
    decltype(&::nvrtcGetPTX) ptx = nullptr;
    decltype(&::nvrtcGetNumSupportedArchs) num_archs = nullptr;
    decltype(&::nvrtcGetSupportedArchs) archs = nullptr;
    std::vector<int> supported;  // compute capabilities NVRTC compiles for, ascending
};

template <class F>
bool symbol(void* lib, const char* name, F* out) {
    *out = reinterpret_cast<F>(dlsym(lib, name));
    return *out != nullptr;
}

const Nvrtc& nvrtc() {
    static const Nvrtc n = [] {
        Nvrtc r;
        void* lib = nullptr;
        std::string tried;
        for (const char* name : {APRON_NVRTC_SONAME, APRON_NVRTC_PATH, "libnvrtc.so"}) {
            if (!*name) continue;
            lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
            if (lib) break;
            tried += std::string(tried.empty() ? "" : ", ") + name;
        }
        if (!lib) {
            r.why = "NVRTC not found (tried " + tried + "); install the CUDA toolkit's NVRTC library";
            return r;
        }
        const bool all = symbol(lib, "nvrtcVersion", &r.version_fn) && symbol(lib, "nvrtcGetErrorString", &r.error_string) &&
                         symbol(lib, "nvrtcCreateProgram", &r.create) && symbol(lib, "nvrtcCompileProgram", &r.compile) &&
                         symbol(lib, "nvrtcDestroyProgram", &r.destroy) &&
                         symbol(lib, "nvrtcGetProgramLogSize", &r.log_size) && symbol(lib, "nvrtcGetProgramLog", &r.log) &&
                         symbol(lib, "nvrtcGetCUBINSize", &r.cubin_size) && symbol(lib, "nvrtcGetCUBIN", &r.cubin) &&
                         symbol(lib, "nvrtcGetPTXSize", &r.ptx_size) && symbol(lib, "nvrtcGetPTX", &r.ptx) &&
                         symbol(lib, "nvrtcGetNumSupportedArchs", &r.num_archs) &&
                         symbol(lib, "nvrtcGetSupportedArchs", &r.archs);
        if (!all) {
            r.why = "the NVRTC library found lacks functions apron needs (too old)";
            return r;
        }
        int major = 0, minor = 0, count = 0;
        r.version_fn(&major, &minor);
        r.version = std::to_string(major) + "." + std::to_string(minor);
        if (r.num_archs(&count) == NVRTC_SUCCESS && count > 0) {
            r.supported.resize(std::size_t(count));
            if (r.archs(r.supported.data()) != NVRTC_SUCCESS) r.supported.clear();
        }
        r.ok = true;
        return r;
    }();
    return n;
}

const Nvrtc& need_nvrtc() {
    const Nvrtc& n = nvrtc();
    if (!n.ok) throw Error("runtime_direct: " + n.why);
    return n;
}

// The first line of the log that reports an error (else its first line).
std::string first_error_line(const std::string& log) {
    std::istringstream in(log);
    std::string line, first;
    while (std::getline(in, line)) {
        if (first.empty() && !line.empty()) first = line;
        if (line.find("error") != std::string::npos) return line;
    }
    return first.empty() ? "(no log)" : first;
}

// ---- the caches ----------------------------------------------------------------------------------------
std::mutex cache_mutex;  // guards the counters and the loaded kernels (not held while NVRTC compiles)
CacheStats stats;
std::unordered_map<std::string, CUfunction> loaded;  // device + '\n' + source -> function

std::uint64_t fnv1a(const std::string& s) {
    std::uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    return h;
}

std::filesystem::path cache_dir() { return environment_settings().rtc_cache_dir; }  // "" : no disk cache

// ---- the driver API, through the runtime's entry points ----------------------------------------------------
struct Driver {
    decltype(&::cuModuleLoadData) load = nullptr;
    decltype(&::cuModuleGetFunction) get_function = nullptr;
    decltype(&::cuFuncSetAttribute) set_attribute = nullptr;
    decltype(&::cuLaunchKernel) launch = nullptr;
    decltype(&::cuGetErrorString) error_string = nullptr;
};

template <class F>
void entry(const char* name, F* out) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult status{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status);
    if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || !fn) {
        cudaGetLastError();
        throw Error(std::string("runtime_direct: the CUDA driver has no ") + name);
    }
    *out = reinterpret_cast<F>(fn);
}

const Driver& driver() {
    static const Driver d = [] {
        Driver r;
        entry("cuModuleLoadData", &r.load);
        entry("cuModuleGetFunction", &r.get_function);
        entry("cuFuncSetAttribute", &r.set_attribute);
        entry("cuLaunchKernel", &r.launch);
        entry("cuGetErrorString", &r.error_string);
        return r;
    }();
    return d;
}

void check(CUresult r, const char* what) {
    if (r == CUDA_SUCCESS) return;
    const char* s = nullptr;
    if (driver().error_string) driver().error_string(r, &s);
    throw Error(std::string("runtime_direct: ") + what + ": " + (s ? s : "CUDA driver error " + std::to_string(int(r))));
}

void check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    cudaGetLastError();
    throw Error(std::string("runtime_direct: ") + what + ": " + cudaGetErrorString(e));
}

} // namespace

bool nvrtc_available(std::string* why) {
    const Nvrtc& n = nvrtc();
    if (!n.ok && why) *why = n.why;
    return n.ok;
}

std::string nvrtc_version() { return nvrtc().version; }

Binary compile(const std::string& source, int arch) {
    const Nvrtc& n = need_nvrtc();
    // A cubin for the device's own architecture when NVRTC knows it; else PTX for the newest it knows below.
    Binary b;
    int target = arch;
    bool known = n.supported.empty();
    for (int a : n.supported) known = known || a == arch;
    if (!known) {
        target = 0;
        for (int a : n.supported)
            if (a <= arch) target = a;
        if (!target) throw Error("runtime_direct: NVRTC " + n.version + " cannot compile for compute capability " +
                                 std::to_string(arch / 10) + "." + std::to_string(arch % 10));
        b.ptx = true;
    }
    const std::string arch_option = std::string("--gpu-architecture=") + (b.ptx ? "compute_" : "sm_") + std::to_string(target);
    const std::vector<EmbeddedHeader>& headers = embedded_headers();
    std::vector<const char*> names, texts;
    for (const EmbeddedHeader& h : headers) names.push_back(h.name), texts.push_back(h.text);
    nvrtcProgram prog = nullptr;
    nvrtcResult r = n.create(&prog, source.c_str(), "apron_rtc.cu", int(headers.size()), texts.data(), names.data());
    if (r != NVRTC_SUCCESS) throw Error(std::string("runtime_direct: nvrtcCreateProgram: ") + n.error_string(r));
    // No fast maths: the exact paths and the float tolerance rest on IEEE arithmetic.
    const char* options[] = {arch_option.c_str(), "-default-device", "-std=c++17", "-DAPRON_RTC=1"};
    r = n.compile(prog, int(sizeof options / sizeof options[0]), options);
    std::string log;
    std::size_t log_bytes = 0;
    if (n.log_size(prog, &log_bytes) == NVRTC_SUCCESS && log_bytes > 1) {
        log.resize(log_bytes);
        n.log(prog, log.data());
        log.resize(log_bytes - 1);
    }
    if (r != NVRTC_SUCCESS) {
        n.destroy(&prog);
        throw Error("runtime_direct: NVRTC could not compile the generated kernel: " + first_error_line(log));
    }
    std::size_t bytes = 0;
    r = b.ptx ? n.ptx_size(prog, &bytes) : n.cubin_size(prog, &bytes);
    if (r == NVRTC_SUCCESS) {
        b.data.resize(bytes);
        r = b.ptx ? n.ptx(prog, b.data.data()) : n.cubin(prog, b.data.data());
    }
    n.destroy(&prog);
    if (r != NVRTC_SUCCESS) throw Error(std::string("runtime_direct: NVRTC output: ") + n.error_string(r));
    return b;
}

Binary compile_cached(const std::string& source, int arch) {
    const std::string key = "apron-rtc 1\narch " + std::to_string(arch) + "\nnvrtc " + nvrtc_version() + "\n" + source;
    const std::filesystem::path dir = cache_dir();
    char name[40];
    std::snprintf(name, sizeof name, "rtc-%016llx.bin", static_cast<unsigned long long>(fnv1a(key)));
    const std::filesystem::path file = dir.empty() ? std::filesystem::path() : dir / name;
    if (!file.empty()) {
        // Layout: key, a NUL, one byte (1: PTX), the binary.
        std::ifstream in(file, std::ios::binary);
        if (in) {
            std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            if (all.size() > key.size() + 2 && all.compare(0, key.size(), key) == 0 && all[key.size()] == '\0') {
                Binary b;
                b.ptx = all[key.size() + 1] == '1';
                b.data = all.substr(key.size() + 2);
                std::lock_guard<std::mutex> lock(cache_mutex);
                ++stats.disk_hits;
                return b;
            }
        }
    }
    Binary b = compile(source, arch);
    {
        std::lock_guard<std::mutex> lock(cache_mutex);
        ++stats.compiles;
    }
    if (!file.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        // The process id and 64 random bits: a cache in a shared home directory is written by processes of
        // several nodes, whose ids may be equal.
        std::random_device random;
        const std::uint64_t salt = (std::uint64_t(random()) << 32) ^ random();
        const std::filesystem::path tmp = file.string() + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(salt);
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            out.write(key.data(), std::streamsize(key.size()));
            out.put('\0');
            out.put(b.ptx ? '1' : '0');
            out.write(b.data.data(), std::streamsize(b.data.size()));
            if (!out) ec = std::make_error_code(std::errc::io_error);
        }
        if (!ec) std::filesystem::rename(tmp, file, ec);  // atomic: readers see a whole file or none
        if (ec) std::filesystem::remove(tmp, ec);
    }
    return b;
}

void* load_kernel(const std::string& source, const char* entry_name, std::size_t shared_bytes) {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    // The runtime's primary context of this device, current on this thread (modules load into it).
    check(cudaSetDevice(device), "cudaSetDevice");
    const std::string key = std::to_string(device) + "\n" + source;
    {
        std::lock_guard<std::mutex> lock(cache_mutex);
        if (auto it = loaded.find(key); it != loaded.end()) {
            ++stats.memory_hits;
            return it->second;
        }
    }
    int major = 0, minor = 0;
    check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "compute capability");
    check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "compute capability");
    // Compiled outside the lock (compiles of different sources may overlap); a source compiled twice by two
    // threads at once is loaded once: the first to insert wins.
    const Binary b = compile_cached(source, 10 * major + minor);
    const Driver& d = driver();
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (auto it = loaded.find(key); it != loaded.end()) return it->second;
    CUmodule module = nullptr;
    check(d.load(&module, b.data.c_str()), "loading the compiled kernel");  // never unloaded: lives with the process
    CUfunction f = nullptr;
    check(d.get_function(&f, module, entry_name), "cuModuleGetFunction");
    if (shared_bytes > 48 * 1024)
        check(d.set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(shared_bytes)), "shared memory opt-in");
    ++stats.modules;
    loaded.emplace(key, f);
    return f;
}

void launch_kernel(void* function, unsigned grid_x, unsigned grid_y, unsigned block_x, unsigned block_y,
                   std::size_t shared_bytes, void* stream, void** args) {
    check(driver().launch(static_cast<CUfunction>(function), grid_x, grid_y, 1, block_x, block_y, 1,
                          unsigned(shared_bytes), static_cast<CUstream>(stream), args, nullptr),
          "cuLaunchKernel");
}

CacheStats cache_stats() {
    std::lock_guard<std::mutex> lock(cache_mutex);
    return stats;
}

} // namespace apron::cuda::rtc
