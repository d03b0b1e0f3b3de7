// A batch's image larger than its memory budget, streamed in bands (streamed_image.hpp).
#include "batch/streamed_image.hpp"

#include <algorithm>
#include <cstdio>

#include "apron/io.hpp"
#include "batch/manifest.hpp"
#include "core/usable_cores.hpp"
#include "io/file_io.hpp"

namespace apron::batch {

StreamedImage stream_image(const BatchItem& item, const BatchOptions& options, const RunOptions& run, Backend backend,
                           const std::vector<int>& devices, bool hashed) {
    StreamOptions so;
    so.run = run;
    so.run.backend = backend;
    so.pnm_byte_order = options.read.pnm_byte_order;
    so.devices = devices;
    so.io_threads = std::clamp(options.io_threads > 0 ? options.io_threads : usable_cores(), 1, 64);
    ReadOptions header = options.read;
    header.max_pixels = std::uint64_t(1) << 62;  // the band engine's own limits apply
    header.memory_budget = 0;                      // segments before the pixels, never the whole file
    StreamedImage s;
    s.shape = probe_image(item.input, header);
    if (options.keep_metadata) {
        so.metadata = read_metadata(item.input, header);
        const std::string note = fit_metadata(so.metadata, format_for_path(item.output), item.output, s.shape,
                                              options.pipeline.output_shape(s.shape, run), true);
        if (!note.empty()) std::fprintf(stderr, "apron: %s\n", note.c_str());
    }
    s.report = stream_filter(item.input, item.output, options.pipeline, so);
    const io::InputFile in(item.input), out(item.output);
    s.input_bytes = in.size();
    s.input_mtime_ns = in.mtime_ns();
    s.output_bytes = out.size();
    if (hashed) {
        s.input_crc = crc32_of_file(item.input);
        s.output_crc = crc32_of_file(item.output);
    }
    return s;
}

} // namespace apron::batch
