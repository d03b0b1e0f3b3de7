// The output folder's lock (see output_lock.hpp).
#include "batch/output_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "apron/errors.hpp"
#include "batch/text.hpp"
#include "io/temporary_name.hpp"

namespace apron::batch {

namespace {

namespace fs = std::filesystem;

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

// What the lock file says about its holder, as one printable line. The file is only informative (and may
// be left by a process long gone, or written by anyone), so whatever it holds is quoted, never trusted.
std::string describe_holder(int fd) {
    char buffer[512];
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return "a process that has not written its details yet";
    std::string pid, host, started;
    for (std::string_view line : text::split_lines(std::string_view(buffer, std::size_t(n)))) {
        const std::size_t space = line.find(' ');
        if (space == std::string_view::npos) continue;
        const std::string_view key = line.substr(0, space), value = text::trim(line.substr(space + 1));
        auto clean = [](std::string_view v) {
            std::string q = text::quoted(v, 100);
            return q.substr(1, q.size() - 2);  // without the quotes: the values are short words
        };
        if (key == "pid") pid = clean(value);
        else if (key == "host") host = clean(value);
        else if (key == "started") started = clean(value);
    }
    if (pid.empty()) return "a process that the lock file does not name";
    return "pid " + pid + (host.empty() ? "" : " on " + host) + (started.empty() ? "" : ", started " + started);
}

int open_lock_file(const std::string& path, int flags) {
    // O_NOFOLLOW: a link planted in the batch directory is not followed; O_NONBLOCK: a FIFO does not hang.
    return ::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
}

void check_regular(int fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        fail(path, "cannot read the batch lock file: " + errno_text(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(path, "is not a regular file (apron batch locks its output folder with it; remove it)");
    }
}

// Every output is written in the output folder: one that takes no file fails the run at once, not once per
// image. The probe is named as the atomic writer names its temporaries, so a resumed run removes one that a
// crash left.
void check_writable(const std::string& output_dir) {
    const std::string out = output_dir.empty() ? std::string(".") : output_dir;
    std::string probe = out + "/" + io::temporary_name("write-check", "XXXXXX");
    const int fd = ::mkstemp(probe.data());
    if (fd < 0) fail(out, "cannot write in the output folder: " + errno_text(errno));
    ::close(fd);
    ::unlink(probe.c_str());
}

} // namespace

std::string batch_directory(const std::string& output_dir) {
    return (output_dir.empty() ? std::string(".") : output_dir) + "/.apron-batch";
}

std::string lock_file_path(const std::string& output_dir) { return batch_directory(output_dir) + "/lock"; }

std::optional<std::string> output_directory_problem(const std::string& output_dir) {
    const std::string out = output_dir.empty() ? std::string(".") : output_dir;
    std::error_code ec;
    const fs::file_status st = fs::status(out, ec);
    if (fs::exists(st) && !fs::is_directory(st)) return out + ": the output folder is not a directory";
    const std::string dir = batch_directory(output_dir);
    const fs::file_status bst = fs::status(dir, ec);
    if (fs::exists(bst) && !fs::is_directory(bst))
        return dir + ": is not a directory (apron batch keeps its manifests and lock there; move it away)";
    return std::nullopt;
}

void prepare_output_directory(const std::string& output_dir) {
    if (const auto problem = output_directory_problem(output_dir)) throw Error(*problem);
    const std::string out = output_dir.empty() ? std::string(".") : output_dir;
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) fail(out, "cannot create the output directory: " + ec.message());
    const std::string dir = batch_directory(output_dir);
    fs::create_directory(dir, ec);
    if (ec) fail(dir, "cannot create the batch directory: " + ec.message());
}

OutputLock::OutputLock(const std::string& output_dir) : path_(lock_file_path(output_dir)) {
    prepare_output_directory(output_dir);
    fd_ = open_lock_file(path_, O_RDWR | O_CREAT);  // never O_TRUNC: the holder's details stay until we hold it
    if (fd_ < 0) fail(path_, "cannot open the batch lock file: " + errno_text(errno));
    check_regular(fd_, path_);
    struct flock fl = whole_file(F_WRLCK);
    if (::fcntl(fd_, F_OFD_SETLK, &fl) != 0) {
        const int e = errno;
        std::string message;
        if (e == EAGAIN || e == EACCES)
            message = "another apron batch is writing to this output folder (" + describe_holder(fd_) +
                      "); wait for it to end or choose another output folder";
        else
            message = "cannot lock the output folder: " + errno_text(e);
        ::close(fd_);
        fd_ = -1;
        fail(path_, message);
    }
    try {
        check_writable(output_dir);
    } catch (...) {
        ::close(fd_);
        throw;
    }
    const std::string who = "pid " + std::to_string(::getpid()) + "\nhost " + host_name() + "\nstarted " + utc_now() + "\n";
    // Best effort: the lock is what excludes other runs; the text only names the holder in their message.
    // (A result kept in a variable: glibc's fortified headers make GCC warn on a (void) cast of these calls.)
    if (::ftruncate(fd_, 0) == 0) {
        [[maybe_unused]] const ssize_t written = ::pwrite(fd_, who.data(), who.size(), 0);
    }
}

OutputLock::~OutputLock() {
    if (fd_ < 0) return;
    // No stale details once the run is over (best effort); the kernel drops the lock on close.
    [[maybe_unused]] const int truncated = ::ftruncate(fd_, 0);
    ::close(fd_);
}

std::optional<std::string> output_lock_holder(const std::string& output_dir) {
    const std::string path = lock_file_path(output_dir);
    const int fd = open_lock_file(path, O_RDONLY);
    if (fd < 0) return std::nullopt;  // no lock file: no run has locked this folder
    struct flock fl = whole_file(F_WRLCK);
    std::optional<std::string> holder;
    if (::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) holder = describe_holder(fd);
    ::close(fd);
    return holder;
}

} // namespace apron::batch
