#pragma once
// The manifest of finished outputs: what makes `apron batch --resume` do only what is missing after a crash
// or kill -9. Each process (MPI rank) appends to its own file, OUTPUT_DIR/.apron-batch/manifest-RANK.tsv:
//
//   # apron batch manifest 1
//   # job FINGERPRINT                 (one line: what the outputs depend on: pipeline, options, version)
//   OUTPUT_NAME \t BYTES \t CRC32 (8 lowercase hex digits) \t INPUT_PATH
//
// Backslash, tab, newline and carriage return inside names are written as \\ \t \n \r, so every entry is one
// line of four fields; control characters in the fingerprint become spaces. Lines that do not parse are
// skipped. No lock is taken across processes: the ranks of a job never write the same file.
//
// A line is appended (and flushed to the disk) only after its output was renamed into place, so a listed
// output is complete; an output written but not yet listed when the process died is simply made again. A
// torn last line is ignored. On resume every manifest of the directory is read (whatever the number of
// ranks that wrote them), and an entry counts only if its job fingerprint is this job's and the file on disk
// still has the listed size and CRC-32.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>

namespace apron::batch {

std::uint32_t crc32_of(std::span<const std::uint8_t> bytes);
// Throws apron::Error naming the file when it cannot be read.
std::uint32_t crc32_of_file(const std::string& path);

struct ManifestEntry {
    std::string output;  // file name relative to the output directory
    std::uint64_t bytes = 0;
    std::uint32_t crc32 = 0;
    std::string input;
};

class Manifest {
public:
    // Creates OUTPUT_DIR/.apron-batch/ if needed and opens this rank's file (truncated, with a fresh header).
    // With `resume`, first loads the verified entries of every manifest there (see above).
    // `loaded` runs between the two (MPI ranks pass a barrier there: no rank truncates its file before every
    // rank has read them all). Throws apron::Error naming the directory or file on failure.
    Manifest(const std::string& output_dir, const std::string& fingerprint, int rank, bool resume,
             const std::function<void()>& loaded = {});
    ~Manifest();
    Manifest(const Manifest&) = delete;
    Manifest& operator=(const Manifest&) = delete;

    // Whether `output` (relative name) was finished by an earlier run (only with resume).
    bool done(const std::string& output) const;
    std::size_t done_count() const { return done_.size(); }
    // Appends one line and fdatasyncs it (thread-safe); throws apron::Error naming the manifest on failure.
    void record(const ManifestEntry& entry);
    // Writes an entry carried over from an earlier run (done(output)) to this rank's file again, so the
    // directory's manifests stay complete after a resume; no-op for other outputs. Not synced line by line
    // (a resume may keep thousands): the next record() or the destructor syncs them.
    void keep(const std::string& output);

private:
    std::unordered_map<std::string, ManifestEntry> done_;
    std::string path_;
    int fd_ = -1;
    std::mutex mutex_;
};

} // namespace apron::batch
