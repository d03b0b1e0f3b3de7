// The resume manifest (see manifest.hpp for the file format and its guarantees).
//
// Concurrency: within a process, record() and keep() serialise on a mutex and write each line with one
// write() call. Across processes: every MPI rank of a job appends to its own manifest-RANK.tsv and only
// reads the others (on resume, before any of them writes); two runs on one output directory are kept apart
// by the output folder's lock (output_lock.hpp), and should one get past it (an older apron), each line
// still names its job, so no line is taken for another job's.
//
// Reading is deliberately forgiving: a manifest is only a cache of "this output is already complete", so
// anything that does not parse, or no longer matches the file on disk, just means the image is made again.
#include "batch/manifest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "apron/errors.hpp"
#include "batch/text.hpp"
#include "core/crc32.hpp"
#include "io/file_io.hpp"

namespace apron::batch {

namespace {

constexpr const char* kMagicLine = "# apron batch manifest 2";  // manifest_version
constexpr const char* kJobPrefix = "# job ";
constexpr const char* kDirName = ".apron-batch";
constexpr std::size_t kChunk = std::size_t(1) << 20;  // file CRC: read 1 MB at a time

std::string errno_text(int e) { return std::generic_category().message(e); }

// CRC and length of everything readable from `fd`; nullopt, with the errno value in `error`, on a read error.
std::optional<std::pair<std::uint32_t, std::uint64_t>> crc_of_fd(int fd, int& error) {
    std::vector<std::uint8_t> buffer(kChunk);
    std::uint32_t crc = crc32_start();
    std::uint64_t total = 0;
    for (;;) {
        const ssize_t n = ::read(fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            error = errno;
            return std::nullopt;
        }
        if (n == 0) return std::make_pair(crc, total);
        crc = crc32_update_fast(crc, buffer.data(), std::size_t(n));
        total += std::uint64_t(n);
    }
}

// The fingerprint must stay on one header line; control characters (newlines, tabs) become spaces. The
// same mapping is applied when writing and when comparing, so it is only lossy, never inconsistent.
std::string sanitize_fingerprint(const std::string& fingerprint) {
    std::string s = fingerprint;
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    return s;
}

// Names may hold tabs, newlines or backslashes (legal in POSIX file names); escape them so that every entry
// stays one line of exactly its fields. A leading '#' is escaped too: the reader takes a line that starts
// with '#' for a comment, and an output named "#1.png" would never be found done.
std::string escape_field(const std::string& s) {
    std::string out;
    out.reserve(s.size() + 1);
    if (s.starts_with('#')) out += '\\';
    for (const char c : s) {
        switch (c) {
        case '\\': out += "\\\\"; break;
        case '\t': out += "\\t"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        default: out += c;
        }
    }
    return out;
}

// Inverse of escape_field; nullopt for anything escape_field cannot have produced (including NUL bytes,
// which no file name contains).
std::optional<std::string> unescape_field(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '\0' || c == '\r') return std::nullopt;
        if (c != '\\') {
            out += c;
            continue;
        }
        if (++i == s.size()) return std::nullopt;
        switch (s[i]) {
        case '\\': out += '\\'; break;
        case '#': out += '#'; break;
        case 't': out += '\t'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        default: return std::nullopt;
        }
    }
    return out;
}

