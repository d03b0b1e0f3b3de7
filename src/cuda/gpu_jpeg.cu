// The GPU JPEG decoder (gpu_jpeg.hpp says which backend, what it takes and how close to the CPU it comes):
// a walk of the file's markers on the CPU (gpu_jpeg_markers.cpp), then nvJPEG's batched decode of one image
// into the caller's view.
#include "cuda/gpu_jpeg.hpp"

#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <map>
#include <mutex>
#include <utility>

#include "apron/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/gpu_jpeg_markers.hpp"
#include "plan/plan.hpp"  // use_cuda_device

namespace apron::cuda {

bool gpu_jpeg_built() { return true; }

namespace {

// Chroma interpolated as libjpeg-turbo's default ("fancy") upsampling does; nvJPEG has the flag from 12.1 on.
#ifdef NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION
constexpr unsigned int interpolated_chroma = NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION;
#else
#error "nvJPEG 12.1 or later is needed (NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION): configure with -DAPRON_NVJPEG=OFF"
#endif

const char* status_name(nvjpegStatus_t s) {
    switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG: return "bad JPEG data";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "out of memory";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "not supported on this GPU";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "not implemented by this backend";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "incomplete bitstream";
    default: return "unknown status";
    }
}

// Like APRON_CUDA_CHECK (cuda_check.hpp): a failing nvJPEG call becomes an apron::Error naming it.
void check_nvjpeg(nvjpegStatus_t s, const char* call) {
    if (s != NVJPEG_STATUS_SUCCESS) throw Error(std::string("nvjpeg: ") + call + ": " + status_name(s));
}
#define APRON_NVJPEG_CHECK(call) check_nvjpeg((call), #call)

// nvJPEG's library handle of one device and backend, destroyed on that device.
struct Library {
    int device = 0;
    nvjpegHandle_t handle = nullptr;
    ~Library() {
        std::shared_ptr<void> on_device;
        try {
            on_device = use_cuda_device(device);
        } catch (const Error&) {  // nothing better to do in a destructor
        }
        if (handle) nvjpegDestroy(handle);
    }
};

// A new handle, or null with why in `why` and, in `never`, whether the device can never have it (a GPU
// without a hardware decoder). The hardware handle's NO_PIPELINE flag keeps nvJPEG from holding images
// back, across calls, to fill the engines.
std::shared_ptr<Library> open_library(int device, bool hardware, std::string& why, bool& never) {
    auto library = std::make_shared<Library>();
    library->device = device;
    const unsigned int flags = interpolated_chroma | (hardware ? NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE : 0u);
    const nvjpegStatus_t s = nvjpegCreateEx(hardware ? NVJPEG_BACKEND_HARDWARE : NVJPEG_BACKEND_GPU_HYBRID, nullptr,
                                            nullptr, flags, &library->handle);
    if (s != NVJPEG_STATUS_SUCCESS) {
        library->handle = nullptr;
        why = status_name(s);
        never = s == NVJPEG_STATUS_ARCH_MISMATCH;
        return nullptr;
    }
    unsigned int engines = 0, cores_per_engine = 0;
    if (hardware && (nvjpegGetHardwareDecoderInfo(library->handle, &engines, &cores_per_engine) !=
                         NVJPEG_STATUS_SUCCESS ||
                     engines == 0)) {
        why = "no decoder engine";
        never = true;
        return nullptr;  // the handle goes with `library`
    }
    return library;
}

// The handle of `device` and backend its decoders share (nvJPEG's handle is thread-safe, and the
// hardware decoder's resources are the device's, not a compute slot's), made by the first decoder and
// destroyed with the last; null where it cannot start, with why in `why` (remembered: a GPU without a
// hardware decoder is asked once).
std::shared_ptr<Library> shared_library(int device, bool hardware, std::string& why) {
    struct Entry {
        std::mutex mutex;  // one device's handle at a time; other devices' start at once
        std::weak_ptr<Library> library;
        std::string failure;
    };
    static std::mutex mutex;
    static std::map<std::pair<int, bool>, Entry> libraries;
    Entry* found = nullptr;
    {
        const std::lock_guard<std::mutex> lock(mutex);
        found = &libraries[{device, hardware}];  // std::map: the entry stays where it is
    }
    Entry& entry = *found;
    // Starting nvJPEG's hardware decoder takes long: measured on 4 H200s, batches whose slots started it one
    // device after the other spent seconds there, so each device's start is locked on its own.
    const std::lock_guard<std::mutex> lock(entry.mutex);
    if (!entry.failure.empty()) {
        why = entry.failure;
        return nullptr;
    }
    if (std::shared_ptr<Library> library = entry.library.lock()) return library;
    bool never = false;
    std::shared_ptr<Library> library = open_library(device, hardware, why, never);
    if (library)
        entry.library = library;
    else if (never)
        entry.failure = why;  // the device's nature, not a passing failure (out of memory, say)
    return library;
}

// A batched decoder of one output format, initialised on first use: one per format, so that a batch of gray
// and colour files does not initialise nvJPEG again at every change.
struct Batched {
    nvjpegJpegState_t state = nullptr;
    bool initialised = false;
};

} // namespace

