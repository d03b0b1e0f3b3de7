#pragma once
// What a streamed resume checks before it keeps a band of an earlier run (journal.hpp): the run's fingerprint,
// and per band the CRC-32 of the input rows it was made from and of the bytes the partial file stores it in.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apron/stream.hpp"
#include "io/row_stream.hpp"
#include "plan/plan.hpp"
#include "run/resume_fingerprint.hpp"
#include "stream/journal.hpp"

namespace apron::stream {

std::uint32_t crc_start();
// The CRC-32 of the view's rows (row_bytes each, whatever the pitch), continuing `crc`.
std::uint32_t crc_of_rows(std::uint32_t crc, ConstImageView v);
// The CRC-32 of input rows [first, first + rows), modulo the height, read now a few MiB at a time.
std::uint32_t crc_of_input(io::RowSource& source, int first, int rows);
// The CRC-32 of the bytes the partial file stores output rows [y0, y1) in; nullopt where the sink cannot say.
std::optional<std::uint32_t> crc_of_stored(const io::RowSink& sink, int y0, int y1);

// What the results depend on besides the input's pixels: the shared fingerprint (the pipeline with its
// weights, the backend and algorithm asked for, how the input is read and the output stored), the plan made
// (the backend and every step's algorithm chosen: float results differ in their last bits between them),
// and the input's size and shape. The input's content is checked per band (its rows' CRC-32).
Fingerprint stream_fingerprint(const std::string& input, const std::string& output, const io::RowSource& source,
                               const Pipeline& pipeline, const ExecutionPlan& plan, const StreamOptions& options);

// The entries whose output bytes and input rows are still what they recorded (each band kept once); `notes`
// says how many were not.
std::vector<JournalEntry> check_entries(std::vector<JournalEntry> entries, const io::RowSink& sink, io::RowSource& source,
                                        std::vector<std::string>& notes);

// The output rows the entries cover, as merged runs [y0, y1) in increasing order.
std::vector<std::pair<int, int>> covered_rows(std::vector<JournalEntry> entries);

}  // namespace apron::stream
