// The output side under hostile conditions: what write_file_atomically replaces (modes, owners, hard and
// symbolic links, FIFOs and devices at the output path) and the signal cleanup of its temporary files
// (install_signal_cleanup), tested in forked children so that the signals end only them.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "io/temporary_registry.hpp"
#include "test_io_hostile_support.hpp"

namespace apron::iotest {
namespace {

std::string text_of(const std::string& path) {
    const ByteVec v = file_bytes(path);
    return std::string(v.begin(), v.end());
}

mode_t mode_of(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode;
}

TEST(AtomicWriteHostile, ReplacedFileKeepsItsPermissionBits) {
    ScratchDir dir;
    for (mode_t mode : {0600, 0640, 0755, 0444}) {
        const std::string path = dir.file("private-" + std::to_string(mode) + ".txt");
        write_bytes(path, bytes("secret"));
        ASSERT_EQ(::chmod(path.c_str(), mode), 0);
        write_file_atomically(path, bytes("new secret"));
        EXPECT_EQ(mode_of(path) & 07777, mode) << std::oct << mode;
        EXPECT_EQ(text_of(path), "new secret");
    }
    // An image written over a 0600 file stays 0600.
    const std::string png = dir.file("private.png");
    write_bytes(png, bytes("old"));
    ASSERT_EQ(::chmod(png.c_str(), 0600), 0);
    write_image(png, random_image(5, 3, 1, PixelType::u8, 1));
    EXPECT_EQ(mode_of(png) & 0777, 0600u);
    EXPECT_TRUE(dir.temp_files().empty());
}

TEST(AtomicWriteHostile, ReplacedFileKeepsItsOwnerAndGroupWhenRoot) {
    if (::geteuid() != 0) GTEST_SKIP() << "only root can give a file to another owner";
    ScratchDir dir;
    const std::string path = dir.file("owned.txt");
    write_bytes(path, bytes("old"));
    ASSERT_EQ(::chown(path.c_str(), 12345, 23456), 0);
    ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
    write_file_atomically(path, bytes("new"));
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 12345u);
    EXPECT_EQ(st.st_gid, 23456u);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(AtomicWriteHostile, HardLinkedFileIsReplacedUnderItsNameOnly) {
    ScratchDir dir;
    write_bytes(dir.file("a.txt"), bytes("old"));
    ASSERT_EQ(::link(dir.file("a.txt").c_str(), dir.file("b.txt").c_str()), 0);
    write_file_atomically(dir.file("a.txt"), bytes("new"));
    EXPECT_EQ(text_of(dir.file("a.txt")), "new");
    EXPECT_EQ(text_of(dir.file("b.txt")), "old");
    struct stat st {};
    ASSERT_EQ(::stat(dir.file("b.txt").c_str(), &st), 0);
    EXPECT_EQ(st.st_nlink, 1u);
}

TEST(AtomicWriteHostile, SymlinkIsFollowedAndKept) {
    ScratchDir dir;
    std::filesystem::create_directory(dir.file("real"));
    write_bytes(dir.file("real/target.txt"), bytes("old"));
    ASSERT_EQ(::chmod(dir.file("real/target.txt").c_str(), 0600), 0);
    ASSERT_EQ(::symlink("real/target.txt", dir.file("link.txt").c_str()), 0);  // relative to the link's directory
    ASSERT_EQ(::symlink("link.txt", dir.file("link2.txt").c_str()), 0);        // a chain of two
    write_file_atomically(dir.file("link2.txt"), bytes("new"));
    EXPECT_TRUE(S_ISLNK(mode_of(dir.file("link.txt"))));
    EXPECT_TRUE(S_ISLNK(mode_of(dir.file("link2.txt"))));
    EXPECT_EQ(std::filesystem::read_symlink(dir.file("link.txt")), "real/target.txt");
    EXPECT_EQ(text_of(dir.file("real/target.txt")), "new");
    EXPECT_EQ(mode_of(dir.file("real/target.txt")) & 0777, 0600u);
    EXPECT_TRUE(dir.temp_files().empty());
    for (const auto& e : std::filesystem::directory_iterator(dir.file("real")))  // no temporary left there
        EXPECT_EQ(e.path().filename(), "target.txt");
}

TEST(AtomicWriteHostile, DanglingSymlinkCreatesItsTargetWhereTheDirectoryExists) {
    ScratchDir dir;
    std::filesystem::create_directory(dir.file("sub"));
    ASSERT_EQ(::symlink((dir.path() / "sub/new.txt").c_str(), dir.file("link.txt").c_str()), 0);
    write_file_atomically(dir.file("link.txt"), bytes("created"));
    EXPECT_TRUE(S_ISLNK(mode_of(dir.file("link.txt"))));
    EXPECT_EQ(text_of(dir.file("sub/new.txt")), "created");

    ASSERT_EQ(::symlink("missing-dir/x.txt", dir.file("nowhere.txt").c_str()), 0);
    EXPECT_TRUE(fails_naming([&] { write_file_atomically(dir.file("nowhere.txt"), bytes("x")); }, dir.file("nowhere.txt"),
                             "cannot create a temporary file in " + dir.file("missing-dir")));
    EXPECT_TRUE(S_ISLNK(mode_of(dir.file("nowhere.txt"))));
}

TEST(AtomicWriteHostile, FifoAtTheOutputPathIsRefusedAndLeftAlone) {
    ScratchDir dir;
    const std::string fifo = dir.file("out.pgm");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    // In a child: writing into a FIFO without a reader would block forever.
    EXPECT_EQ(in_child([&] { write_image(fifo, random_image(4, 4, 1, PixelType::u8, 2)); }, 10),
              "error: " + fifo + ": is a FIFO, not a regular file; apron writes only regular files");
    EXPECT_TRUE(S_ISFIFO(mode_of(fifo)));
    EXPECT_TRUE(dir.temp_files().empty());
}

TEST(AtomicWriteHostile, DeviceDirectoryAndSocketAreRefused) {
    ScratchDir dir;
    ASSERT_EQ(::symlink("/dev/null", dir.file("null.pgm").c_str()), 0);
    EXPECT_EQ(in_child([&] { write_file_atomically(dir.file("null.pgm"), bytes("x")); }),
              "error: " + dir.file("null.pgm") +
                  ": links to /dev/null, a character device, not a regular file; apron writes only regular files");
    EXPECT_TRUE(S_ISLNK(mode_of(dir.file("null.pgm"))));

    std::filesystem::create_directory(dir.file("d.pgm"));
    EXPECT_EQ(in_child([&] { write_file_atomically(dir.file("d.pgm"), bytes("x")); }),
              "error: " + dir.file("d.pgm") + ": is a directory; give a file name such as " + dir.file("d.pgm") + "/name.png");

    const std::string sock = dir.file("s.pgm");
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(in_child([&] { write_file_atomically(sock, bytes("x")); }),
              "error: " + sock + ": is a socket, not a regular file; apron writes only regular files");
    ::close(fd);
    EXPECT_TRUE(dir.temp_files().empty());
}

// ---- signal cleanup -------------------------------------------------------------------------------------

// Forks; the child runs `body` and exits 0. Returns the child's wait status.
int child_status(const std::function<void()>& body) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        const rlimit no_core{0, 0};
        ::setrlimit(RLIMIT_CORE, &no_core);  // SIGQUIT's default action dumps core
        ::alarm(30);
        body();
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
}

std::string make_temporary(const ScratchDir& dir, const std::string& name) {
    const std::string path = dir.file("." + name + ".apron-tmp-ABCDEF");
    write_bytes(path, bytes("partial"));
    return path;
}

TEST(SignalCleanup, RegisteredTemporaryIsRemovedAndTheSignalStillEndsTheProcess) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
        SCOPED_TRACE(sig);
        ScratchDir dir;
        const std::string temp = make_temporary(dir, "out.png");
        const int status = child_status([&] {
            signal(sig, SIG_DFL);
            install_signal_cleanup();
            io::register_temporary(temp.c_str());
            ::raise(sig);
            ::_exit(7);  // not reached
        });
        ASSERT_TRUE(WIFSIGNALED(status)) << status;
        EXPECT_EQ(WTERMSIG(status), sig);
        EXPECT_FALSE(std::filesystem::exists(temp));
    }
}

