// The stream journal (journal.hpp).
#include "stream/journal.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <random>
#include <string_view>
#include <system_error>

#include "apron/errors.hpp"

namespace apron::stream {

namespace {

constexpr const char* magic = "apron stream journal 2";
constexpr std::size_t max_journal_bytes = std::size_t(1) << 28;  // 256 MiB: millions of bands

std::string errno_text(int e) { return std::generic_category().message(e); }

std::string directory_of(const std::string& path) {
    const std::size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
    const std::size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

template <class T>
bool parse_number(std::string_view s, T& v) {
    if (s.empty() || s.size() > 20 || s[0] == '+') return false;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size();
}

bool parse_crc(std::string_view s, std::uint32_t& v) {
    if (s.size() != 8) return false;
    v = 0;
    for (const char c : s) {
        if (c >= '0' && c <= '9') v = v << 4 | std::uint32_t(c - '0');
        else if (c >= 'a' && c <= 'f') v = v << 4 | std::uint32_t(c - 'a' + 10);
        else return false;
    }
    return true;
}

std::vector<std::string_view> words(std::string_view line) {
    std::vector<std::string_view> w;
    std::size_t at = 0;
    while (at <= line.size()) {
        const std::size_t space = line.find(' ', at);
        w.push_back(line.substr(at, space == std::string_view::npos ? std::string_view::npos : space - at));
        if (space == std::string_view::npos) break;
        at = space + 1;
    }
    return w;
}

// The whole file, never through a link; nullopt with errno set when it cannot be read.
std::optional<std::string> read_journal_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || std::uint64_t(st.st_size) > max_journal_bytes) {
        ::close(fd);
        errno = EINVAL;
        return std::nullopt;
    }
    std::string text(std::size_t(st.st_size), '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += std::size_t(n);
    }
    ::close(fd);
    text.resize(got);
    return text;
}

struct ParsedJournal {
    JournalHead head;
    std::vector<JournalEntry> entries;
    int unparsed = 0;  // band lines that do not parse (a torn last line included)
};

// Strictly: the head's lines in their order, each exactly; nullopt (with the line that failed in `why`)
// when the head does not parse. Band lines that do not parse are counted and left out.
std::optional<ParsedJournal> parse_journal(const std::string& text, std::string& why) {
    ParsedJournal j;
    std::size_t at = 0;
    int number = 0;
    auto next = [&](std::string_view& line) {
        if (at >= text.size()) return false;
        const std::size_t end = text.find('\n', at);
        ++number;
        if (end == std::string::npos) {  // torn: written in part when the process died
            line = std::string_view(text).substr(at);
            at = text.size();
            return false;
        }
        line = std::string_view(text).substr(at, end - at);
        at = end + 1;
        return true;
    };
    auto bad = [&](const char* what) {
        why = "line " + std::to_string(number) + " (" + what + ") does not parse";
        return std::nullopt;
    };
    std::string_view line;
    if (!next(line) || line != magic) return bad("the format");
    if (!next(line) || !line.starts_with("run ") || line.size() != 4 + 16) return bad("run");
    j.head.run = std::string(line.substr(4));
    std::vector<std::string_view> w;
    if (!next(line) || (w = words(line)).size() != 4 || w[0] != "partial" || !parse_number(w[1], j.head.partial.device) ||
        !parse_number(w[2], j.head.partial.inode) || !parse_number(w[3], j.head.partial.size))
        return bad("partial");
    if (!next(line) || (w = words(line)).size() != 2 || w[0] != "memory" || !parse_number(w[1], j.head.memory))
        return bad("memory");
    if (!next(line) || (w = words(line)).size() != 2 || w[0] != "band-rows" || !parse_number(w[1], j.head.band_rows) ||
        j.head.band_rows < 1)
        return bad("band-rows");
    for (;;) {
        if (!next(line)) return bad("the fingerprint");
        if (line == "bands") break;
        const std::size_t tab = line.find('\t');
        if (!line.starts_with("field ") || tab == std::string_view::npos) return bad("a fingerprint field");
        j.head.fingerprint.add(std::string(line.substr(6, tab - 6)), std::string(line.substr(tab + 1)));
    }
    while (at < text.size()) {
        const bool whole = next(line);
        const std::optional<JournalEntry> e = whole ? parse_band_line(std::string(line)) : std::nullopt;
        if (e) j.entries.push_back(*e);
        else ++j.unparsed;
    }
    return j;
}

std::string head_text(const JournalHead& h) {
    std::string t = std::string(magic) + "\nrun " + h.run + "\npartial " + std::to_string(h.partial.device) + " " +
                    std::to_string(h.partial.inode) + " " + std::to_string(h.partial.size) + "\nmemory " +
                    std::to_string(h.memory) + "\nband-rows " + std::to_string(h.band_rows) + "\n";
    for (const FingerprintField& f : h.fingerprint.fields()) t += "field " + f.name + "\t" + f.value + "\n";
    return t + "bands\n";
}

void write_all(int fd, const std::string& s, const std::string& path) {
    std::size_t done = 0;
    while (done < s.size()) {
        const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error(path + ": cannot write the resume journal: " + errno_text(n < 0 ? errno : EIO));
        done += std::size_t(n);
    }
    if (::fdatasync(fd) != 0) throw Error(path + ": cannot write the resume journal: " + errno_text(errno));
}

// Rank journals ".N" (N >= 1) and half-written ones (".new", ".N.new") of `base`, by name, in its folder.
std::vector<std::string> journal_files(const std::string& base) {
    std::vector<std::string> found;
    const std::string dir = directory_of(base), name = name_of(base);
    DIR* d = ::opendir(dir.c_str());
    if (!d) return found;
    while (const dirent* e = ::readdir(d)) {
        const std::string_view n = e->d_name;
        if (!n.starts_with(name)) continue;
        std::string_view rest = n.substr(name.size());
        if (rest.empty()) continue;  // the base itself, removed by name
        if (!rest.starts_with(".")) continue;
        rest.remove_prefix(1);
        if (rest.ends_with(".new")) rest.remove_suffix(4);
        else if (rest == "new") rest = "0";
        if (rest.empty() || rest.find_first_not_of("0123456789") != std::string_view::npos) continue;
        found.push_back((base.find('/') == std::string::npos ? std::string() : dir + "/") + std::string(n));
    }
    ::closedir(d);
    return found;
}

}  // namespace

