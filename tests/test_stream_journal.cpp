// The stream journal (src/stream/journal.hpp) and the one resume fingerprint (src/run/resume_fingerprint.hpp):
// band lines parse exactly or not at all; the fingerprint holds every mask's weights and says which field
// changed; every rank's journal of an output is found by name, whatever the ranks' number; a journal of
// another run is ignored with a note; a planted link is replaced, never written through; the output lock
// names its holder and goes with it. The CLI's resumes are tested in tests/python/test_stream_resume.py.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "apron/errors.hpp"
#include "apron/pipeline.hpp"
#include "io/file_lock.hpp"
#include "run/resume_fingerprint.hpp"
#include "stream/journal.hpp"
#include "test_io_support.hpp"

namespace apron::stream {
namespace {

namespace fs = std::filesystem;
using iotest::fails_naming;
using iotest::ScratchDir;
using iotest::write_text;
using iotest::read_text;

TEST(StreamJournal, BandLinesRoundTripAndParseOnlyExactly) {
    const JournalEntry e{256, 128, -30, 188, 0x7e02e021u, 0x0000abcdu};
    const std::string line = band_line(e);
    EXPECT_EQ(line, "band 256 128 in -30 188 7e02e021 out 0000abcd");
    const auto back = parse_band_line(line);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->y0, 256);
    EXPECT_EQ(back->rows, 128);
    EXPECT_EQ(back->in_first, -30);
    EXPECT_EQ(back->in_rows, 188);
    EXPECT_EQ(back->in_crc, 0x7e02e021u);
    EXPECT_EQ(back->out_crc, 0x0000abcdu);
    for (const char* bad : {"band x", "band 0", "band", "", "band 0 4 in 0 34 7e02e021 out 28fd187",  // 7 hex digits
                            "band 0 4 in 0 34 7e02e021 out 28fd187a ", "band 0 4 in 0 34 7E02E021 out 28fd187a",
                            "band +0 4 in 0 34 7e02e021 out 28fd187a", "band -4 4 in 0 34 7e02e021 out 28fd187a",
                            "band 0 0 in 0 34 7e02e021 out 28fd187a", "band 0 40 in 0 34 7e02e021 out 28fd187a",
                            "band 0 4 in 0 34 7e02e021 out 28fd187a x", "band  0 4 in 0 34 7e02e021 out 28fd187a",
                            "band 0x 4 in 0 34 7e02e021 out 28fd187a", "band 99999999999 4 in 0 34 7e02e021 out 28fd187a",
                            "bend 0 4 in 0 34 7e02e021 out 28fd187a", "band 0 4 at 0 34 7e02e021 out 28fd187a"})
        EXPECT_FALSE(parse_band_line(bad).has_value()) << bad;
}

TEST(ResumeFingerprint, HoldsTheWeightsOfEveryMaskAndSaysWhatChanged) {
    ScratchDir dir;
    const std::string mask = dir.file("m.txt");
    write_text(mask, "3 1\n1 2 1\n");
    const Pipeline before({"correlate:mask=" + mask, "dilate:se=disk:2"});
    write_text(mask, "3 1\n1 3 1\n");  // the same shape and text of the op, other weights
    const Pipeline after({"correlate:mask=" + mask, "dilate:se=disk:2"});
    const RunOptions run;
    const Fingerprint a = resume_fingerprint(before, run, {}, {}), b = resume_fingerprint(after, run, {}, {});
    EXPECT_NE(a.id(), b.id());
    const auto why = b.difference_from(a);
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(*why, "the weights and parameters of correlate:mask=" + mask + " (step 0) differs");
    EXPECT_FALSE(a.difference_from(resume_fingerprint(before, run, {}, {})).has_value());

    OutputStorage tiles;
    tiles.format = "tif", tiles.compression = "none", tiles.tile_side = 256;
    OutputStorage other = tiles;
    other.tile_side = 512;
    EXPECT_EQ(resume_fingerprint(before, run, {}, other).difference_from(resume_fingerprint(before, run, {}, tiles)),
              "--tile differs: 256 then 512");
    InputReading little, big;
    little.raw = "64x64x1:u16:little", big.raw = "64x64x1:u16:big";
    EXPECT_EQ(resume_fingerprint(before, run, big, tiles).difference_from(resume_fingerprint(before, run, little, tiles)),
              "--raw differs: 64x64x1:u16:little then 64x64x1:u16:big");
    RunOptions reference = run;
    reference.backend = Backend::reference;
    EXPECT_EQ(resume_fingerprint(before, reference, {}, {}).difference_from(a), "--backend differs: auto then reference");
    // A value too long to quote is named alone; control bytes never break the one line.
    Fingerprint x, y;
    x.add("the plan", std::string(100, 'a') + "\n");
    y.add("the plan", std::string(100, 'b'));
    EXPECT_EQ(y.difference_from(x), "the plan differs");
    EXPECT_EQ(x.text().find('\n'), std::string::npos);
}

TEST(StreamJournal, EveryRanksJournalIsFoundByNameWhateverTheirNumber) {
    ScratchDir dir;
    const std::string partial = dir.file(".o.pgm.apron-partial");
    EXPECT_EQ(journal_path(partial), dir.file(".o.pgm.apron-journal"));
    EXPECT_EQ(journal_path(partial, 3), dir.file(".o.pgm.apron-journal.3"));
    EXPECT_EQ(lock_path(partial), dir.file(".o.pgm.apron-lock"));
    const std::vector<std::string> journals = {".o.pgm.apron-journal", ".o.pgm.apron-journal.1", ".o.pgm.apron-journal.2",
                                               ".o.pgm.apron-journal.17", ".o.pgm.apron-journal.new",
                                               ".o.pgm.apron-journal.3.new"};
    const std::vector<std::string> others = {".o.pgm.apron-journal.x", ".o.pgm.apron-journalX", ".o.pgm.apron-journal.1x",
                                             ".p.pgm.apron-journal.1", "o.pgm", ".o.pgm.apron-partial"};
    for (const auto& n : journals) write_text(dir.file(n), "x");
    for (const auto& n : others) write_text(dir.file(n), "x");
    remove_journals(partial, true);
    EXPECT_TRUE(fs::exists(dir.file(".o.pgm.apron-journal")));
    remove_journals(partial);
    for (const auto& n : journals) EXPECT_FALSE(fs::exists(dir.file(n))) << n;
    for (const auto& n : others) EXPECT_TRUE(fs::exists(dir.file(n))) << n;
}

// A partial file of `bytes` bytes and its journal by rank 0 (with `entries`) at `dir`.
JournalHead make_run(const ScratchDir& dir, const Fingerprint& f, const std::vector<JournalEntry>& entries,
                     const std::string& run = "00000000000000aa") {
    const std::string partial = dir.file(".o.pgm.apron-partial");
    write_text(partial, std::string(4096, '\0'));
    const JournalHead head{run, *identify_partial(partial), 64u << 20, 16, f};
    JournalWriter w(journal_path(partial), head, entries);
    return head;
}

TEST(StreamJournal, AResumeReadsOnlyTheJournalsOfTheRunItContinues) {
    ScratchDir dir;
    const std::string partial = dir.file(".o.pgm.apron-partial");
    Fingerprint f;
    f.add("--op", "box");
    const JournalHead head = make_run(dir, f, {{0, 16, 0, 17, 1, 2}});
    {
        JournalWriter rank1(journal_path(partial, 1), head, {});
        rank1.record({16, 16, 15, 18, 3, 4});
    }
    JournalHead stale = head;
    stale.run = "00000000000000bb";  // another run's rank 2, left by a killed job
    JournalWriter rank2(journal_path(partial, 2), stale, {{32, 16, 31, 18, 5, 6}});
    EarlierRun r = read_earlier_run(partial, f);
    ASSERT_TRUE(r.usable);
    ASSERT_EQ(r.entries.size(), 2u);
    EXPECT_EQ(r.entries[0].y0, 0);
    EXPECT_EQ(r.entries[1].y0, 16);
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_EQ(r.notes[0], "ignoring " + journal_path(partial, 2) + ": it is not a journal of the run being resumed");

    // Another fingerprint: set aside, with the field that changed.
    Fingerprint g;
    g.add("--op", "box:width=5");
    r = read_earlier_run(partial, g);
    EXPECT_FALSE(r.usable);
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_EQ(r.notes[0], "--op differs: box then box:width=5; starting over");

    // The partial file replaced by another of the same size.
    fs::remove(partial);
    write_text(partial, std::string(4096, '\0'));
    r = read_earlier_run(partial, f);
    if (identify_partial(partial)->inode != head.partial.inode) {
        EXPECT_FALSE(r.usable);
        EXPECT_NE(r.notes.back().find("is not the one the journal vouches for (another file); starting over"), std::string::npos)
            << r.notes.back();
    }
    fs::remove(partial);
    r = read_earlier_run(partial, f);
    EXPECT_FALSE(r.usable);
    EXPECT_EQ(r.notes.back(), "the partial file " + partial + " is gone; starting over");
}

TEST(StreamJournal, LinesThatDoNotParseAreCountedAndLeftOut) {
    ScratchDir dir;
    const std::string partial = dir.file(".o.pgm.apron-partial");
    Fingerprint f;
    f.add("--op", "box");
    make_run(dir, f, {{0, 16, 0, 17, 1, 2}});
    std::ofstream(journal_path(partial), std::ios::app) << "band x\nband 16 16 in 15 18 00000003 out 00000004\nband 32 1";
    const EarlierRun r = read_earlier_run(partial, f);
    ASSERT_TRUE(r.usable);
    EXPECT_EQ(r.entries.size(), 2u);
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_EQ(r.notes[0], "2 lines of the journal do not parse; their rows are recomputed");
    // A head that does not parse sets the whole journal aside.
    write_text(journal_path(partial), "apron-stream 1 input=x\nband 0\n");
    const EarlierRun old = read_earlier_run(partial, f);
    EXPECT_FALSE(old.usable);
    EXPECT_EQ(old.notes.at(0), journal_path(partial) + ": line 1 (the format) does not parse; starting over");
}

TEST(StreamJournal, APlantedLinkIsReplacedNeverWrittenThrough) {
    ScratchDir dir;
    const std::string partial = dir.file(".o.pgm.apron-partial");
    write_text(dir.file("victim"), "precious\n");
    fs::create_symlink(dir.file("victim"), journal_path(partial));
    fs::create_symlink(dir.file("victim"), journal_path(partial) + ".new");
    // Read: not followed, said.
    Fingerprint f;
    f.add("--op", "box");
    write_text(partial, "");
    const EarlierRun r = read_earlier_run(partial, f);
    EXPECT_FALSE(r.usable);
    EXPECT_NE(r.notes.at(0).find("a link, not followed"), std::string::npos) << r.notes.at(0);
    // Written: the link is replaced by the journal.
    make_run(dir, f, {});
    EXPECT_EQ(read_text(dir.file("victim")), "precious\n");
    EXPECT_FALSE(fs::is_symlink(journal_path(partial)));
    EXPECT_EQ(read_text(journal_path(partial)).rfind("apron stream journal 2\n", 0), 0u);
}

TEST(OutputFileLock, ASecondLockFailsNamingTheHolderAndAFileGoneWithItsHolder) {
    ScratchDir dir;
    const std::string path = dir.file(".o.pgm.apron-lock");
    {
        io::FileLock first(path, "another apron filter is writing o.pgm", "; wait", true);
        EXPECT_TRUE(fails_naming([&] { io::FileLock second(path, "another apron filter is writing o.pgm", "; wait", true); },
                                 path + ": another apron filter is writing o.pgm (pid " + std::to_string(::getpid()) + " on "));
        EXPECT_TRUE(io::lock_holder(path).has_value());
    }
    EXPECT_FALSE(fs::exists(path));  // removed when done
    // Hard-linked or linked elsewhere: refused, the other file untouched.
    write_text(dir.file("victim"), "precious\n");
    fs::create_hard_link(dir.file("victim"), path);
    EXPECT_TRUE(fails_naming([&] { io::FileLock l(path, "busy", "", true); }, path, "has other hard links"));
    fs::remove(path);
    fs::create_symlink(dir.file("victim"), path);
    EXPECT_TRUE(fails_naming([&] { io::FileLock l(path, "busy", "", true); }, path, "cannot open the lock file"));
    EXPECT_EQ(read_text(dir.file("victim")), "precious\n");
}

}  // namespace
}  // namespace apron::stream