// A temporary file is reserved in the table before it is created: a signal between the creation and the
// confirmation must still find it, whichever thread it interrupts.
TEST(SignalCleanup, ReservedTemporaryIsRemovedWhicheverThreadTheSignalInterrupts) {
    ScratchDir dir;
    const std::string own = make_temporary(dir, "own.png");
    const int status = child_status([&] {
        signal(SIGTERM, SIG_DFL);
        install_signal_cleanup();
        io::reserve_temporary(own.c_str());  // created, not yet confirmed, when the signal interrupts this thread
        ::raise(SIGTERM);
    });
    ASSERT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), SIGTERM);
    EXPECT_FALSE(std::filesystem::exists(own));

    const std::string other = dir.file(".other.png.apron-tmp-XYZ");
    const int status2 = child_status([&] {
        signal(SIGTERM, SIG_DFL);
        install_signal_cleanup();
        std::atomic<bool> reserved{false};
        std::thread writer([&] {
            const int slot = io::reserve_temporary(other.c_str());
            reserved = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the handler waits meanwhile
            write_bytes(other, bytes("partial"));
            io::confirm_temporary(slot);
            for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
        });
        writer.detach();
        while (!reserved) std::this_thread::yield();
        ::raise(SIGTERM);
    });
    ASSERT_TRUE(WIFSIGNALED(status2));
    EXPECT_EQ(WTERMSIG(status2), SIGTERM);
    EXPECT_FALSE(std::filesystem::exists(other));
}

