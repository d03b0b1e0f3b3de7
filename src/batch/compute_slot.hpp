#pragma once
// Where a batch's images are filtered: one slot per CUDA stream (several per GPU), or the CPU backend.
// A slot is used by one thread at a time.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "apron/image.hpp"
#include "apron/pipeline.hpp"
#include "batch/progress.hpp"

namespace apron::batch {

class ComputeSlot {
public:
    virtual ~ComputeSlot() = default;
    // out = pipeline(in); the time of upload, compute and download goes to `clock`.
    virtual void run(const Pipeline& pipeline, const RunOptions& options, ConstImageView in, ImageView out,
                     StageClock& clock) = 0;
    // The same from a JPEG file's bytes (host memory, pinned where possible), decoded where the slot computes
    // (nvJPEG on its GPU) or, for a file that decoder does not take, on the CPU. `shape` is what the CPU
    // decoder's header read says. Only slots of gpu_jpeg_available() builds take it.
    virtual void run_jpeg(const Pipeline& pipeline, const RunOptions& options, std::span<const std::uint8_t> file,
                          const std::string& name, const ImageShape& shape, ImageView out, StageClock& clock);
};

std::unique_ptr<ComputeSlot> make_cpu_slot();
// How a slot decodes JPEG: `none` (not asked to), `try_gpu` (nvJPEG where it starts, the CPU where it does
// not), `gpu` (nvJPEG, or the slot's start fails).
enum class SlotJpeg { none, try_gpu, gpu };
// A slot with its own stream and device buffers on `device` (grown to the largest image seen), and its GPU
// JPEG decoder started now (set-up) rather than at its first JPEG. Throws apron::Error without the CUDA
// backend.
std::unique_ptr<ComputeSlot> make_cuda_slot(int device, SlotJpeg jpeg = SlotJpeg::none);
// Devices usable by batches (0 without the CUDA backend or without a GPU).
int cuda_device_count();
// Whether this build decodes JPEG on the GPU (nvJPEG).
bool gpu_jpeg_available();

} // namespace apron::batch
