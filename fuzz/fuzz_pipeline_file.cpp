// Fuzzes the JSON pipeline-file reader: any bytes give validated OP strings or an apron::Error.
#include <cstdint>
#include <string_view>

#include "apron/errors.hpp"
#include "apron/ops.hpp"
#include "batch/pipeline_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    // Mask and structuring-element files are read by path. Relative ones are resolved under a directory that
    // does not exist; without '/' (or a JSON escape, which needs '\') no other path can be spelled.
    if (text.find('/') != std::string_view::npos || text.find('\\') != std::string_view::npos) return 0;
    try {
        const apron::batch::PipelineFile file =
            apron::batch::parse_pipeline_file(text, "fuzz.json", "/nonexistent-apron-fuzz");
        if (file.ops.empty()) __builtin_trap();
        // Every OP string handed out must parse again, as the batch engine will parse it.
        for (const auto& op : file.ops) (void)apron::parse_operation(op);
    } catch (const apron::Error&) {
    }
    return 0;
}
