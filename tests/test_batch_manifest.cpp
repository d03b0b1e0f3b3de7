// `apron batch` bookkeeping: the resume manifest (CRC-32, entries checked against the output and the input
// it was made from, one job per line, torn and garbage lines, several ranks, keep, errors, other versions)
// and the progress bar / stage summary. Self-contained: only files in a scratch directory.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apron/errors.hpp"
#include "batch/manifest.hpp"
#include "batch/progress.hpp"

namespace apron::batch {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

void write_text(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string header(const std::string& fingerprint) { return "# apron batch manifest 2\n# job " + fingerprint + "\n"; }

std::string hex8(std::uint32_t v) {
    char s[9];
    std::snprintf(s, sizeof s, "%08x", unsigned(v));
    return s;
}

std::int64_t mtime_ns(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

void set_mtime_ns(const std::string& path, std::int64_t ns) {
    const struct timespec times[2] = {{ns / 1000000000, long(ns % 1000000000)}, {ns / 1000000000, long(ns % 1000000000)}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

// A scratch output directory per test, removed afterwards. Each output NAME is made from the input in/NAME.
class BatchManifest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string tmpl = (fs::temp_directory_path() / "apron-manifest-test-XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    std::string path(const std::string& relative) const { return dir_ + "/" + relative; }
    std::string input_of(const std::string& output) const { return path("in/" + output); }
    std::string manifest_path(int rank) const { return path(".apron-batch/manifest-" + std::to_string(rank) + ".tsv"); }

    // Writes an output file and the input it is made from; returns the entry describing both.
    ManifestEntry make_output(const std::string& name, const std::string& content, const std::string& input_content = "") {
        write_text(path(name), content);
        const std::string input = input_of(name);
        const std::string in = input_content.empty() ? "pixels of " + name : input_content;
        write_text(input, in);
        return {name, content.size(), crc32_of(bytes_of(content)), input, in.size(), mtime_ns(input),
                crc32_of(bytes_of(in))};
    }

    std::string entry_line(const ManifestEntry& e, const std::string& fingerprint = "") const {
        return e.output + "\t" + std::to_string(e.bytes) + "\t" + hex8(e.crc32) + "\t" + e.input + "\t" +
               std::to_string(e.input_bytes) + "\t" + std::to_string(e.input_mtime_ns) + "\t" + hex8(e.input_crc32) +
               "\t" + job_id(fingerprint.empty() ? job_ : fingerprint) + "\n";
    }

    // Whether `m` takes output NAME as finished, made from in/NAME.
    bool done(const Manifest& m, const std::string& name) const { return m.finished(name, input_of(name)).has_value(); }

    std::string dir_;
    const std::string job_ = "pipeline=gauss:3 format=png version=1";
};

TEST_F(BatchManifest, Crc32KnownVectors) {
    EXPECT_EQ(crc32_of(bytes_of("123456789")), 0xCBF43926u);
    EXPECT_EQ(crc32_of(bytes_of("The quick brown fox jumps over the lazy dog")), 0x414FA339u);
    EXPECT_EQ(crc32_of(std::string_view("123456789")), 0xCBF43926u);
    EXPECT_EQ(crc32_of(std::span<const std::uint8_t>{}), 0u);
}

TEST_F(BatchManifest, Crc32OfFileEqualsInMemoryCrc) {
    // Larger than the 1 MB read chunk and not a multiple of it, so the streaming is exercised.
    std::vector<std::uint8_t> data(3 * (1 << 20) + 17);
    std::mt19937 rng(7);
    for (auto& b : data) b = std::uint8_t(rng());
    std::ofstream(path("big.bin"), std::ios::binary).write(reinterpret_cast<const char*>(data.data()), data.size());
    EXPECT_EQ(crc32_of_file(path("big.bin")), crc32_of(data));

    write_text(path("check.txt"), "123456789");
    EXPECT_EQ(crc32_of_file(path("check.txt")), 0xCBF43926u);
    write_text(path("empty"), "");
    EXPECT_EQ(crc32_of_file(path("empty")), 0u);
}

TEST_F(BatchManifest, Crc32OfUnreadableFileNamesIt) {
    try {
        crc32_of_file(path("missing.png"));
        FAIL() << "no error";
    } catch (const apron::Error& e) {
        EXPECT_NE(std::string(e.what()).find(path("missing.png")), std::string::npos) << e.what();
    }
    fs::create_directory(path("a-directory"));
    try {
        crc32_of_file(path("a-directory"));
        FAIL() << "no error";
    } catch (const apron::Error& e) {
        EXPECT_NE(std::string(e.what()).find(path("a-directory") + ": cannot read"), std::string::npos) << e.what();
    }
}

TEST_F(BatchManifest, JobIdIsAStableHashOfTheFingerprint) {
    EXPECT_EQ(job_id(""), "cbf29ce484222325");  // FNV-1a's offset basis: nothing hashed
    EXPECT_EQ(job_id("a"), "af63dc4c8601ec8c");
    EXPECT_EQ(job_id(job_).size(), 16u);
    EXPECT_NE(job_id(job_), job_id(job_ + " "));
    EXPECT_EQ(job_id("line one\nline\ttwo"), job_id("line one line two"));  // as the header shows it
}

TEST_F(BatchManifest, RecordWritesHeaderAndOneLinePerEntry) {
    ManifestEntry e;
    {
        Manifest m(dir_, job_, 0, false);
        e = make_output("a.png", "hello", "input");
        e.input_mtime_ns = 1234567890123456789;
        m.record(e);
    }
    EXPECT_EQ(read_text(manifest_path(0)), header(job_) + "a.png\t5\t3610a686\t" + input_of("a.png") +
                                               "\t5\t1234567890123456789\t" + hex8(crc32_of(bytes_of("input"))) +
                                               "\t" + job_id(job_) + "\n");
}

TEST_F(BatchManifest, RoundTripMarksRecordedOutputsDone) {
    {
        Manifest m(dir_, job_, 0, false);
        EXPECT_EQ(m.candidate_count(), 0u);
        m.record(make_output("a.png", "first image"));
        m.record(make_output("sub/b.png", "second image, in a subdirectory"));
        make_output("c.png", "written but never recorded: the process died before");
    }
    Manifest m(dir_, job_, 0, true);
    EXPECT_TRUE(done(m, "a.png"));
    EXPECT_TRUE(done(m, "sub/b.png"));
    EXPECT_FALSE(done(m, "c.png"));
    EXPECT_FALSE(done(m, "missing.png"));
    EXPECT_EQ(m.candidate_count(), 2u);
    EXPECT_TRUE(m.notes().empty());
}

TEST_F(BatchManifest, ModifiedOutputOfSameSizeIsNotDone) {
    {
        Manifest m(dir_, job_, 0, false);
        m.record(make_output("a.png", "abcdefgh"));
        m.record(make_output("b.png", "unchanged"));
    }
    write_text(path("a.png"), "abcdefgX");
    Manifest m(dir_, job_, 0, true);
    EXPECT_FALSE(done(m, "a.png"));
    EXPECT_TRUE(done(m, "b.png"));
}

TEST_F(BatchManifest, ResizedOrDeletedOutputIsNotDone) {
    {
        Manifest m(dir_, job_, 0, false);
        m.record(make_output("a.png", "abcdefgh"));
        m.record(make_output("b.png", "will be truncated"));
        m.record(make_output("c.png", "stays"));
    }
    fs::remove(path("a.png"));
    write_text(path("b.png"), "will be");
    Manifest m(dir_, job_, 0, true);
    EXPECT_FALSE(done(m, "a.png"));
    EXPECT_FALSE(done(m, "b.png"));
    EXPECT_TRUE(done(m, "c.png"));
}

TEST_F(BatchManifest, OutputReplacedByDirectoryIsNotDone) {
    {
        Manifest m(dir_, job_, 0, false);
        m.record(make_output("a.png", ""));
    }
    fs::remove(path("a.png"));
    fs::create_directory(path("a.png"));
    Manifest m(dir_, job_, 0, true);
    EXPECT_FALSE(done(m, "a.png"));
}

// The input's pixels changed but its size did not, and its modification time is older than before (or the
// same): the output made from the old pixels is not finished.
TEST_F(BatchManifest, ChangedInputOfSameSizeAndOlderOrSameTimeIsNotDone) {
    ManifestEntry a, b;
    {
        Manifest m(dir_, job_, 0, false);
        a = make_output("a.png", "output of a", "input pixels A");
        b = make_output("b.png", "output of b", "input pixels B");
        m.record(a);
        m.record(b);
    }
    write_text(input_of("a.png"), "input pixels X");  // same size
    set_mtime_ns(input_of("a.png"), a.input_mtime_ns - 3600'000000000LL);
    write_text(input_of("b.png"), "input pixels Y");
    set_mtime_ns(input_of("b.png"), b.input_mtime_ns);  // exactly the recorded time
    {
        Manifest m(dir_, job_, 1, true);  // rank 1: manifest-0.tsv stays as it is
        EXPECT_FALSE(done(m, "a.png"));
        EXPECT_FALSE(done(m, "b.png"));
    }
    // Back to the recorded bytes, with a new time: finished again (the time is not what is compared).
    write_text(input_of("a.png"), "input pixels A");
    Manifest m(dir_, job_, 2, true);
    EXPECT_TRUE(done(m, "a.png"));
    const auto entry = m.finished("a.png", input_of("a.png"));
    ASSERT_TRUE(entry.has_value());
    EXPECT_EQ(entry->input_mtime_ns, mtime_ns(input_of("a.png")));  // the entry describes the input now
}

TEST_F(BatchManifest, InputResizedDeletedOrNotARegularFileIsNotDone) {
    {
        Manifest m(dir_, job_, 0, false);
        m.record(make_output("a.png", "out a"));
        m.record(make_output("b.png", "out b"));
        m.record(make_output("c.png", "out c"));
    }
    write_text(input_of("a.png"), "pixels of a.png, and more");
    fs::remove(input_of("b.png"));
    fs::remove(input_of("c.png"));
    ASSERT_EQ(::mkfifo(input_of("c.png").c_str(), 0644), 0);  // must not block the check
    Manifest m(dir_, job_, 0, true);
    EXPECT_FALSE(done(m, "a.png"));
    EXPECT_FALSE(done(m, "b.png"));
    EXPECT_FALSE(done(m, "c.png"));
}

// Which input an output is checked against is the caller's: the batch lists it now.
TEST_F(BatchManifest, OutputIsCheckedAgainstTheInputListedNow) {
    {
        Manifest m(dir_, job_, 0, false);
        m.record(make_output("a.png", "out a", "pixels"));
    }
    write_text(path("elsewhere/same.pgm"), "pixels");  // the same bytes under another path: the same output
    write_text(path("elsewhere/other.pgm"), "pixelz");
    Manifest m(dir_, job_, 0, true);
    EXPECT_TRUE(m.finished("a.png", path("elsewhere/same.pgm")).has_value());
    EXPECT_FALSE(m.finished("a.png", path("elsewhere/other.pgm")).has_value());
}

TEST_F(BatchManifest, OtherFingerprintCountsForNothing) {
    {
        Manifest m(dir_, job_, 0, false);
        m.record(make_output("a.png", "content"));
    }
    Manifest other(dir_, job_ + " sigma=2", 0, true);
    EXPECT_FALSE(done(other, "a.png"));
    EXPECT_EQ(other.candidate_count(), 0u);
}

// Two jobs wrote one manifest file (each truncated it and appended at its own offset): the header above
// names one job, the lines below belong to both. Each line counts for its own job only.
TEST_F(BatchManifest, LinesCountOnlyForTheJobThatWroteThemWhateverTheHeader) {
    const std::string other = job_ + " dilate";
    const ManifestEntry mine = make_output("a.png", "made by this job");
    const ManifestEntry theirs = make_output("b.png", "made by the other job");
    write_text(manifest_path(0), header(other) + entry_line(theirs, other) + entry_line(mine));
    write_text(manifest_path(1), header(job_) + entry_line(theirs, other));
    Manifest m(dir_, job_, 2, true);
    EXPECT_TRUE(done(m, "a.png"));
    EXPECT_FALSE(done(m, "b.png"));
    EXPECT_EQ(m.candidate_count(), 1u);
    Manifest o(dir_, other, 3, true);
    EXPECT_FALSE(done(o, "a.png"));
    EXPECT_TRUE(done(o, "b.png"));
}

// A line forged for another job (its job field, or one without any) is never taken.
TEST_F(BatchManifest, ForgedOrJoblessLinesAreNotTaken) {
    const ManifestEntry a = make_output("a.png", "a");
    std::string jobless = entry_line(a);
    jobless.erase(jobless.rfind('\t'));  // seven fields
    std::string forged = entry_line(a);
    forged.replace(forged.rfind('\t') + 1, 16, job_id("another job"));
    std::string upper = entry_line(a);
    for (auto i = upper.rfind('\t') + 1; i < upper.size(); ++i) upper[i] = char(std::toupper(upper[i]));
    write_text(manifest_path(0), header(job_) + jobless + "\n" + forged + upper + "\n");
    Manifest m(dir_, job_, 1, true);
    EXPECT_FALSE(done(m, "a.png"));
    EXPECT_EQ(m.candidate_count(), 0u);
}

TEST_F(BatchManifest, TornLastLineIsSkippedAndEarlierEntriesKept) {
    const ManifestEntry a = make_output("a.png", "complete");
    const ManifestEntry b = make_output("b.png", "also complete on disk, but its line was torn");
    std::string torn = entry_line(b);
    torn.pop_back();  // a crash before the '\n' reached the file: even a fully parsable line must not count
    write_text(manifest_path(0), header(job_) + entry_line(a) + torn);
    Manifest m(dir_, job_, 0, true);
    EXPECT_TRUE(done(m, "a.png"));
    EXPECT_FALSE(done(m, "b.png"));
}

TEST_F(BatchManifest, GarbageLinesAreSkipped) {
    const ManifestEntry good = make_output("good.png", "good");
    const ManifestEntry e = make_output("e.png", "e");
    const std::string crc = hex8(e.crc32);
    std::string upper = crc;
    for (char& c : upper) c = char(std::toupper(c));
    // The input fields and job of e.png's real entry, after OUTPUT BYTES CRC.
    std::string rest = entry_line(e);
    for (int i = 0; i < 3; ++i) rest.erase(0, rest.find('\t') + 1);
    rest.pop_back();
    const std::string in_rest = "\t" + rest + "\n";  // \t INPUT ... JOB \n
    const std::string lines = "\n"
                              "# a comment\n"
                              "e.png\t1\n"                                          // too few fields
                              "e.png\t1\t" + crc + "\t" + rest + "\textra\n"       // too many
                              "e.png\t1x\t" + crc + in_rest +                       // bad size
                              "e.png\t-1\t" + crc + in_rest +                       // negative size
                              "e.png\t99999999999999999999999\t" + crc + in_rest +  // overflows
                              "e.png\t1\t" + upper + in_rest +                      // not lowercase (when it has letters)
                              "e.png\t1\t" + crc.substr(1) + in_rest +              // 7 digits
                              "e.png\t1\t" + crc + "0" + in_rest +                  // 9 digits
                              "e.p\\qng\t1\t" + crc + in_rest +                     // invalid escape
                              "\t1\t" + crc + in_rest +                             // empty name
                              "e.png\t1\t" + crc + "\tin\tx\t0\t00000000\t" + job_id(job_) + "\n"  // bad input size
                              "e.png\t1\t" + crc + "\tin\t1\t1.5\t00000000\t" + job_id(job_) + "\n"  // bad time
                              "\t\t\t\n"
                              "\t\t\t\t\t\t\t\n"
                              "\x01\x02\xff\xfe\n" +
                              entry_line(good) + "e.png\t2\t" + crc + in_rest;  // wrong size for e.png
    write_text(manifest_path(0), header(job_) + lines);
    Manifest m(dir_, job_, 0, true);
    EXPECT_TRUE(done(m, "good.png"));
    EXPECT_FALSE(done(m, "e.png"));
}

// A manifest of another version is not trusted at all, and a note says so; a file that is not a manifest
// (or an empty one, torn before its header) is ignored.
TEST_F(BatchManifest, OtherVersionsAreNotTrustedAndSaySo) {
    const ManifestEntry a = make_output("a.png", "a");
    write_text(manifest_path(0), "# apron batch manifest 1\n# job " + job_ + "\na.png\t1\t" + hex8(a.crc32) + "\tin/a.png\n");
    write_text(manifest_path(1), entry_line(a));  // no header at all
    write_text(manifest_path(2), "");
    write_text(manifest_path(3), "# apron batch manifest 3\n# job " + job_ + "\n" + entry_line(a));
    Manifest m(dir_, job_, 4, true);
    EXPECT_FALSE(done(m, "a.png"));
    EXPECT_EQ(m.candidate_count(), 0u);
    ASSERT_EQ(m.notes().size(), 3u);
    EXPECT_EQ(m.notes()[0], manifest_path(0) + ": written in manifest version '1' (an older apron's), not trusted: "
                                               "its outputs are made again");
    EXPECT_NE(m.notes()[1].find(manifest_path(1) + ": not an apron batch manifest"), std::string::npos);
    EXPECT_NE(m.notes()[2].find("version '3'"), std::string::npos);
}

TEST_F(BatchManifest, FuzzedManifestsDoNotCrash) {
    const ManifestEntry good = make_output("good.png", "good");
    const std::string alphabet = "\t\t\t\n\n\\\\tnr0123456789abcdefABX#.-/ \x01\x7f\xff";
    std::mt19937 rng(2024);
    for (int round = 0; round < 200; ++round) {
        std::string text = header(job_) + entry_line(good);
        const int n = int(rng() % 400);
        for (int i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
        // Sometimes corrupt the header or the good line as well.
        if (round % 5 == 0) text[rng() % text.size()] = char(rng());
        write_text(manifest_path(0), text);
        write_text(manifest_path(1), text.substr(0, rng() % (text.size() + 1)));
        ASSERT_NO_THROW({
            Manifest m(dir_, job_, 2, true);
            if (round % 5 != 0) {
                EXPECT_TRUE(done(m, "good.png")) << "round " << round;
            }
        });
    }
}

TEST_F(BatchManifest, ConcurrentRecordsStayWholeLines) {
    constexpr int threads = 4, per_thread = 25;
    std::vector<ManifestEntry> entries;
    for (int i = 0; i < threads * per_thread; ++i) {
        const std::string content(std::size_t(i + 1), char('a' + i % 26));
        entries.push_back(make_output("out" + std::to_string(i) + ".png", content));
    }
    {
        Manifest m(dir_, job_, 0, false);
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                for (int i = 0; i < per_thread; ++i) m.record(entries[std::size_t(t * per_thread + i)]);
            });
        for (auto& th : pool) th.join();
    }
    const std::string text = read_text(manifest_path(0));
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2 + threads * per_thread);
    Manifest m(dir_, job_, 0, true);
    EXPECT_EQ(m.candidate_count(), entries.size());
    // Checked from several threads at once, as the batch's I/O threads do.
    std::vector<std::thread> pool;
    std::vector<int> found(threads, 0);
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) found[std::size_t(t)] += done(m, entries[std::size_t(t * per_thread + i)].output);
        });
    for (auto& th : pool) th.join();
    for (int t = 0; t < threads; ++t) EXPECT_EQ(found[std::size_t(t)], per_thread);
}

TEST_F(BatchManifest, ManifestsOfEveryRankAreRead) {
    {
        Manifest r0(dir_, job_, 0, false);
        Manifest r1(dir_, job_, 1, false);
        r0.record(make_output("a.png", "from rank 0"));
        r1.record(make_output("b.png", "from rank 1"));
    }
    // A later run with a single process still sees what rank 1 finished.
    Manifest m(dir_, job_, 0, true);
    EXPECT_TRUE(done(m, "a.png"));
    EXPECT_TRUE(done(m, "b.png"));
    EXPECT_EQ(m.candidate_count(), 2u);
}

TEST_F(BatchManifest, StaleEntryDoesNotHideTheCurrentOne) {
    const ManifestEntry now = make_output("a.png", "current content");
    ManifestEntry stale = now;
    stale.crc32 ^= 1;
    ManifestEntry stale_input = now;
    stale_input.input_crc32 ^= 1;
    write_text(manifest_path(5), header(job_) + entry_line(now));
    write_text(manifest_path(0), header(job_) + entry_line(stale) + entry_line(stale_input));  // read first
    Manifest m(dir_, job_, 1, true);
    EXPECT_TRUE(done(m, "a.png"));
}

TEST_F(BatchManifest, KeepAppendsCarriedOverEntriesToThisRanksFile) {
    ManifestEntry a, b;
    {
        Manifest m(dir_, job_, 0, false);
        a = make_output("a.png", "aaa");
        b = make_output("b.png", "bbbb");
        m.record(a);
        m.record(b);
    }
    {
        Manifest m(dir_, job_, 0, true);
        EXPECT_EQ(read_text(manifest_path(0)), header(job_));  // truncated: its entries live in memory now
        const auto kept = m.finished("a.png", input_of("a.png"));
        ASSERT_TRUE(kept.has_value());
        ASSERT_TRUE(done(m, "b.png"));
        m.keep(*kept);
        EXPECT_EQ(read_text(manifest_path(0)), header(job_) + entry_line(a));
    }
    // What was kept survives the next resume; what was not kept is made again.
    Manifest m(dir_, job_, 0, true);
    EXPECT_TRUE(done(m, "a.png"));
    EXPECT_FALSE(done(m, "b.png"));
}

TEST_F(BatchManifest, WithoutResumeOldManifestsAreIgnoredAndThisRanksIsTruncated) {
    {
        Manifest m(dir_, job_, 0, false);
        m.record(make_output("a.png", "content"));
    }
    Manifest m(dir_, job_, 0, false);
    EXPECT_FALSE(done(m, "a.png"));
    EXPECT_EQ(m.candidate_count(), 0u);
    EXPECT_EQ(read_text(manifest_path(0)), header(job_));
}

TEST_F(BatchManifest, NamesWithTabsNewlinesAndBackslashesRoundTrip) {
    const std::string name = "odd\tna\nme\\x.png";
    {
        Manifest m(dir_, job_, 0, false);
        m.record(make_output(name, "content"));
    }
    const std::string text = read_text(manifest_path(0));
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);  // header, job, one entry
    EXPECT_NE(text.find("odd\\tna\\nme\\\\x.png\t7\t"), std::string::npos) << text;
    EXPECT_NE(text.find("/in/odd\\tna\\nme\\\\x.png\t"), std::string::npos) << text;
    Manifest m(dir_, job_, 0, true);
    EXPECT_TRUE(done(m, name));
}

