#pragma once
// The journal of a resumable streamed run (`apron filter --resume`): beside the output, ".NAME.apron-journal"
// (and ".NAME.apron-journal.N" for MPI rank N), it says which rows the partial file ".NAME.apron-partial"
// already holds, and vouches for them only as far as it can check:
//
//   apron stream journal 2
//   run RUN                        this run's identity (every rank's journal names rank 0's)
//   partial DEV INODE SIZE         the partial file it vouches for
//   memory BYTES                   the budget and band height it ran with (a resume may differ: said, not refused)
//   band-rows ROWS
//   field NAME<TAB>VALUE           the run's fingerprint (run/resume_fingerprint.hpp), one line per field
//   bands
//   band Y0 ROWS in FIRST COUNT INCRC out OUTCRC
//
// A band line records output rows [Y0, Y0 + ROWS), the input rows they were made from (FIRST may be
// negative and FIRST + COUNT past the height where the image wraps) with the CRC-32 of those rows' samples,
// and the CRC-32 of the bytes the partial file stores the output rows in; it is appended only after those
// bytes were synced. A resume trusts a band line only when it parses exactly, its output bytes still have
// their CRC, and the input rows read now still have theirs: anything else is recomputed. Bands are rows,
// not plan indices, so a resume with other band heights (another --memory) keeps every row covered.
//
// Files are created afresh (O_EXCL, after removing whatever has the name) and never opened through a link.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "run/resume_fingerprint.hpp"

namespace apron::stream {

struct JournalEntry {
    int y0 = 0, rows = 0;                // output rows
    int in_first = 0, in_rows = 0;       // input rows read (modulo the height)
    std::uint32_t in_crc = 0, out_crc = 0;
};

struct PartialIdentity {
    std::uint64_t device = 0, inode = 0, size = 0;
    bool operator==(const PartialIdentity&) const = default;
};

struct JournalHead {
    std::string run;
    PartialIdentity partial;
    std::uint64_t memory = 0;
    int band_rows = 0;
    Fingerprint fingerprint;
};

// The partial file's identity now (without following a link); nullopt when there is none.
std::optional<PartialIdentity> identify_partial(const std::string& partial);

// ".NAME.apron-journal" for the partial file ".NAME.apron-partial"; rank N's adds ".N".
std::string journal_path(const std::string& partial, int rank = 0);
// Removes every journal of this output: rank 0's (unless keep_rank_0), every rank's (whatever their number),
// half-written ones.
void remove_journals(const std::string& partial, bool keep_rank_0 = false);
// ".NAME.apron-lock": the lock `apron filter` holds on its output (io/file_lock.hpp) while it runs.
std::string lock_path(const std::string& partial);

// What a resume may keep, read from the journals of the run it continues (rank 0's and those of the other
// ranks that name the same run), after the checks that need only the journals and the partial file's
// identity. `notes` says what was set aside and why, one line each, for stderr.
struct EarlierRun {
    bool usable = false;                 // the partial file is the one the journals vouch for
    JournalHead head;
    std::vector<JournalEntry> entries;   // to be checked against the bytes (output and input)
    std::vector<std::string> notes;
};
EarlierRun read_earlier_run(const std::string& partial, const Fingerprint& now);

// One process's journal, written as bands are synced (record() from one thread).
class JournalWriter {
public:
    // Writes `head` and `carried` (entries a resume checked and keeps) to a new file, synced, then puts it
    // at `path` (a rename: a crash meanwhile leaves the earlier journal whole).
    JournalWriter(const std::string& path, const JournalHead& head, const std::vector<JournalEntry>& carried);
    ~JournalWriter();
    JournalWriter(const JournalWriter&) = delete;
    JournalWriter& operator=(const JournalWriter&) = delete;
    void record(const JournalEntry& e);  // appended and synced; apron::Error naming the journal on failure

private:
    std::string path_;
    int fd_ = -1;
};

// Parsing, exposed for the tests: one band line (without its newline); nullopt unless it parses exactly.
std::optional<JournalEntry> parse_band_line(const std::string& line);
std::string band_line(const JournalEntry& e);

}  // namespace apron::stream
