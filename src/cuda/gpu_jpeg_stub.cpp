// The GPU JPEG decoder of a build without nvJPEG (APRON_NVJPEG off, or a CUDA toolkit without it): nothing
// to start, so the batch engine decodes every JPEG file on the CPU.
#include "cuda/gpu_jpeg.hpp"

#include "apron/errors.hpp"

namespace apron::cuda {

bool gpu_jpeg_built() { return false; }

struct GpuJpegDecoder::State {};

GpuJpegDecoder::GpuJpegDecoder(int device) : GpuJpegDecoder(device, GpuJpegBackend::automatic) {}

GpuJpegDecoder::GpuJpegDecoder(int, GpuJpegBackend) { throw Error("nvJPEG is not in this build"); }

GpuJpegDecoder::~GpuJpegDecoder() = default;

std::string GpuJpegDecoder::backend() const { return "none"; }

std::optional<ImageShape> GpuJpegDecoder::probe(std::span<const std::uint8_t>, const std::string&) {
    return std::nullopt;
}

void GpuJpegDecoder::decode(std::span<const std::uint8_t>, const std::string& name, ImageView, void*) {
    fail(name, "nvJPEG is not in this build");
}

} // namespace apron::cuda
