#include "batch/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "apron/errors.hpp"

namespace apron::batch {

namespace {

std::string errno_text(int e) { return std::generic_category().message(e); }

} // namespace

InputFile::InputFile(const std::string& path) : path_(path) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore it.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) fail(path, "cannot open: " + errno_text(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
        const int e = errno;
        ::close(fd_);
        fail(path, "cannot read: " + errno_text(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd_);
        fail(path, S_ISDIR(st.st_mode) ? "is a directory, not an image" : "not a regular file");
    }
    size_ = std::uint64_t(st.st_size);
    mtime_ns_ = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

InputFile::~InputFile() {
    if (fd_ >= 0) ::close(fd_);
}

std::string InputFile::read_at(std::uint64_t offset, std::size_t n) const {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::pread(fd_, out.data() + got, n - got, off_t(offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) fail(path_, "cannot read: " + errno_text(errno));
        if (r == 0) break;
        got += std::size_t(r);
    }
    out.resize(got);
    return out;
}

std::string InputFile::read_all() const {
    // One byte more than the size at the open tells a file that grew meanwhile.
    std::string out = read_at(0, std::size_t(size_) + 1);
    if (out.size() > size_) fail(path_, "changed while being read (it grew past its size of " + std::to_string(size_) + " bytes)");
    return out;
}

} // namespace apron::batch
