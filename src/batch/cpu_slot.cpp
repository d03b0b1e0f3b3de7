// The compute slot of a batch without a GPU: the CPU backend, on as many threads as RunOptions gives.
#include "batch/compute_slot.hpp"

#include "apron/errors.hpp"

namespace apron::batch {

void ComputeSlot::run_jpeg(const Pipeline&, const RunOptions&, std::span<const std::uint8_t>, const std::string& name,
                           const ImageShape&, ImageView, StageClock&) {
    throw Error(name + ": internal: this compute slot decodes no JPEG");
}

namespace {

class CpuSlot final : public ComputeSlot {
public:
    void run(const Pipeline& pipeline, const RunOptions& options, ConstImageView in, ImageView out,
             StageClock& clock) override {
        StageTimer t(clock, Stage::compute);
        pipeline.run(in, out, options);
    }
};

} // namespace

std::unique_ptr<ComputeSlot> make_cpu_slot() { return std::make_unique<CpuSlot>(); }

} // namespace apron::batch