TEST_F(BatchManifest, FingerprintWithControlCharactersStaysOneLine) {
    const std::string job = "line one\nline\ttwo";
    {
        Manifest m(dir_, job, 0, false);
        m.record(make_output("a.png", "content"));
    }
    EXPECT_EQ(read_text(manifest_path(0)).substr(0, header("line one line two").size()), header("line one line two"));
    Manifest m(dir_, job, 0, true);
    EXPECT_TRUE(done(m, "a.png"));
}

TEST_F(BatchManifest, UncreatableDirectoryIsAnErrorNamingIt) {
    write_text(path("blocker"), "a regular file where a directory is needed");
    const std::string out = path("blocker/out");
    try {
        Manifest m(out, job_, 0, false);
        FAIL() << "no error";
    } catch (const apron::Error& e) {
        EXPECT_NE(std::string(e.what()).find(out + "/.apron-batch"), std::string::npos) << e.what();
    }
}

TEST_F(BatchManifest, NegativeRankIsRefused) { EXPECT_THROW(Manifest(dir_, job_, -1, false), apron::Error); }

// --- progress bar ---

std::string file_text(std::FILE* f) {
    std::fflush(f);
    std::string text;
    std::rewind(f);
    for (int c; (c = std::fgetc(f)) != EOF;) text += char(c);
    return text;
}

