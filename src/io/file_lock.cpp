// One run at a time per output (file_lock.hpp).
#include "io/file_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <string_view>
#include <system_error>

#include "apron/errors.hpp"
#include "io/temporary_registry.hpp"

namespace apron::io {

namespace {

std::string errno_text(int e) { return std::generic_category().message(e); }

// The whole file, for the lock: F_OFD_* locks need l_pid 0.
struct flock whole_file(short type) {
    struct flock fl {};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = 0;
    fl.l_len = 0;
    fl.l_pid = 0;
    return fl;
}

std::string host_name() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || !host[0]) return "unknown host";
    return host;
}

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm tm {};
    ::gmtime_r(&now, &tm);
    char text[40];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return text;
}

// A value of the lock file, for a message: at most 100 bytes (the file may be written by anyone, or be left
// by a process long gone); apron::Error writes its control bytes as \xNN.
std::string clean(std::string_view v) { return std::string(v.substr(0, 100)) + (v.size() > 100 ? "..." : ""); }

// What the lock file says about its holder, as one printable line.
std::string describe_holder(int fd) {
    char buffer[512];
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return "a process that has not written its details yet";
    std::string pid, host, started;
    std::string_view text(buffer, std::size_t(n));
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        const std::size_t space = line.find(' ');
        if (space == std::string_view::npos) continue;
        const std::string_view key = line.substr(0, space), value = line.substr(space + 1);
        if (key == "pid") pid = clean(value);
        else if (key == "host") host = clean(value);
        else if (key == "started") started = clean(value);
    }
    if (pid.empty()) return "a process that the lock file does not name";
    return "pid " + pid + (host.empty() ? "" : " on " + host) + (started.empty() ? "" : ", started " + started);
}

int open_lock_file(const std::string& path, int flags) {
    // O_NOFOLLOW: a planted link is not followed; O_NONBLOCK: a FIFO does not hang.
    return ::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
}

void check_regular(int fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        fail(path, "cannot read the lock file: " + errno_text(e));
    }
    if (!S_ISREG(st.st_mode) || st.st_nlink > 1) {
        ::close(fd);
        fail(path, std::string(S_ISREG(st.st_mode) ? "has other hard links" : "is not a regular file") +
                       " (apron locks its output with it; remove it)");
    }
}

// The file at `path` is still the one open as `fd` (nobody removed or replaced it after we opened it).
bool still_at_path(int fd, const std::string& path) {
    struct stat a {}, b {};
    return ::fstat(fd, &a) == 0 && ::lstat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

FileLock::FileLock(const std::string& path, const std::string& busy, const std::string& advice, bool remove_when_done)
    : path_(path), remove_(remove_when_done) {
    for (int attempt = 0;; ++attempt) {
        fd_ = open_lock_file(path_, O_RDWR | O_CREAT);  // never O_TRUNC: the holder's details stay until we hold it
        if (fd_ < 0) fail(path_, "cannot open the lock file: " + errno_text(errno));
        check_regular(fd_, path_);
        struct flock fl = whole_file(F_WRLCK);
        if (::fcntl(fd_, F_OFD_SETLK, &fl) != 0) {
            const int e = errno;
            const std::string message = e == EAGAIN || e == EACCES
                                            ? busy + " (" + describe_holder(fd_) + ")" + advice
                                            : "cannot lock: " + errno_text(e);
            ::close(fd_);
            fd_ = -1;
            fail(path_, message);
        }
        // A holder that removes its file when done may have removed this one just before we locked it.
        if (still_at_path(fd_, path_)) break;
        ::close(fd_);
        fd_ = -1;
        if (attempt == 100) fail(path_, "cannot lock: the lock file keeps being replaced");
    }
    if (remove_) slot_ = register_temporary(path_.c_str());
    const std::string who = "pid " + std::to_string(::getpid()) + "\nhost " + host_name() + "\nstarted " + utc_now() + "\n";
    // Best effort: the lock is what excludes other runs; the text only names the holder in their message.
    if (::ftruncate(fd_, 0) == 0) {
        [[maybe_unused]] const ssize_t written = ::pwrite(fd_, who.data(), who.size(), 0);
    }
}

FileLock::~FileLock() {
    if (fd_ < 0) return;
    if (remove_) {
        ::unlink(path_.c_str());  // still locked: whoever opened it finds it gone and tries again
        unregister_temporary(slot_);
    } else {
        // No stale details once the run is over (best effort); the kernel drops the lock on close.
        [[maybe_unused]] const int truncated = ::ftruncate(fd_, 0);
    }
    ::close(fd_);
}

std::optional<std::string> lock_holder(const std::string& path) {
    const int fd = open_lock_file(path, O_RDONLY);
    if (fd < 0) return std::nullopt;  // no lock file: no run holds it
    struct flock fl = whole_file(F_WRLCK);
    std::optional<std::string> holder;
    if (::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) holder = describe_holder(fd);
    ::close(fd);
    return holder;
}

}  // namespace apron::io
