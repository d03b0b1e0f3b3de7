#pragma once
// Pipeline files (JSON, nlohmann-json): the operations of `apron batch --pipeline FILE`.
//
//   {
//     "ops": ["gaussian:sigma=2",
//             {"op": "dilate", "se": "ellipse:5x5"},
//             {"op": "correlate", "mask": "edge.kernel", "border": "wrap"}],
//     "out_type": "u8",        optional: u8 | u16 | f32
//     "algo": "auto"           optional: auto | direct | separable | low-rank | fft | tensor
//   }
//
// An op is either the command line's OP string or an object whose "op" is the name and whose other members
// are its parameters (strings, numbers or booleans; a number is written back as the shortest text that reads
// as the same value; arrays, objects, null and values holding ',' cannot be an op parameter and are errors).
// Relative file names in mask= and se= (an se without ':', as shapes like ellipse:5x5 have one) are relative
// to the pipeline file's directory, in OP strings as in objects. Unknown members (top level, or an object op's
// parameters) and a member given twice are errors (a typo must not be ignored), and so are files over 4 MiB,
// nesting deeper than 32 and objects of over 1024 members (no pipeline needs them; they bound hostile input).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apron/image.hpp"
#include "apron/pipeline.hpp"

namespace apron::batch {

struct PipelineFile {
    std::vector<std::string> ops;  // OP strings, each accepted by apron::parse_operation
    std::optional<PixelType> out_type;
    std::optional<Algorithm> algo;
};

// Throws apron::Error "NAME: ops[1].sigma: what is wrong" (JSON syntax errors give line and column). Each
// op is checked with parse_operation, so the file is fully validated before a batch starts.
PipelineFile parse_pipeline_file(std::string_view text, const std::string& name, const std::string& base_dir = ".");
PipelineFile read_pipeline_file(const std::string& path);

} // namespace apron::batch
