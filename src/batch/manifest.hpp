#pragma once
// The manifest of finished outputs: what makes `apron batch --resume` do only what is missing after a crash
// or kill -9. Each process (MPI rank) appends to its own file, OUTPUT_DIR/.apron-batch/manifest-RANK.tsv:
//
//   # apron batch manifest 2
//   # job FINGERPRINT      (what the outputs depend on: pipeline, options, version; for people to read)
//   OUTPUT \t BYTES \t CRC32 \t INPUT \t INPUT_BYTES \t INPUT_MTIME_NS \t INPUT_CRC32 \t JOB
//
// OUTPUT is relative to the output directory; BYTES and CRC32 describe the output file, INPUT_* the input
// file it was made from (its size, modification time in nanoseconds and the CRC-32 of the bytes that were
// decoded); JOB is job_id(FINGERPRINT). CRCs are 8 lowercase hex digits, JOB 16. Backslash, tab, newline and
// carriage return inside names are written as \\ \t \n \r, so every entry is one line of eight fields;
// control characters in the fingerprint become spaces.
//
// A line is appended (and flushed to the disk) only after its output was renamed into place, so a listed
// output is complete; an output written but not yet listed when the process died is simply made again. A
// torn last line is ignored, and so is every line that does not parse.
//
// On resume every manifest of the directory is read (whatever the number of ranks that wrote them). Each
// line names its own job, so a line counts only for the job that wrote it, whatever header sits above it.
// A manifest of another version (an older apron's) is not trusted at all: its outputs are made again, and
// notes() says so. An entry then makes its output "finished" only when, at the moment it is checked,
//   - the output file has the listed size and CRC-32, and
//   - the input file now listed for that output has the recorded size and its bytes, read again in full,
//     have the recorded CRC-32 (whatever its modification time: a replaced input may carry an older one).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace apron::batch {

// A CRC-32 taken piece by piece: crc32_update(crc32_update(crc32_start(), a), b) == crc32_of(a then b).
std::uint32_t crc32_start();
std::uint32_t crc32_update(std::uint32_t crc, std::span<const std::uint8_t> bytes);
std::uint32_t crc32_of(std::span<const std::uint8_t> bytes);
std::uint32_t crc32_of(std::string_view bytes);
// Throws apron::Error naming the file when it cannot be read.
std::uint32_t crc32_of_file(const std::string& path);

// The job field of a manifest line: 16 hex digits of a 64-bit hash (FNV-1a) of the fingerprint, after
// control characters became spaces.
std::string job_id(const std::string& fingerprint);

struct ManifestEntry {
    std::string output;  // file name relative to the output directory
    std::uint64_t bytes = 0;
    std::uint32_t crc32 = 0;
    std::string input;   // the input's path, as the batch was given it
    std::uint64_t input_bytes = 0;
    std::int64_t input_mtime_ns = 0;  // recorded for people; resume compares the bytes, not the time
    std::uint32_t input_crc32 = 0;
};

// The manifest format this apron writes and trusts.
constexpr int manifest_version = 2;

class Manifest {
public:
    // Creates OUTPUT_DIR/.apron-batch/ if needed and opens this rank's file (truncated, with a fresh header).
    // With `resume`, first reads this job's entries of every manifest there (checked later, by finished()).
    // `loaded` runs between the two (MPI ranks pass a barrier there: no rank truncates its file before every
    // rank has read them all). Throws apron::Error naming the directory or file on failure.
    Manifest(const std::string& output_dir, const std::string& fingerprint, int rank, bool resume,
             const std::function<void()>& loaded = {});
    ~Manifest();
    Manifest(const Manifest&) = delete;
    Manifest& operator=(const Manifest&) = delete;

    // The entry of an earlier run of this job for `output` (relative name) whose output file and whose
    // input file `input` are both as it recorded them (see above); nullopt otherwise. Reads both files in
    // full, so it is called from the batch's I/O threads, in parallel (thread-safe). The entry returned
    // describes `input` now (its path and modification time).
    std::optional<ManifestEntry> finished(const std::string& output, const std::string& input) const;
    // Outputs with at least one entry of this job (before any check).
    std::size_t candidate_count() const { return candidates_.size(); }
    // What the reader found worth telling: manifests of another version, not trusted.
    const std::vector<std::string>& notes() const { return notes_; }

    // Appends one line and fdatasyncs it (thread-safe); throws apron::Error naming the manifest on failure.
    void record(const ManifestEntry& entry);
    // Writes an entry carried over from an earlier run (one finished() returned) to this rank's file again,
    // so the directory's manifests stay complete after a resume. Not synced line by line (a resume may keep
    // thousands): the next record() or the destructor syncs them.
    void keep(const ManifestEntry& entry);

private:
    void append(const ManifestEntry& entry, bool sync);

    std::unordered_map<std::string, std::vector<ManifestEntry>> candidates_;
    std::vector<std::string> notes_;
    std::string output_dir_;
    std::string job_;
    std::string path_;
    int fd_ = -1;
    std::mutex mutex_;
};

} // namespace apron::batch