std::optional<JournalEntry> parse_band_line(const std::string& line) {
    const std::vector<std::string_view> w = words(line);
    JournalEntry e;
    if (w.size() != 9 || w[0] != "band" || w[3] != "in" || w[7] != "out") return std::nullopt;
    if (!parse_number(w[1], e.y0) || !parse_number(w[2], e.rows) || !parse_number(w[4], e.in_first) ||
        !parse_number(w[5], e.in_rows) || !parse_crc(w[6], e.in_crc) || !parse_crc(w[8], e.out_crc))
        return std::nullopt;
    if (e.y0 < 0 || e.rows < 1 || e.in_rows < e.rows) return std::nullopt;
    return e;
}

std::string band_line(const JournalEntry& e) {
    char crc[2][9];
    std::snprintf(crc[0], sizeof crc[0], "%08x", unsigned(e.in_crc));
    std::snprintf(crc[1], sizeof crc[1], "%08x", unsigned(e.out_crc));
    return "band " + std::to_string(e.y0) + " " + std::to_string(e.rows) + " in " + std::to_string(e.in_first) + " " +
           std::to_string(e.in_rows) + " " + crc[0] + " out " + crc[1];
}

std::optional<PartialIdentity> identify_partial(const std::string& partial) {
    struct stat st {};
    if (::lstat(partial.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    return PartialIdentity{std::uint64_t(st.st_dev), std::uint64_t(st.st_ino), std::uint64_t(st.st_size)};
}

std::string journal_path(const std::string& partial, int rank) {
    const std::string suffix = ".apron-partial";
    const std::string base = partial.substr(0, partial.size() - suffix.size()) + ".apron-journal";
    return rank ? base + "." + std::to_string(rank) : base;
}

std::string lock_path(const std::string& partial) {
    const std::string suffix = ".apron-partial";
    return partial.substr(0, partial.size() - suffix.size()) + ".apron-lock";
}

void remove_journals(const std::string& partial, bool keep_rank_0) {
    const std::string base = journal_path(partial);
    if (!keep_rank_0) ::unlink(base.c_str());
    for (const std::string& p : journal_files(base)) ::unlink(p.c_str());
}

EarlierRun read_earlier_run(const std::string& partial, const Fingerprint& now) {
    EarlierRun r;
    const std::string base = journal_path(partial);
    const std::optional<PartialIdentity> file = identify_partial(partial);
    const std::optional<std::string> text = read_journal_file(base);
    if (!text) {
        if (errno == ENOENT) {
            if (file) r.notes.push_back("no journal beside the partial file " + partial + "; starting over");
        } else {
            r.notes.push_back(base + " cannot be read as a journal (" + (errno == ELOOP ? std::string("a link, not followed") : errno_text(errno)) +
                              "); starting over");
        }
        return r;
    }
    std::string why;
    std::optional<ParsedJournal> j = parse_journal(*text, why);
    if (!j) {
        r.notes.push_back(base + ": " + why + "; starting over");
        return r;
    }
    if (const std::optional<std::string> d = now.difference_from(j->head.fingerprint)) {
        r.notes.push_back(*d + "; starting over");
        return r;
    }
    if (!file) {
        r.notes.push_back("the partial file " + partial + " is gone; starting over");
        return r;
    }
    if (!(*file == j->head.partial)) {
        r.notes.push_back("the partial file " + partial + " is not the one the journal vouches for (" +
                          (file->device == j->head.partial.device && file->inode == j->head.partial.inode
                               ? std::to_string(j->head.partial.size) + " bytes then " + std::to_string(file->size)
                               : std::string("another file")) +
                          "); starting over");
        return r;
    }
    int unparsed = j->unparsed;
    r.entries = std::move(j->entries);
    for (const std::string& path : journal_files(base)) {
        if (path.ends_with(".new")) continue;
        const std::optional<std::string> rank_text = read_journal_file(path);
        std::optional<ParsedJournal> rank = rank_text ? parse_journal(*rank_text, why) : std::nullopt;
        if (!rank || rank->head.run != j->head.run || !(rank->head.partial == j->head.partial) ||
            rank->head.fingerprint.id() != j->head.fingerprint.id()) {
            r.notes.push_back("ignoring " + path + ": it is not a journal of the run being resumed");
            continue;
        }
        unparsed += rank->unparsed;
        r.entries.insert(r.entries.end(), rank->entries.begin(), rank->entries.end());
    }
    if (unparsed)
        r.notes.push_back(std::to_string(unparsed) + " line" + (unparsed == 1 ? "" : "s") +
                          " of the journal do not parse; their rows are recomputed");
    r.usable = true;
    r.head = std::move(j->head);
    return r;
}

JournalWriter::JournalWriter(const std::string& path, const JournalHead& head, const std::vector<JournalEntry>& carried)
    : path_(path) {
    const std::string fresh = path + ".new";
    ::unlink(fresh.c_str());  // a link planted there is removed, not followed
    fd_ = ::open(fresh.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0) throw Error(fresh + ": cannot write the resume journal: " + errno_text(errno));
    std::string text = head_text(head);
    for (const JournalEntry& e : carried) text += band_line(e) + "\n";
    try {
        write_all(fd_, text, fresh);
    } catch (...) {
        ::close(fd_), fd_ = -1;
        ::unlink(fresh.c_str());
        throw;
    }
    // rename replaces whatever is at `path`, a link included, without following it.
    if (::rename(fresh.c_str(), path.c_str()) != 0) {
        const int e = errno;
        ::close(fd_), fd_ = -1;
        ::unlink(fresh.c_str());
        throw Error(path + ": cannot write the resume journal: " + errno_text(e));
    }
}

JournalWriter::~JournalWriter() {
    if (fd_ >= 0) ::close(fd_);
}

void JournalWriter::record(const JournalEntry& e) { write_all(fd_, band_line(e) + "\n", path_); }

}  // namespace apron::stream