struct GpuJpegDecoder::State {
    int device = 0;
    std::shared_ptr<Library> library;
    bool hardware = false;
    nvjpegJpegStream_t parsed = nullptr;  // probe()'s header parses
    Batched gray, colour;                 // NVJPEG_OUTPUT_Y, NVJPEG_OUTPUT_RGBI
    // Recorded after each decode, waited for before the next: nvJPEG reuses its buffers (pinned staging
    // memory among them) and must not initialise a decoder while a batch runs, whatever stream comes next.
    cudaEvent_t decoded = nullptr;
    bool in_flight = false;

    nvjpegHandle_t handle() const { return library->handle; }

    void wait_for_last_decode() {
        if (!in_flight) return;
        in_flight = false;
        APRON_CUDA_CHECK(cudaEventSynchronize(decoded));
    }

    ~State() {
        // On the device they were made on; a failure to get there, or to wait, leaves nothing better to do.
        std::shared_ptr<void> on_device;
        try {
            on_device = use_cuda_device(device);
        } catch (const Error&) {
        }
        // A failure here would otherwise surface at the caller's next CUDA call.
        if (in_flight && cudaEventSynchronize(decoded) != cudaSuccess) cudaGetLastError();
        if (decoded && cudaEventDestroy(decoded) != cudaSuccess) cudaGetLastError();
        if (parsed) nvjpegJpegStreamDestroy(parsed);
        for (Batched* b : {&gray, &colour})
            if (b->state) nvjpegJpegStateDestroy(b->state);
    }  // then `library`, the last decoder's taking the handle with it
};

GpuJpegDecoder::GpuJpegDecoder(int device) : GpuJpegDecoder(device, GpuJpegBackend::automatic) {}

GpuJpegDecoder::GpuJpegDecoder(int device, GpuJpegBackend backend) : state_(std::make_unique<State>()) {
    if (device < 0) throw Error("gpu jpeg decoder: device " + std::to_string(device) + " does not exist");
    State& s = *state_;
    s.device = device;
    const std::shared_ptr<void> on_device = use_cuda_device(device);  // throws for a device that does not exist
    std::string why_not_hardware = "not asked for", why_not_gpu;
    if (backend != GpuJpegBackend::gpu) s.library = shared_library(device, true, why_not_hardware);
    s.hardware = s.library != nullptr;
    if (!s.hardware && backend == GpuJpegBackend::hardware)
        throw Error("nvjpeg: device " + std::to_string(device) + " has no hardware JPEG decoder (" + why_not_hardware +
                    ")");
    if (!s.hardware) s.library = shared_library(device, false, why_not_gpu);
    if (!s.library) throw Error("nvjpeg: cannot start on device " + std::to_string(device) + " (" + why_not_gpu + ")");
    APRON_NVJPEG_CHECK(nvjpegJpegStateCreate(s.handle(), &s.gray.state));
    APRON_NVJPEG_CHECK(nvjpegJpegStateCreate(s.handle(), &s.colour.state));
    APRON_NVJPEG_CHECK(nvjpegJpegStreamCreate(s.handle(), &s.parsed));
    APRON_CUDA_CHECK(cudaEventCreateWithFlags(&s.decoded, cudaEventDisableTiming));
}

GpuJpegDecoder::~GpuJpegDecoder() = default;

std::string GpuJpegDecoder::backend() const { return state_->hardware ? "nvJPEG hardware" : "nvJPEG GPU"; }

