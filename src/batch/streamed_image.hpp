#pragma once
// An image of a batch that alone does not fit the batch's memory budget, through the band engine
// (apron/stream.hpp) as `apron filter` streams it: the same bytes as a whole-image run, within the budget, on
// the batch's GPUs (or its CPU backend). The batch streams such images one at a time after the others.
#include <cstdint>
#include <string>
#include <vector>

#include "apron/batch.hpp"
#include "apron/stream.hpp"

namespace apron::batch {

// What the batch needs of a streamed image: the band plan for its note, and for the manifest and the report
// the output's size and CRC-32, the input's size, time and CRC-32 (both files read again whole), and the
// input's shape.
struct StreamedImage {
    StreamReport report;
    std::uint64_t output_bytes = 0, input_bytes = 0;
    std::uint32_t output_crc = 0, input_crc = 0;
    std::int64_t input_mtime_ns = 0;
    ImageShape shape;
};

// Streams `item` with the batch's options: `run` (its budget, out_type, algorithm), `backend` (resolved: cpu,
// reference or cuda), `devices` (the batch's GPUs). Says on stderr what the output cannot hold of the input's
// metadata (keep_metadata). Throws apron::Error (the band engine's, as `apron filter` reports it).
StreamedImage stream_image(const BatchItem& item, const BatchOptions& options, const RunOptions& run, Backend backend,
                           const std::vector<int>& devices, bool hashed);

} // namespace apron::batch
