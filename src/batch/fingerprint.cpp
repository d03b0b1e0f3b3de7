#include "batch/fingerprint.hpp"

#include "run/resume_fingerprint.hpp"

namespace apron::batch {

std::string fingerprint(const BatchOptions& o, const InputSet& inputs, const OutputNaming& naming) {
    InputReading reading;
    // The same 16-bit PNM bytes are other pixels in the other byte order.
    reading.pnm_byte_order = o.read.pnm_byte_order == ByteOrder::little ? "little" : "big";
    // nvJPEG's pixels are not libjpeg-turbo's (rounding): outputs made by the other decoder are not this job's.
    if (decodes_jpeg_on_gpu(o)) reading.jpeg_decoder = "nvjpeg";
    if (inputs.job) reading.padding = std::to_string(inputs.job->pad_x) + "," + std::to_string(inputs.job->pad_y);
    OutputStorage storage;
    storage.naming = naming.pattern;
    storage.format = naming.format ? extension_of(*naming.format) : "auto";
    storage.jpeg_quality = o.write.jpeg_quality;
    storage.metadata_stripped = !o.keep_metadata;
    storage.auto_orient = o.auto_orient;
    return resume_fingerprint(o.pipeline, o.run, reading, storage).text();
}

} // namespace apron::batch
