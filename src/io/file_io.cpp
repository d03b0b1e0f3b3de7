#include "io/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "apron/errors.hpp"
#include "apron/memory.hpp"
#include "io/temporary_name.hpp"

namespace apron::io {
namespace {

std::string reason(int e) { return std::generic_category().message(e); }
std::string object_of(const std::string& what) { return what.empty() ? std::string() : " " + what; }

// "it is a FIFO" or, through a symbolic link, "it links to /dev/urandom, a character device".
[[noreturn]] void refuse_not_regular(const std::string& path, const std::string& what, mode_t mode) {
    std::string how = std::string("it is ") + file_type_name(mode);
    struct stat link {};
    if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
        if (char* target = ::realpath(path.c_str(), nullptr)) {
            how = "it links to " + std::string(target) + ", " + file_type_name(mode);
            std::free(target);
        }
    }
    fail(path, "cannot read" + object_of(what) + ": " + how + ", not a regular file (apron reads only regular files)");
}

} // namespace

const char* file_type_name(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "a special file";
}

InputFile::InputFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
    // stat first: a device is refused without being opened (opening one can have effects of its own).
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail(path, "cannot open" + object_of(what) + ": " + reason(errno));
    if (!S_ISREG(st.st_mode)) refuse_not_regular(path, what, st.st_mode);
    // O_NONBLOCK: should a FIFO take the file's place after the stat, opening it must not wait for a writer.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd_ < 0) fail(path, "cannot open" + object_of(what) + ": " + reason(errno));
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        const int error = errno;
        const mode_t mode = st.st_mode;
        ::close(fd_);
        if (mode != 0 && !S_ISREG(mode)) refuse_not_regular(path, what, mode);
        fail(path, "cannot read" + object_of(what) + ": " + reason(error));
    }
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);  // regular files ignore it; keep reads plain
    size_ = std::uint64_t(st.st_size);
    mtime_ns_ = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

InputFile::~InputFile() {
    if (fd_ >= 0) ::close(fd_);
}

long long InputFile::read_at(std::uint64_t offset, void* dst, std::size_t n) const noexcept {
    auto* p = static_cast<char*>(dst);
    std::size_t done = 0;
    while (done < n) {
        const std::size_t chunk = std::min<std::size_t>(n - done, std::size_t(1) << 30);
        const ssize_t got = ::pread(fd_, p + done, chunk, off_t(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return -1;
        if (got == 0) break;
        done += std::size_t(got);
    }
    return static_cast<long long>(done);
}

long long InputFile::read_scattered(std::uint64_t offset, const iovec* parts, int count) const noexcept {
    // preadv may stop short (a signal, 2 GiB at most a call): go on from where it stopped.
    iovec rest[1];
    long long done = 0;
    while (count > 0) {
        const ssize_t got = ::preadv(fd_, parts, std::min(count, IOV_MAX), off_t(offset + std::uint64_t(done)));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return -1;
        if (got == 0) break;
        done += got;
        std::size_t left = std::size_t(got);
        while (count > 0 && left >= parts->iov_len) left -= parts->iov_len, ++parts, --count;
        if (count > 0 && left > 0) {
            // The buffer cut in two: its rest alone, then the others as they were.
            rest[0] = {static_cast<char*>(parts->iov_base) + left, parts->iov_len - left};
            const long long got_rest = read_at(offset + std::uint64_t(done), rest[0].iov_base, rest[0].iov_len);
            if (got_rest < 0) return -1;
            done += got_rest;
            if (std::size_t(got_rest) < rest[0].iov_len) break;
            ++parts, --count;
        }
    }
    return done;
}

std::string InputFile::read_at(std::uint64_t offset, std::size_t n) const {
    std::string out(n, '\0');
    const long long got = read_at(offset, out.data(), n);
    if (got < 0) fail(path_, "cannot read" + object_of(what_) + ": " + reason(errno));
    out.resize(std::size_t(got));
    return out;
}

std::string InputFile::read_all() const {
    std::string content;
    try {
        content.resize(std::size_t(size_));
    } catch (const std::exception&) {
        fail(path_, "out of host memory reading " + format_bytes(size_));
    }
    read_all_into(std::span<std::uint8_t>(reinterpret_cast<std::uint8_t*>(content.data()), content.size()), {},
                  content.size() ? content.size() : 1);
    return content;
}

void InputFile::read_all_into(std::span<std::uint8_t> dst,
                              const std::function<void(std::span<const std::uint8_t>)>& on_piece,
                              std::size_t piece_bytes) const {
    if (dst.size() != size_) fail(path_, "internal: a buffer of " + std::to_string(dst.size()) + " bytes for a file of " + std::to_string(size_));
    std::uint64_t done = 0;
    long long got = 0;
    while (done < size_) {
        const std::size_t n = std::size_t(std::min<std::uint64_t>(piece_bytes, size_ - done));
        got = read_at(done, dst.data() + done, n);
        if (got < 0) fail(path_, "cannot read" + object_of(what_) + ": " + reason(errno));
        if (got == 0) break;
        if (on_piece) on_piece(dst.subspan(std::size_t(done), std::size_t(got)));
        done += std::uint64_t(got);
    }
    // One byte past the end tells a file that grew from one that was complete.
    char extra = 0;
    const long long more = done == size_ ? read_at(size_, &extra, 1) : 0;
    if (done != size_ || more != 0)
        fail(path_, "changed while it was read (" + std::to_string(size_) + " bytes when opened, then " +
                        (done < size_ ? "fewer" : "more") + "); is another program still writing it?");
}

std::string read_file(const std::string& path, const std::string& what,
                      const std::function<void(std::uint64_t)>& check_size) {
    const InputFile file(path, what);
    check_size(file.size());
    return file.read_all();
}

std::string read_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
    return read_file(path, what, [&](std::uint64_t size) {
        if (size > max_bytes)
            fail(path, (what.empty() ? std::string("the file") : "the " + what) + " is " + format_bytes(size) +
                           ", larger than the limit of " + format_bytes(max_bytes));
    });
}

bool write_all(int fd, const void* data, std::size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= std::size_t(w);
    }
    return true;
}

bool pwrite_all(int fd, const void* data, std::size_t n, std::uint64_t offset) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
        const ssize_t w = ::pwrite(fd, p, n, off_t(offset));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = ENOSPC;
            return false;
        }
        p += w;
        n -= std::size_t(w);
        offset += std::uint64_t(w);
    }
    return true;
}

bool pwritev_all(int fd, const iovec* parts, int count, std::uint64_t offset) {
    while (count > 0) {
        const ssize_t w = ::pwritev(fd, parts, std::min(count, IOV_MAX), off_t(offset));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = ENOSPC;
            return false;
        }
        offset += std::uint64_t(w);
        std::size_t left = std::size_t(w);
        while (count > 0 && left >= parts->iov_len) left -= parts->iov_len, ++parts, --count;
        if (count > 0 && left > 0) {
            // The buffer cut in two: its rest alone, then the others as they were.
            if (!pwrite_all(fd, static_cast<const char*>(parts->iov_base) + left, parts->iov_len - left, offset)) return false;
            offset += parts->iov_len - left;
            ++parts, --count;
        }
    }
    return true;
}

void sync_directory(const std::string& dir) {
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

void remove_atomic_write_leftovers(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (is_temporary_name(name) && e.is_regular_file(ec)) fs::remove(e.path(), ec);
    }
}

} // namespace apron::io
