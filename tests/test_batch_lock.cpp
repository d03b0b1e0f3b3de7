// One `apron batch` per output folder: OUTPUT_DIR/.apron-batch/lock. A second lock fails at once naming the
// lock file and the holder; the lock goes when its holder does (destroyed, or killed with SIGKILL); a lock
// file left behind blocks nothing; the output folder and the batch directory must be directories; the
// dry run's question (who holds it?) takes and creates nothing.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "apron/errors.hpp"
#include "batch/output_lock.hpp"
#include "test_io_support.hpp"

namespace apron::batch {
namespace {

namespace fs = std::filesystem;
using iotest::fails_naming;
using iotest::ScratchDir;
using iotest::write_text;
using iotest::read_text;

TEST(BatchLock, SecondLockFailsAtOnceNamingTheLockFileAndTheHolder) {
    ScratchDir dir;
    const std::string out = dir.file("out");
    OutputLock first(out);
    EXPECT_EQ(first.path(), out + "/.apron-batch/lock");
    EXPECT_TRUE(fs::is_directory(out + "/.apron-batch"));
    const std::string pid = "pid " + std::to_string(::getpid());
    EXPECT_NE(read_text(first.path()).find(pid + "\n"), std::string::npos) << read_text(first.path());

    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(fails_naming([&] { OutputLock second(out); }, out + "/.apron-batch/lock: ",
                             "another apron batch is writing to this output folder (" + pid + " on "));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));  // at once, no waiting
    // The refused run leaves the holder's details as they were.
    EXPECT_NE(read_text(first.path()).find(pid + "\n"), std::string::npos);
}

TEST(BatchLock, ReleasedWhenTheHolderEnds) {
    ScratchDir dir;
    const std::string out = dir.file("out");
    { OutputLock first(out); }
    EXPECT_EQ(read_text(lock_file_path(out)), "");  // no stale details once released
    EXPECT_FALSE(output_lock_holder(out).has_value());
    OutputLock again(out);
    EXPECT_TRUE(output_lock_holder(out).has_value());
}

// kill -9: the kernel drops the lock with the process; the next run takes it (and --resume works).
TEST(BatchLock, ReleasedWhenTheHolderIsKilled) {
    ScratchDir dir;
    const std::string out = dir.file("out");
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        try {
            OutputLock held(out);
            (void)!::write(ready[1], "x", 1);
            for (;;) ::pause();
        } catch (...) {
        }
        ::_exit(1);
    }
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    const std::string child_pid = "pid " + std::to_string(child);
    EXPECT_TRUE(fails_naming([&] { OutputLock second(out); }, lock_file_path(out), child_pid));
    const auto holder = output_lock_holder(out);
    ASSERT_TRUE(holder.has_value());
    EXPECT_EQ(holder->substr(0, child_pid.size() + 1), child_pid + " ");
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ::close(ready[0]);
    ::close(ready[1]);
    EXPECT_NE(read_text(lock_file_path(out)).find(child_pid), std::string::npos);  // left behind by the kill
    EXPECT_FALSE(output_lock_holder(out).has_value());
    OutputLock mine(out);
    EXPECT_NE(read_text(mine.path()).find("pid " + std::to_string(::getpid())), std::string::npos);
}

TEST(BatchLock, LockFileOfADeadProcessOrWithGarbageBlocksNothing) {
    ScratchDir dir;
    const std::string out = dir.file("out");
    write_text(lock_file_path(out), "pid 999999999\nhost elsewhere\nstarted long ago\n");
    { OutputLock a(out); }
    write_text(lock_file_path(out), std::string("\x1b[2J\0\xff garbage", 14) + std::string(10000, 'x'));
    OutputLock b(out);
    EXPECT_TRUE(output_lock_holder(out).has_value());
}

TEST(BatchLock, HostileHolderDetailsStayOneQuotedLine) {
    ScratchDir dir;
    const std::string out = dir.file("out");
    OutputLock first(out);
    // Someone rewrites the holder's details with escape sequences and newlines.
    write_text(first.path(), "pid 12\x1b[31m\nhost a\rb\nstarted \x07now\n");
    try {
        OutputLock second(out);
        FAIL() << "no error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
        EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
        EXPECT_EQ(m.find('\x07'), std::string::npos) << m;
        EXPECT_NE(m.find("pid 12\\x1b[31m on a"), std::string::npos) << m;
    }
    write_text(first.path(), "");
    EXPECT_TRUE(fails_naming([&] { OutputLock second(out); }, first.path(), "has not written its details yet"));
}

TEST(BatchLock, HolderQueryTakesAndCreatesNothing) {
    ScratchDir dir;
    const std::string out = dir.file("never-made");
    EXPECT_FALSE(output_lock_holder(out).has_value());
    EXPECT_FALSE(fs::exists(out));
    OutputLock held(dir.file("held"));
    const auto holder = output_lock_holder(dir.file("held"));
    ASSERT_TRUE(holder.has_value());
    EXPECT_EQ(*holder, "pid " + std::to_string(::getpid()) + " on " + holder->substr(holder->find(" on ") + 4));
    EXPECT_NE(holder->find(", started "), std::string::npos) << *holder;
    EXPECT_NE(holder->find(" UTC"), std::string::npos) << *holder;
}

TEST(BatchLock, OutputFolderAndBatchDirectoryMustBeDirectories) {
    ScratchDir dir;
    write_text(dir.file("a-file"), "not a folder");
    EXPECT_TRUE(fails_naming([&] { OutputLock l(dir.file("a-file")); }, dir.file("a-file") + ": ",
                             "the output folder is not a directory"));
    EXPECT_TRUE(fails_naming([&] { OutputLock l(dir.file("a-file/out")); }, dir.file("a-file/out") + ": ",
                             "cannot create the output directory"));
    write_text(dir.file("out/.apron-batch"), "the batch directory replaced by a file");
    EXPECT_TRUE(fails_naming([&] { OutputLock l(dir.file("out")); }, dir.file("out/.apron-batch") + ": ",
                             "is not a directory"));
}

TEST(BatchLock, LockFileThatIsNotARegularFileIsRefusedNamingIt) {
    ScratchDir dir;
    const std::string out = dir.file("out");
    fs::create_directories(lock_file_path(out));
    EXPECT_TRUE(fails_naming([&] { OutputLock l(out); }, lock_file_path(out), ""));
    fs::remove(lock_file_path(out));
    ASSERT_EQ(::mkfifo(lock_file_path(out).c_str(), 0644), 0);  // must not block
    EXPECT_TRUE(fails_naming([&] { OutputLock l(out); }, lock_file_path(out), "is not a regular file"));
    fs::remove(lock_file_path(out));
    fs::create_symlink(dir.file("elsewhere"), lock_file_path(out));  // a planted link is not followed
    EXPECT_TRUE(fails_naming([&] { OutputLock l(out); }, lock_file_path(out), "cannot open the lock file"));
    EXPECT_FALSE(fs::exists(dir.file("elsewhere")));
}

} // namespace
} // namespace apron::batch
