// A batch's compute slot on one GPU: its own stream and device buffers, so several slots per GPU overlap
// one image's upload with another's kernels and a third's download (the copy engines and the SMs are
// separate). Events between the stages time each on the GPU's own clock.
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <memory>
#include <optional>

#include "apron/io.hpp"
#include "batch/compute_slot.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/gpu_jpeg.hpp"

namespace apron::batch {
namespace {

// A device image buffer, reallocated only when an image needs more than the largest seen so far.
struct DeviceImage {
    void* data = nullptr;
    std::size_t bytes = 0;

    ImageView view(const ImageShape& shape) {
        const std::size_t pitch = (shape.row_bytes() + 255) / 256 * 256;  // rows start 256-byte aligned
        const std::size_t need = pitch * std::size_t(shape.height);
        if (need > bytes) {
            if (data) APRON_CUDA_CHECK(cudaFree(data));
            data = nullptr;
            bytes = 0;
            APRON_CUDA_CHECK(cudaMalloc(&data, need));
            bytes = need;
        }
        return ImageView{static_cast<std::byte*>(data), shape, pitch, Memory::device};
    }
    ~DeviceImage() {
        if (data) cudaFree(data);
    }
};

class CudaSlot final : public ComputeSlot {
public:
    CudaSlot(int device, SlotJpeg jpeg) : device_(device) {
        APRON_CUDA_CHECK(cudaSetDevice(device));
        APRON_CUDA_CHECK(cudaFree(nullptr));  // the device's context, now: its start is set-up, not an image's upload
        APRON_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        for (cudaEvent_t& e : marks_) APRON_CUDA_CHECK(cudaEventCreate(&e));
        if (jpeg == SlotJpeg::gpu) decoder_ = std::make_unique<cuda::GpuJpegDecoder>(device_);  // its start is slow
        if (jpeg == SlotJpeg::try_gpu) start_decoder();
    }
    ~CudaSlot() override {
        cudaSetDevice(device_);
        cudaStreamSynchronize(stream_);
        for (cudaEvent_t e : marks_) cudaEventDestroy(e);
        cudaStreamDestroy(stream_);
    }

    void run(const Pipeline& pipeline, const RunOptions& options, ConstImageView in, ImageView out,
             StageClock& clock) override {
        APRON_CUDA_CHECK(cudaSetDevice(device_));
        const ImageView d_in = in_.view(in.shape);
        APRON_CUDA_CHECK(cudaEventRecord(marks_[0], stream_));
        APRON_CUDA_CHECK(cudaMemcpy2DAsync(d_in.data, d_in.pitch, in.data, in.pitch, in.shape.row_bytes(), in.height(),
                                           cudaMemcpyHostToDevice, stream_));
        APRON_CUDA_CHECK(cudaEventRecord(marks_[1], stream_));
        clock.add_bytes(Stage::upload, std::uint64_t(in.shape.row_bytes()) * std::uint64_t(in.height()));
        filter(pipeline, options, d_in, out, Stage::upload, clock);
    }

    // Decoded here by nvJPEG, straight into the device buffer the pipeline reads: the upload is the file's
    // bytes, the decoder's own copy. Files it does not take are decoded on the CPU and run as any image.
    void run_jpeg(const Pipeline& pipeline, const RunOptions& options, std::span<const std::uint8_t> file,
                  const std::string& name, const ImageShape& shape, ImageView out, StageClock& clock) override {
        APRON_CUDA_CHECK(cudaSetDevice(device_));
        if (!decoder_ && !decoder_failed_) start_decoder();
        const std::optional<ImageShape> decoded = decoder_ ? decoder_->probe(file, name) : std::nullopt;
        if (!decoded || !(*decoded == shape)) {
            Image image;
            {
                StageTimer t(clock, Stage::decode);
                ReadOptions ro;
                ro.memory = HostMemory::pinned;
                image = decode_image(file, name, ro);
            }
            return run(pipeline, options, std::as_const(image).view(), out, clock);
        }
        const ImageView d_in = in_.view(shape);
        APRON_CUDA_CHECK(cudaEventRecord(marks_[0], stream_));
        decoder_->decode(file, name, d_in, stream_);
        APRON_CUDA_CHECK(cudaEventRecord(marks_[1], stream_));
        clock.add_bytes(Stage::decode, file.size());
        filter(pipeline, options, d_in, out, Stage::decode, clock);
    }

private:
    // nvJPEG on this slot's device; where it cannot start (a driver without it, no memory for its buffers),
    // this slot decodes its JPEG files on the CPU, as the batch would without nvJPEG.
    void start_decoder() {
        try {
            decoder_ = std::make_unique<cuda::GpuJpegDecoder>(device_);
        } catch (const Error&) {
            decoder_failed_ = true;
        }
    }

    // The pipeline on d_in into the host image out, after marks_[0..1] timed `first` (the upload or the GPU
    // decode): then the kernels and the download, each timed by events on this slot's stream.
    void filter(const Pipeline& pipeline, const RunOptions& options, ImageView d_in, ImageView out, Stage first,
                StageClock& clock) {
        const ImageView d_out = out_.view(out.shape);
        RunOptions o = options;
        o.backend = Backend::cuda;
        o.cuda_stream = stream_;
        o.timings = nullptr;
        pipeline.run(as_const(d_in), d_out, o);  // ordered on stream_, returns without waiting
        APRON_CUDA_CHECK(cudaEventRecord(marks_[2], stream_));
        APRON_CUDA_CHECK(cudaMemcpy2DAsync(out.data, out.pitch, d_out.data, d_out.pitch, out.shape.row_bytes(),
                                           out.height(), cudaMemcpyDeviceToHost, stream_));
        APRON_CUDA_CHECK(cudaEventRecord(marks_[3], stream_));
        APRON_CUDA_CHECK(cudaStreamSynchronize(stream_));
        const Stage stages[3] = {first, Stage::compute, Stage::download};
        for (int s = 0; s < 3; ++s) {
            float ms = 0;
            APRON_CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[s], marks_[s + 1]));
            clock.add(stages[s], ms * 1e-3);
        }
        clock.add_bytes(Stage::download, std::uint64_t(out.shape.row_bytes()) * std::uint64_t(out.height()));
    }

    int device_;
    cudaStream_t stream_ = nullptr;
    std::array<cudaEvent_t, 4> marks_{};
    DeviceImage in_, out_;
    std::unique_ptr<cuda::GpuJpegDecoder> decoder_;  // made at the slot's start, or at its first JPEG
    bool decoder_failed_ = false;                     // nvJPEG did not start here: the CPU decodes
};

} // namespace

std::unique_ptr<ComputeSlot> make_cuda_slot(int device, SlotJpeg jpeg) { return std::make_unique<CudaSlot>(device, jpeg); }

bool gpu_jpeg_available() { return cuda::gpu_jpeg_built(); }

int cuda_device_count() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return count;
}

} // namespace apron::batch