TEST(BatchProgress, DisabledWritesNothing) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    {
        Progress p(3, false, f);
        for (int i = 0; i < 3; ++i) p.advance(1000000, i == 1);
        p.finish();
    }
    EXPECT_EQ(file_text(f), "");
    std::fclose(f);
}

TEST(BatchProgress, EnabledShowsFinalCountsAndEndsTheLine) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    Progress p(3, true, f);
    p.advance(2000000);
    p.advance(2000000, true);
    p.advance(2000000);
    p.finish();
    p.finish();  // idempotent
    const std::string text = file_text(f);
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.front(), '\r');
    EXPECT_EQ(text.back(), '\n');
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
    const std::string last = text.substr(text.rfind('\r'));
    EXPECT_NE(last.find("[====================]"), std::string::npos) << last;
    EXPECT_NE(last.find("3/3 images"), std::string::npos) << last;
    EXPECT_NE(last.find("1 failed"), std::string::npos) << last;
    EXPECT_NE(last.find("Mpix/s"), std::string::npos) << last;
    std::fclose(f);
}

TEST(BatchProgress, FirstImageDrawsAtOnceWithAnEta) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    Progress p(1000, true, f);
    p.advance(100);
    const std::string text = file_text(f);
    EXPECT_NE(text.find("   1/1000 images"), std::string::npos) << text;  // count aligned to the total's width
    EXPECT_NE(text.find("ETA "), std::string::npos) << text;
    EXPECT_EQ(text.find("failed"), std::string::npos) << text;  // no failures, no noise
    p.finish();  // before the file closes: the destructor would draw into it
    std::fclose(f);
}