TEST(SignalCleanup, IgnoredSignalStaysIgnored) {
    ScratchDir dir;
    const std::string temp = make_temporary(dir, "out.png");
    const int status = child_status([&] {
        signal(SIGHUP, SIG_IGN);  // as nohup leaves it
        install_signal_cleanup();
        const int slot = io::register_temporary(temp.c_str());
        ::raise(SIGHUP);
        ::_exit(io::unregister_temporary(slot) ? 0 : 1);
    });
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_TRUE(std::filesystem::exists(temp));
}

void exit_42(int) { ::_exit(42); }
std::atomic<int> handled{0};
void count_and_return(int) { ++handled; }

TEST(SignalCleanup, PreviousHandlerIsCalledAfterTheCleanup) {
    ScratchDir dir;
    const std::string temp = make_temporary(dir, "out.png");
    const int status = child_status([&] {
        signal(SIGTERM, exit_42);  // e.g. an MPI runtime's handler
        install_signal_cleanup();
        io::register_temporary(temp.c_str());
        ::raise(SIGTERM);
    });
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 42);
    EXPECT_FALSE(std::filesystem::exists(temp));

    // A previous handler that returns: the process goes on, and the writer learns its file is gone.
    const std::string temp2 = make_temporary(dir, "out2.png");
    const int status2 = child_status([&] {
        signal(SIGINT, count_and_return);
        install_signal_cleanup();
        const int slot = io::register_temporary(temp2.c_str());
        ::raise(SIGINT);
        const bool still_registered = io::unregister_temporary(slot);
        ::_exit(handled == 1 && !still_registered ? 0 : 1);
    });
    ASSERT_TRUE(WIFEXITED(status2));
    EXPECT_EQ(WEXITSTATUS(status2), 0);
    EXPECT_FALSE(std::filesystem::exists(temp2));
}

TEST(SignalCleanup, RegistryHasFixedSlotsAndReusesThem) {
    ScratchDir dir;
    std::vector<int> slots;
    for (int i = 0; i < io::temporary_slots; ++i) slots.push_back(io::register_temporary(dir.file("t").c_str()));
    EXPECT_EQ(std::count(slots.begin(), slots.end(), -1), 0);
    EXPECT_EQ(io::register_temporary(dir.file("one-too-many").c_str()), -1);
    EXPECT_EQ(io::register_temporary(std::string(5000, 'x').c_str()), -1);  // longer than PATH_MAX
    for (int s : slots) EXPECT_TRUE(io::unregister_temporary(s));
    EXPECT_TRUE(io::unregister_temporary(-1));
    const int again = io::register_temporary(dir.file("t").c_str());
    EXPECT_GE(again, 0);
    io::unregister_temporary(again);
}

// The whole path: a thread writes a large file again and again; SIGTERM arrives while a temporary file
// exists; the process dies by SIGTERM and leaves no temporary file.
TEST(SignalCleanup, WriteInProgressLeavesNoTemporaryFile) {
    ScratchDir dir;
    const std::string out = dir.file("big.bin");
    const int status = child_status([&] {
        signal(SIGTERM, SIG_DFL);
        install_signal_cleanup();
        std::thread writer([&] {
            const ByteVec data(std::size_t(64) << 20, 0x5a);
            for (;;) write_file_atomically(out, data);
        });
        writer.detach();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (dir.temp_files().empty() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        ::raise(SIGTERM);
    });
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), SIGTERM);
    EXPECT_TRUE(dir.temp_files().empty());
    if (std::filesystem::exists(out)) EXPECT_EQ(std::filesystem::file_size(out), std::size_t(64) << 20);
}

}  // namespace
}  // namespace apron::iotest