std::optional<std::uint64_t> parse_bytes(std::string_view s) {
    if (s.empty() || s.size() > 20) return std::nullopt;
    if (!std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

std::optional<std::uint32_t> parse_crc(std::string_view s) {
    if (s.size() != 8) return std::nullopt;
    std::uint32_t v = 0;
    for (const char c : s) {
        if (c >= '0' && c <= '9') v = v << 4 | std::uint32_t(c - '0');
        else if (c >= 'a' && c <= 'f') v = v << 4 | std::uint32_t(c - 'a' + 10);
        else return std::nullopt;
    }
    return v;
}

std::optional<std::int64_t> parse_mtime(std::string_view s) {
    const bool negative = !s.empty() && s.front() == '-';  // before 1970: legal, if odd
    const auto magnitude = parse_bytes(negative ? s.substr(1) : s);
    if (!magnitude || *magnitude > std::uint64_t(INT64_MAX)) return std::nullopt;
    return negative ? -std::int64_t(*magnitude) : std::int64_t(*magnitude);
}

constexpr std::size_t kFields = 8;

// One entry line (without its '\n') and the job it names:
// OUTPUT \t BYTES \t CRC \t INPUT \t INPUT_BYTES \t INPUT_MTIME_NS \t INPUT_CRC \t JOB.
std::optional<std::pair<ManifestEntry, std::string_view>> parse_entry(std::string_view line) {
    std::string_view fields[kFields];
    std::size_t count = 0;
    std::size_t start = 0;
    for (;;) {
        const std::size_t tab = line.find('\t', start);
        if (count == kFields) return std::nullopt;  // one field too many
        fields[count++] = line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start);
        if (tab == std::string_view::npos) break;
        start = tab + 1;
    }
    if (count != kFields) return std::nullopt;
    auto output = unescape_field(fields[0]);
    auto bytes = parse_bytes(fields[1]);
    auto crc = parse_crc(fields[2]);
    auto input = unescape_field(fields[3]);
    auto input_bytes = parse_bytes(fields[4]);
    auto input_mtime = parse_mtime(fields[5]);
    auto input_crc = parse_crc(fields[6]);
    if (!output || output->empty() || !bytes || !crc || !input || !input_bytes || !input_mtime || !input_crc)
        return std::nullopt;
    return std::make_pair(ManifestEntry{std::move(*output), *bytes, *crc, std::move(*input), *input_bytes,
                                        *input_mtime, *input_crc},
                          fields[7]);
}

std::string hex8(std::uint32_t v) {
    char text[9];
    std::snprintf(text, sizeof text, "%08x", unsigned(v));
    return text;
}

std::string format_entry(const ManifestEntry& e, const std::string& job) {
    return escape_field(e.output) + '\t' + std::to_string(e.bytes) + '\t' + hex8(e.crc32) + '\t' +
           escape_field(e.input) + '\t' + std::to_string(e.input_bytes) + '\t' + std::to_string(e.input_mtime_ns) +
           '\t' + hex8(e.input_crc32) + '\t' + job + '\n';
}

// Candidate entries per output, from every manifest of this job. An output may be listed more than once
// (kept by a later run, stale entries of a rank that no longer exists, or an input that changed); the files
// on disk decide.
using Candidates = std::unordered_map<std::string, std::vector<ManifestEntry>>;

void add_candidate(Candidates& candidates, ManifestEntry entry) {
    auto& list = candidates[entry.output];
    for (const ManifestEntry& e : list)
        if (e.bytes == entry.bytes && e.crc32 == entry.crc32 && e.input_bytes == entry.input_bytes &&
            e.input_crc32 == entry.input_crc32)
            return;
    list.push_back(std::move(entry));
}

// Reads one manifest file: the entries of `job`, wherever they sit. A file of another version is not read,
// and a note says so; an empty or unreadable one is silently skipped (a crash before its header was written).
void read_manifest(const std::string& path, const std::string& job, Candidates& candidates,
                   std::vector<std::string>& notes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return;
    std::string line;
    if (!std::getline(in, line)) return;
    if (line != kMagicLine) {
        const std::string prefix = "# apron batch manifest ";
        const std::string version = line.starts_with(prefix) ? text::quoted(line.substr(prefix.size()), 20) : "";
        notes.push_back(path + ": " +
                        (version.empty() ? std::string("not an apron batch manifest")
                                         : "written in manifest version " + version + " (an older apron's)") +
                        ", not trusted: its outputs are made again");
        return;
    }
    while (std::getline(in, line)) {
        if (in.eof()) break;  // no '\n': torn by a crash in the middle of a write
        if (line.empty() || line[0] == '#') continue;
        if (auto parsed = parse_entry(line); parsed && parsed->second == job)
            add_candidate(candidates, std::move(parsed->first));
    }
}

// Size and CRC-32 of the regular file at `path` as it reads now; nullopt when it cannot be opened or read,
// or is not a regular file (FIFOs would block a plain open; O_NONBLOCK keeps them from it). When `sizes`
// lists none of its size, the file is not read at all.
std::optional<std::pair<std::uint64_t, std::uint32_t>> file_crc(const std::string& path,
                                                                 const std::vector<std::uint64_t>& sizes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    std::optional<std::pair<std::uint64_t, std::uint32_t>> result;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        std::find(sizes.begin(), sizes.end(), std::uint64_t(st.st_size)) != sizes.end())
        // What was actually read counts, not the stat size: the file may change meanwhile.
        if (int error = 0; const auto got = crc_of_fd(fd, error)) result = std::make_pair(got->second, got->first);
    ::close(fd);
    return result;
}

std::int64_t mtime_ns_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return 0;
    return std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

bool is_manifest_name(const std::string& name) {
    const std::string prefix = "manifest-", suffix = ".tsv";
    return name.size() > prefix.size() + suffix.size() && name.starts_with(prefix) && name.ends_with(suffix);
}

std::vector<std::string> manifest_files(const std::string& dir) {
    std::vector<std::string> files;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        std::error_code type_ec;
        if (is_manifest_name(name) && it->is_regular_file(type_ec)) files.push_back(it->path().string());
    }
    if (ec) fail(dir, "cannot list the batch manifests: " + ec.message());
    std::sort(files.begin(), files.end());
    return files;
}

// All of `text`, in one write() call where the kernel allows it (a line lands whole).
bool write_all(int fd, const std::string& text) { return io::write_all(fd, text.data(), text.size()); }


}  // namespace

// zlib's crc32() to the bit (manifests written before hold its CRCs), computed by core/crc32.
std::uint32_t crc32_start() { return 0; }