TEST(BatchProgress, EmptyRunLeavesTheTerminalAlone) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    { Progress p(0, true, f); }  // the destructor finishes
    EXPECT_EQ(file_text(f), "");
    std::fclose(f);
}

TEST(BatchProgress, DestructorFinishes) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    {
        Progress p(2, true, f);
        p.advance(1);
    }
    const std::string text = file_text(f);
    EXPECT_NE(text.find("1/2 images"), std::string::npos) << text;
    EXPECT_EQ(text.back(), '\n');
    std::fclose(f);
}

TEST(BatchProgress, CountsFromManyThreads) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    {
        Progress p(400, true, f);
        std::vector<std::thread> pool;
        for (int t = 0; t < 4; ++t)
            pool.emplace_back([&] {
                for (int i = 0; i < 100; ++i) p.advance(10, i % 50 == 0);
            });
        for (auto& th : pool) th.join();
    }
    const std::string text = file_text(f);
    const std::string last = text.substr(text.rfind('\r'));
    EXPECT_NE(last.find("400/400 images  8 failed"), std::string::npos) << last;
    std::fclose(f);
}

TEST(BatchProgress, StageNames) {
    EXPECT_STREQ(to_string(Stage::read), "read");
    EXPECT_STREQ(to_string(Stage::upload), "upload");
    EXPECT_STREQ(to_string(Stage::compute), "compute");
    EXPECT_STREQ(to_string(Stage::download), "download");
    EXPECT_STREQ(to_string(Stage::write), "write");
    EXPECT_STREQ(to_string(Stage::idle), "idle");
    EXPECT_STREQ(to_string(Stage::hash), "hash");
    EXPECT_STREQ(to_string(Stage::decode), "decode");
    EXPECT_STREQ(to_string(Stage::pin), "pin");
    EXPECT_STREQ(to_string(Stage::encode), "encode");
}

