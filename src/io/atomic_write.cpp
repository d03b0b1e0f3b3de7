// write_file_atomically: readers of `path` see either the old file or the complete new one, never a
// partial write, and a failed write leaves nothing behind (SPEC.md, "Errors": no partial output file).
// The temporary file must be in the target's directory because rename() is only atomic within a file system.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <system_error>

#include "apron/errors.hpp"
#include "apron/io.hpp"
#include "io/file_io.hpp"
#include "io/temporary_name.hpp"

namespace apron {

namespace {

// mkstemp creates the file with mode 0600; a normal output file should get 0666 less the umask. umask()
// can only be read by setting it, which races with other threads, so read it from /proc when available.
mode_t current_umask() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("Umask:", 0) == 0) return mode_t(std::strtoul(line.c_str() + 6, nullptr, 8));
    return 022;
}


}  // namespace

void write_file_atomically(const std::string& path, std::span<const std::uint8_t> bytes) {
    const std::size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.empty()) fail(path, "cannot write: the path names a directory, not a file");
    std::string temp = dir + "/" + io::temporary_name(base);

    auto give_up = [&](const std::string& what, int error, int fd) {
        if (fd >= 0) ::close(fd);
        ::unlink(temp.c_str());
        fail(path, what + ": " + std::generic_category().message(error));
    };

    const int fd = ::mkstemp(temp.data());
    if (fd < 0) fail(path, "cannot create a temporary file in " + dir + ": " + std::generic_category().message(errno));
    if (::fchmod(fd, 0666 & ~current_umask()) != 0) give_up("cannot set permissions", errno, fd);
    errno = 0;
    if (!io::write_all(fd, bytes.data(), bytes.size())) give_up("cannot write", errno ? errno : EIO, fd);
    // fsync before rename: otherwise a crash can leave the new name pointing at an empty file.
    if (::fsync(fd) != 0) give_up("cannot write (fsync)", errno, fd);
    if (::close(fd) != 0) give_up("cannot write (close)", errno, -1);
    if (::rename(temp.c_str(), path.c_str()) != 0) give_up("cannot rename the temporary file into place", errno, -1);

    io::sync_directory(dir);  // the rename itself durable
}

}  // namespace apron