// Never throws for what a file holds: whatever it does not take goes to the CPU decoder, whose errors are
// the reference ones.
std::optional<ImageShape> GpuJpegDecoder::probe(std::span<const std::uint8_t> file, const std::string& /*name*/) {
    jpeg::FrameHeader frame;
    if (jpeg::read_frame_header(file, frame) || jpeg::refusal(frame)) return std::nullopt;
    State& s = *state_;
    const std::shared_ptr<void> on_device = use_cuda_device(s.device);
    if (nvjpegJpegStreamParseHeader(s.handle(), file.data(), file.size(), s.parsed) != NVJPEG_STATUS_SUCCESS)
        return std::nullopt;
    // nvJPEG must see the frame the walk saw (it would otherwise write another shape than promised).
    unsigned int width = 0, height = 0, components = 0;
    if (nvjpegJpegStreamGetFrameDimensions(s.parsed, &width, &height) != NVJPEG_STATUS_SUCCESS ||
        nvjpegJpegStreamGetComponentsNum(s.parsed, &components) != NVJPEG_STATUS_SUCCESS ||
        width != unsigned(frame.width) || height != unsigned(frame.height) || components != unsigned(frame.components))
        return std::nullopt;
    // 0: decodable. The hardware backend must say so; the GPU backend takes what it does not refuse outright.
    int unsupported = 0;
    const nvjpegStatus_t asked = nvjpegDecodeBatchedSupported(s.handle(), s.parsed, &unsupported);
    const bool refused = s.hardware ? (asked != NVJPEG_STATUS_SUCCESS || unsupported != 0)
                                    : (asked == NVJPEG_STATUS_SUCCESS && unsupported != 0);
    if (refused) return std::nullopt;
    return jpeg::shape_of(frame);
}

void GpuJpegDecoder::decode(std::span<const std::uint8_t> file, const std::string& name, ImageView out, void* stream) {
    jpeg::FrameHeader frame;
    if (const char* why = jpeg::read_frame_header(file, frame)) fail(name, std::string("bad JPEG file: ") + why);
    if (const char* why = jpeg::refusal(frame))
        fail(name, std::string("the GPU JPEG decoder does not take this file: ") + why + " (decode it on the CPU)");
    const char* damage = nullptr;
    const std::size_t length = jpeg::image_end(file, frame, damage);
    if (!length) fail(name, std::string("bad JPEG file: ") + damage);

    const ImageShape shape = jpeg::shape_of(frame);
    if (out.memory != Memory::device || !out.data || !(out.shape == shape) || out.pitch < shape.row_bytes())
        fail(name, "GPU JPEG decode: the output must be a " + std::to_string(shape.width) + "x" +
                       std::to_string(shape.height) + " u8 device view of " + std::to_string(shape.channels) +
                       " channel(s)");

    State& s = *state_;
    const std::shared_ptr<void> on_device = use_cuda_device(s.device);
    s.wait_for_last_decode();
    const nvjpegOutputFormat_t format = shape.channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGBI;
    Batched& batched = shape.channels == 1 ? s.gray : s.colour;
    if (!batched.initialised) {
        APRON_NVJPEG_CHECK(nvjpegDecodeBatchedInitialize(s.handle(), batched.state, 1, 1, format));
        batched.initialised = true;
    }
    // Interleaved RGB and Y are written to channel[0] alone, at its pitch: straight into the caller's view.
    nvjpegImage_t target{};
    target.channel[0] = reinterpret_cast<unsigned char*>(out.data);
    target.pitch[0] = out.pitch;
    const unsigned char* data = file.data();
    const auto cuda_stream = static_cast<cudaStream_t>(stream);
    const nvjpegStatus_t status = nvjpegDecodeBatched(s.handle(), batched.state, &data, &length, &target, cuda_stream);
    if (status == NVJPEG_STATUS_SUCCESS) {
        APRON_CUDA_CHECK(cudaEventRecord(s.decoded, cuda_stream));
        s.in_flight = true;
        return;
    }
    // nvJPEG: initialise the batched decoder again after a failed batch, once what it queued has run.
    batched.initialised = false;
    if (cudaStreamSynchronize(cuda_stream) != cudaSuccess) cudaGetLastError();
    if (status == NVJPEG_STATUS_BAD_JPEG || status == NVJPEG_STATUS_INCOMPLETE_BITSTREAM)
        fail(name, std::string("bad JPEG file (nvJPEG: ") + status_name(status) + ")");
    fail(name, std::string("nvJPEG decode failed: ") + status_name(status));
}

} // namespace apron::cuda