TEST(BatchProgress, SummaryGivesTheRateOfStagesThatCountBytes) {
    StageClock clock;
    clock.add(Stage::read, 8);  // 2 threads over 10 s: 40 %
    clock.set_workers(Stage::read, 2);
    clock.add_bytes(Stage::read, 30'000'000'000);  // 3 GB/s over the run
    clock.add(Stage::compute, 1);
    const std::string s = stage_summary(clock, 10);
    EXPECT_NE(s.find("bottleneck: read (40% busy, 3.00 GB/s)"), std::string::npos) << s;
    EXPECT_NE(s.find("read           8.00        2   40.0%    3.00\n"), std::string::npos) << s;
    EXPECT_NE(s.find("compute        1.00        1   10.0%\n"), std::string::npos) << s;
}

TEST(BatchProgress, StageClockSumsAndIgnoresNonsense) {
    StageClock clock;
    clock.add(Stage::read, 1.5);
    clock.add(Stage::read, 0.25);
    clock.add(Stage::read, -3);
    clock.add(Stage::read, std::nan(""));
    EXPECT_NEAR(clock.seconds(Stage::read), 1.75, 1e-9);
    EXPECT_EQ(clock.seconds(Stage::write), 0.0);
    {
        StageTimer t(clock, Stage::write);
    }
    EXPECT_GT(clock.seconds(Stage::write), 0.0);
    EXPECT_LT(clock.seconds(Stage::write), 1.0);
}

TEST(BatchProgress, SummaryNamesTheBusiestStage) {
    StageClock clock;
    clock.add(Stage::read, 2);      // 20 %
    clock.add(Stage::compute, 5);   // 50 %
    clock.add(Stage::write, 16);    // 2 threads: 80 %
    clock.add(Stage::idle, 9.5);    // 95 %, but waiting is never the bottleneck
    clock.set_workers(Stage::write, 2);
    const std::string s = stage_summary(clock, 10);
    EXPECT_NE(s.find("bottleneck: write (80% busy)"), std::string::npos) << s;
    EXPECT_NE(s.find("write         16.00        2   80.0%"), std::string::npos) << s;
    EXPECT_NE(s.find("upload         0.00        1    0.0%"), std::string::npos) << s;
    // Every stage has its row, in pipeline order.
    std::size_t at = 0;
    for (const char* name : {"read ", "hash ", "decode ", "pin ", "upload ", "compute ", "download ", "encode ", "write ", "idle "}) {
        const std::size_t found = s.find(std::string("\n") + name, at);
        ASSERT_NE(found, std::string::npos) << name << " in\n" << s;
        at = found + 1;
    }
}

TEST(BatchProgress, SummaryDividesByThreads) {
    StageClock clock;
    clock.add(Stage::compute, 6);   // 1 thread: 60 %
    clock.add(Stage::read, 10);     // 4 threads: 25 %
    clock.set_workers(Stage::read, 4);
    EXPECT_NE(stage_summary(clock, 10).find("bottleneck: compute (60% busy)"), std::string::npos);
}

TEST(BatchProgress, SummaryWithNothingRun) {
    StageClock empty;
    EXPECT_NE(stage_summary(empty, 5).find("bottleneck: none (nothing ran)"), std::string::npos);
    StageClock busy;
    busy.add(Stage::compute, 3);
    EXPECT_NE(stage_summary(busy, 0).find("bottleneck: none (nothing ran)"), std::string::npos);
    StageClock waiting;
    waiting.add(Stage::idle, 3);
    EXPECT_NE(stage_summary(waiting, 5).find("bottleneck: none (nothing ran)"), std::string::npos);
}

}  // namespace
}  // namespace apron::batch
