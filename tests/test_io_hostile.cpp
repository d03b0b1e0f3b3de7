// Hostile inputs to the file layer: files that are not regular files (devices, FIFOs, sockets,
// directories, links to them), a file that grows while it is read, and file contents that would break a
// one-line message. Each read that could hang or run away runs in a child process (in_child), so that
// the old behaviour fails the test instead of the test run.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <atomic>
#include <thread>

#include "apron/mask.hpp"
#include "io/file_io.hpp"
#include "test_io_hostile_support.hpp"

namespace apron::iotest {
namespace {

const std::string not_regular = ", not a regular file (apron reads only regular files)";

TEST(ReadHostile, DevZeroIsRefusedByNameBeforeAnythingIsRead) {
    // Limited to 256 MiB: reading /dev/zero to the end would exhaust it long before the alarm.
    EXPECT_EQ(in_child([] { read_image("/dev/zero"); }, 10, std::uint64_t(256) << 20),
              "error: /dev/zero: cannot read: it is a character device" + not_regular);
    EXPECT_EQ(in_child([] { probe_image("/dev/zero"); }, 10, std::uint64_t(256) << 20),
              "error: /dev/zero: cannot read: it is a character device" + not_regular);
}

TEST(ReadHostile, SymlinkToUrandomNamesItsTarget) {
    ScratchDir dir;
    const std::string link = dir.file("noise.pgm");
    ASSERT_EQ(::symlink("/dev/urandom", link.c_str()), 0);
    EXPECT_EQ(in_child([&] { read_image(link); }, 10, std::uint64_t(256) << 20),
              "error: " + link + ": cannot read: it links to /dev/urandom, a character device" + not_regular);
}

TEST(ReadHostile, FifoIsRefusedWithoutBlocking) {
    ScratchDir dir;
    const std::string fifo = dir.file("pipe.pgm");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // No writer ever comes: a reader that opens the FIFO waits forever (until the alarm).
    EXPECT_EQ(in_child([&] { read_image(fifo); }, 5), "error: " + fifo + ": cannot read: it is a FIFO" + not_regular);
    EXPECT_EQ(in_child([&] { io::read_file(fifo, "list file", 1 << 20); }, 5),
              "error: " + fifo + ": cannot read list file: it is a FIFO" + not_regular);
    // Even with a writer that keeps it open and never writes.
    const int keep = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    ASSERT_GE(keep, 0);
    EXPECT_EQ(in_child([&] { read_image(fifo); }, 5), "error: " + fifo + ": cannot read: it is a FIFO" + not_regular);
    ::close(keep);
}

TEST(ReadHostile, SocketAndDirectoryAreRefusedByKind) {
    ScratchDir dir;
    const std::string sock = dir.file("socket.png");
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(sock.size(), sizeof addr.sun_path);
    std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(in_child([&] { read_image(sock); }), "error: " + sock + ": cannot read: it is a socket" + not_regular);
    ::close(fd);

    EXPECT_EQ(in_child([&] { read_image(dir.path().string()); }),
              "error: " + dir.path().string() + ": cannot read: it is a directory" + not_regular);
}

TEST(ReadHostile, MaskFileFromADeviceIsRefusedByKind) {
    EXPECT_EQ(in_child([] { read_mask_file("/dev/zero"); }, 10, std::uint64_t(512) << 20),
              "error: /dev/zero: cannot read mask file: it is a character device" + not_regular);
}

TEST(ReadHostile, EmptyFileAndMissingFile) {
    ScratchDir dir;
    write_bytes(dir.file("empty.pgm"), {});
    EXPECT_EQ(in_child([&] { read_image(dir.file("empty.pgm")); }), "error: " + dir.file("empty.pgm") + ": empty file");
    EXPECT_EQ(in_child([&] { probe_image(dir.file("empty.pgm")); }), "error: " + dir.file("empty.pgm") + ": empty file");
    EXPECT_EQ(in_child([&] { read_image(dir.file("none.pgm")); }),
              "error: " + dir.file("none.pgm") + ": cannot open: No such file or directory");
}

TEST(ReadHostile, SizeIsCheckedAgainstTheLimitBeforeReading) {
    ScratchDir dir;
    write_bytes(dir.file("list.txt"), ByteVec(3 << 20, 'a'));
    EXPECT_TRUE(fails_naming([&] { io::read_file(dir.file("list.txt"), "list file", 1 << 20); }, dir.file("list.txt"),
                             ": the list file is 3.00 MiB, larger than the limit of 1.00 MiB"));
}

// A file appended to while it is read: refused as changed (the reader takes the size it had when opened
// and notices more after it), never read without bound. The appender outpaces nothing deterministically,
// so the check runs up to five times; one refusal is required, and every successful read must be the
// file as it was at some moment (a prefix of what the appender wrote).
TEST(ReadHostile, FileGrowingWhileReadIsRefusedAsChanged) {
    ScratchDir dir;
    const std::string path = dir.file("growing.bin");
    write_bytes(path, ByteVec(std::size_t(32) << 20, 'x'));
    std::atomic<bool> stop{false};
    std::thread appender([&] {
        const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
        const std::vector<char> chunk(1 << 16, 'x');
        std::size_t written = 0;
        while (!stop && written < (std::size_t(256) << 20)) written += std::size_t(::write(fd, chunk.data(), chunk.size()));
        ::close(fd);
    });
    int refused = 0;
    for (int attempt = 0; attempt < 5 && refused == 0; ++attempt) {
        try {
            const std::string content = io::read_file(path, "", SIZE_MAX);
            EXPECT_EQ(content.find_first_not_of('x'), std::string::npos);
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(path + ": changed while it was read ("), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("then more); is another program still writing it?"), std::string::npos)
                << e.what();
            ++refused;
        }
    }
    stop = true;
    appender.join();
    EXPECT_EQ(refused, 1);
}

TEST(ErrorMessage, ControlBytesAreEscapedAndUtf8IsKept) {
    EXPECT_STREQ(Error(std::string("a\0b\nc\x7f\td\x1b", 9)).what(), "a\\x00b\\x0ac\\x7f\\x09d\\x1b");
    EXPECT_STREQ(Error("caf\xc3\xa9.png: fine").what(), "caf\xc3\xa9.png: fine");
    try {
        fail(std::string("x\ry.pgm", 7), std::string("bad\0header", 10));
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "x\\x0dy.pgm: bad\\x00header");
    }
}

TEST(ErrorMessage, PamHeaderWithANulByteIsOneWholeLine) {
    const char header[] = "P7\nWIDTH 2\nHEIGHT 2\nDE\0PTH 1\nMAXVAL 255\n";
    const ByteVec pam(header, header + sizeof header - 1);
    EXPECT_TRUE(decode_fails(pam, "malformed PNM file: unknown PAM header line 'DE\\x00PTH'"));
    EXPECT_TRUE(fails_naming([&] { probe_image(pam, "input.img"); }, "input.img", "'DE\\x00PTH'"));
}

}  // namespace
}  // namespace apron::iotest
