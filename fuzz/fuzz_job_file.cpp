// Fuzzes the GenConv job-file reader and the job/list detection: any bytes give a job or an apron::Error,
// with `bits 32` read either way (refused as GenConv's int32, or taken as float), and a job that parses is
// consistent with itself.
#include <cstdint>
#include <string_view>

#include "apron/errors.hpp"
#include "batch/job_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)apron::batch::looks_like_job_file(text);
    for (const auto bits32 : {apron::batch::JobBits32::int32, apron::batch::JobBits32::float32}) {
        apron::batch::JobOptions options;
        options.bits32 = bits32;
        try {
            const apron::batch::JobFile job = apron::batch::parse_job_file(text, "fuzz.job", options);
            const bool bits_ok = job.bits == 8 || job.bits == 16 ||
                                 (job.bits == 32 && bits32 == apron::batch::JobBits32::float32);
            const bool consistent = bits_ok && job.bits_line >= 1 && job.count >= 0 &&
                                    std::size_t(job.count) == job.paths.size() &&
                                    job.paths.size() == job.path_lines.size() && 2 * job.pad_x < job.max_width &&
                                    2 * job.pad_y < job.max_height && job.pad_x >= 0 && job.pad_y >= 0;
            if (!consistent) __builtin_trap();
            for (const auto& path : job.paths)
                if (path.empty() || path.front() == '#') __builtin_trap();
        } catch (const apron::Error&) {
        }
    }
    return 0;
}