std::uint32_t crc32_update(std::uint32_t crc, std::span<const std::uint8_t> bytes) {
    return crc32_update_fast(crc, bytes.data(), bytes.size());
}

std::uint32_t crc32_of(std::span<const std::uint8_t> bytes) {
    return crc32_update_fast(crc32_start(), bytes.data(), bytes.size());
}

std::uint32_t crc32_of(std::string_view bytes) {
    return crc32_of(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

std::string job_id(const std::string& fingerprint) {
    std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits
    for (const char c : sanitize_fingerprint(fingerprint)) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
    return text;
}

std::uint32_t crc32_of_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, "cannot open: " + errno_text(errno));
    int error = 0;
    const auto result = crc_of_fd(fd, error);
    ::close(fd);
    if (!result) fail(path, "cannot read: " + errno_text(error));
    return result->first;
}

Manifest::Manifest(const std::string& output_dir, const std::string& fingerprint, int rank, bool resume,
                   const std::function<void()>& loaded)
    : output_dir_(output_dir.empty() ? std::string(".") : output_dir), job_(job_id(fingerprint)) {
    const std::string dir = output_dir_ + "/" + kDirName;
    if (rank < 0) fail(dir, "invalid rank " + std::to_string(rank));
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) fail(dir, "cannot create the batch directory: " + ec.message());
    if (!std::filesystem::is_directory(dir, ec)) fail(dir, "cannot create the batch directory: not a directory");

    if (resume)
        for (const std::string& file : manifest_files(dir)) read_manifest(file, job_, candidates_, notes_);

    if (loaded) loaded();  // MPI: every rank has read every manifest before any truncates its own

    // Truncating this rank's old manifest loses nothing: its entries are in candidates_ and come back
    // through keep() as the run finds them still valid.
    path_ = dir + "/manifest-" + std::to_string(rank) + ".tsv";
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0) fail(path_, "cannot create the batch manifest: " + errno_text(errno));
    errno = 0;
    if (!write_all(fd_, std::string(kMagicLine) + "\n" + kJobPrefix + sanitize_fingerprint(fingerprint) + "\n")) {
        const int error = errno ? errno : EIO;
        ::close(fd_);
        fd_ = -1;
        fail(path_, "cannot write the batch manifest: " + errno_text(error));
    }
    io::sync_directory(dir);  // the new manifest's name durable
}

Manifest::~Manifest() {
    if (fd_ < 0) return;
    ::fdatasync(fd_);  // lines written by keep() were not synced one by one
    ::close(fd_);
}

std::optional<ManifestEntry> Manifest::finished(const std::string& output, const std::string& input) const {
    const auto it = candidates_.find(output);
    if (it == candidates_.end()) return std::nullopt;
    const std::vector<ManifestEntry>& list = it->second;
    auto sizes = [&](auto field) {
        std::vector<std::uint64_t> out;
        for (const ManifestEntry& e : list) out.push_back(e.*field);
        return out;
    };
    const auto out = file_crc(output_dir_ + "/" + output, sizes(&ManifestEntry::bytes));
    if (!out) return std::nullopt;
    std::vector<const ManifestEntry*> matching;
    for (const ManifestEntry& e : list)
        if (e.bytes == out->first && e.crc32 == out->second) matching.push_back(&e);
    if (matching.empty()) return std::nullopt;
    // The input is read in full every time: its size and time may both be as recorded while its pixels
    // are not (a replacement of the same size, with an older or the same modification time).
    std::vector<std::uint64_t> input_sizes;
    for (const ManifestEntry* e : matching) input_sizes.push_back(e->input_bytes);
    const auto in = file_crc(input, input_sizes);
    if (!in) return std::nullopt;
    for (const ManifestEntry* e : matching)
        if (e->input_bytes == in->first && e->input_crc32 == in->second) {
            ManifestEntry now = *e;
            now.input = input;
            now.input_mtime_ns = mtime_ns_of(input);
            return now;
        }
    return std::nullopt;
}

void Manifest::append(const ManifestEntry& entry, bool sync) {
    const std::string line = format_entry(entry, job_);
    std::lock_guard lock(mutex_);
    errno = 0;
    if (!write_all(fd_, line)) fail(path_, "cannot write the batch manifest: " + errno_text(errno ? errno : EIO));
    // Only a line on the disk protects the output from being made again after a power loss.
    if (sync && ::fdatasync(fd_) != 0) fail(path_, "cannot write the batch manifest (fdatasync): " + errno_text(errno));
}

void Manifest::record(const ManifestEntry& entry) { append(entry, true); }

// No fdatasync per kept line: a resume may carry over many thousands of outputs, and the page cache already
// survives the process being killed. The next record() or the destructor syncs them; a line lost to a power
// cut only means that this output is made again by the next resume.
void Manifest::keep(const ManifestEntry& entry) { append(entry, false); }

}  // namespace apron::batch
