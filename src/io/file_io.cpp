#include "io/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "apron/errors.hpp"
#include "io/temporary_name.hpp"

namespace apron::io {
namespace {

std::string reason(int e) { return std::generic_category().message(e); }

} // namespace

std::string read_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
    const std::string object = what.empty() ? std::string() : " " + what;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, "cannot open" + object + ": " + reason(errno));
    std::string content;
    int error = 0;
    bool too_large = false;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        error = errno;
    } else if (S_ISDIR(st.st_mode)) {
        error = EISDIR;
    } else {
        if (S_ISREG(st.st_mode) && std::size_t(st.st_size) <= max_bytes) content.reserve(std::size_t(st.st_size));
        char chunk[1 << 16];
        for (;;) {
            const ssize_t n = ::read(fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) error = errno;
            if (n <= 0) break;
            content.append(chunk, std::size_t(n));
            if (content.size() > max_bytes) {
                too_large = true;
                break;
            }
        }
    }
    ::close(fd);
    if (error) fail(path, "cannot read" + object + ": " + reason(error));
    if (too_large) fail(path, (what.empty() ? std::string("file") : what) + " larger than " + std::to_string(max_bytes >> 20) + " MiB");
    return content;
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
