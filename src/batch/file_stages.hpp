#pragma once
// A batch's files: an input read whole with its CRC-32 taken as it is read, and a result encoded and written
// atomically with its CRC-32, each stage timed into the batch's clock (read, hash, pin; encode, hash, write).
#include <cstdint>
#include <string>
#include <utility>

#include "apron/image.hpp"
#include "apron/io.hpp"
#include "batch/progress.hpp"
#include "core/host_memory.hpp"
#include "io/file_io.hpp"

namespace apron::batch {

// What the manifest records of the input an output was made from.
struct InputFacts {
    std::uint64_t bytes = 0;
    std::int64_t mtime_ns = 0;
    std::uint32_t crc32 = 0;
};

// The file's bytes, into page-locked memory where `pinned` (the GPU's copy then runs at the PCIe rate from
// where the file was read), with the CRC-32 taken piece by piece as each is read: the bytes decoded are the
// bytes the manifest describes, and no second pass reads them. Throws as InputFile::read_all_into.
HostBuffer read_input(const io::InputFile& file, bool pinned, InputFacts& facts, StageClock& clock);

// Encodes `kept` for `path` and writes it atomically; its size and CRC-32 (0 unless `hashed`). Binary PNM goes
// out from the result's own rows, each chunk's CRC taken just before it is written (no encoded copy, no
// second pass; 16-bit samples are swapped in place, so `kept` is changed); other formats are encoded first.
std::pair<std::uint64_t, std::uint32_t> write_output(const std::string& path, ImageView kept, const WriteOptions& options,
                                                     ImageMetadata metadata, bool hashed, StageClock& clock);

} // namespace apron::batch
