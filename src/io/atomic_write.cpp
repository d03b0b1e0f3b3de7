// write_file_atomically: readers of `path` see either the old file or the complete new one, never a
// partial write, and a failed write leaves nothing behind (SPEC.md, "Errors": no partial output file).
// The temporary file must be in the target's directory because rename() is only atomic within a file system.
//
// What is replaced, and how (documented in apron/io.hpp, "Writing"): the output path is resolved through
// symbolic links first, so the link stays and its target is replaced; anything but a regular file there is
// refused before a byte is written; the file replaced lends its permission bits (and, where the process
// may set them, its owner and group) to the new one.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <system_error>

#include "apron/errors.hpp"
#include "apron/io.hpp"
#include "io/file_io.hpp"
#include "io/output_target.hpp"
#include "io/temporary_name.hpp"
#include "io/temporary_registry.hpp"

namespace apron {

namespace {

std::string reason(int e) { return std::generic_category().message(e); }

// The temporary file is created with mode 0600; a normal output file should get 0666 less the umask. umask()
// can only be read by setting it, which races with other threads, so read it from /proc when available.
mode_t current_umask() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("Umask:", 0) == 0) return mode_t(std::strtoul(line.c_str() + 6, nullptr, 8));
    return 022;
}

// Ten random letters and digits for a temporary name (2^59 possibilities: a clash with another writer's
// name is not a practical concern, and O_EXCL refuses it anyway).
std::string random_suffix() {
    static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char noise[10];
    if (::getrandom(noise, sizeof noise, GRND_NONBLOCK) != ssize_t(sizeof noise)) {
        static std::atomic<std::uint64_t> counter{0};
        std::uint64_t x = std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                          (std::uint64_t(::getpid()) << 32) ^ (counter++ * 0x9E3779B97F4A7C15ull);
        for (unsigned char& b : noise) b = std::uint8_t(x >> 56), x = x * 6364136223846793005ull + 1442695040888963407ull;
    }
    std::string s;
    for (const unsigned char b : noise) s += alphabet[b % 62];
    return s;
}

// Creates the temporary file `temp` (mode 0600, as mkstemp) beside the target, under a reservation in the
// signal-cleanup table taken before the file exists, so that no signal finds a temporary file it does not
// know of. Returns the descriptor (-1 with errno set) and the slot.
int create_temporary(const std::string& dir, const std::string& base, std::string& temp, int& slot) {
    for (int attempt = 0; attempt < 100; ++attempt) {
        temp = dir + "/" + io::temporary_name(base, random_suffix());
        slot = io::reserve_temporary(temp.c_str());
        const int fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) {
            io::confirm_temporary(slot);
            return fd;
        }
        const int error = errno;
        io::unregister_temporary(slot);
        slot = -1;
        if (error != EEXIST) {
            errno = error;
            return -1;
        }
    }
    errno = EEXIST;
    return -1;
}

}  // namespace

std::string io::directory_of(const std::string& path) {
    const std::size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

void io::refuse_directory(const std::string& path) {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
    fail(path, "is a directory; give a file name such as " + (path.ends_with('/') ? path : path + "/") + "name.png");
}

io::OutputTarget io::resolve_output(const std::string& path) {
    OutputTarget t{path};
    for (int links = 0;; ++links) {
        // Anything lstat cannot see (a missing file, a missing or unreadable directory) is a new file; creating
        // the temporary file next to it reports what is wrong with its directory.
        if (::lstat(t.path.c_str(), &t.st) != 0) return t;
        if (!S_ISLNK(t.st.st_mode)) break;
        if (links == 40) fail(path, "cannot write: too many levels of symbolic links");
        std::string target(std::size_t(PATH_MAX), '\0');
        const ssize_t n = ::readlink(t.path.c_str(), target.data(), target.size());
        if (n < 0) fail(path, "cannot write: cannot read the symbolic link " + t.path + ": " + reason(errno));
        target.resize(std::size_t(n));
        t.path = target.starts_with('/') ? target : directory_of(t.path) + "/" + target;
    }
    if (S_ISDIR(t.st.st_mode)) refuse_directory(path);
    if (!S_ISREG(t.st.st_mode)) {
        const std::string what = t.path == path ? std::string("is ") + io::file_type_name(t.st.st_mode)
                                                : "links to " + t.path + ", " + io::file_type_name(t.st.st_mode);
        fail(path, what + ", not a regular file; apron writes only regular files");
    }
    t.exists = true;
    return t;
}

namespace {

// The whole of write_file_atomically, with `write_all_to(fd)` putting the bytes in (false with errno set on
// failure).
template <class Write>
void write_atomically(const std::string& path, Write write_all_to) {
    const io::OutputTarget target = io::resolve_output(path);
    const std::string dir = io::directory_of(target.path);
    const std::size_t slash = target.path.find_last_of('/');
    const std::string base = slash == std::string::npos ? target.path : target.path.substr(slash + 1);
    if (base.empty()) fail(path, "cannot write: the path names a directory, not a file");
    std::string temp;
    int slot = -1;
    auto give_up = [&](const std::string& what, int error, int fd) {
        if (fd >= 0) ::close(fd);
        ::unlink(temp.c_str());
        const bool interrupted = !io::unregister_temporary(slot);
        if (interrupted) fail(path, "interrupted by a signal; nothing was written");
        fail(path, what + ": " + reason(error));
    };

    // From its creation until the rename, SIGINT/SIGTERM/SIGHUP/SIGQUIT remove the temporary file
    // (install_signal_cleanup).
    const int fd = create_temporary(dir, base, temp, slot);
    if (fd < 0) fail(path, "cannot create a temporary file in " + dir + ": " + reason(errno));

    if (target.exists) {
        // The replaced file's owner and group where this process may set them: root sets both, others at
        // most a group they belong to (EPERM otherwise, which leaves the defaults).
        struct stat mine {};
        if (::fstat(fd, &mine) != 0) give_up("cannot write", errno, fd);
        if (mine.st_uid != target.st.st_uid || mine.st_gid != target.st.st_gid) {
            const uid_t owner = ::geteuid() == 0 ? target.st.st_uid : uid_t(-1);
            if (::fchown(fd, owner, target.st.st_gid) != 0 && errno != EPERM)
                give_up("cannot give the new file the owner and group of the old one", errno, fd);
            if (::fstat(fd, &mine) != 0) give_up("cannot write", errno, fd);
        }
        // Its permission bits; set-user/group-ID only when the owner and group carried over too.
        mode_t mode = target.st.st_mode & 07777;
        if (mine.st_uid != target.st.st_uid || mine.st_gid != target.st.st_gid) mode &= ~mode_t(S_ISUID | S_ISGID);
        if (::fchmod(fd, mode) != 0) give_up("cannot set permissions", errno, fd);
    } else if (::fchmod(fd, 0666 & ~current_umask()) != 0) {
        give_up("cannot set permissions", errno, fd);
    }
    errno = 0;
    if (!write_all_to(fd)) give_up("cannot write", errno ? errno : EIO, fd);
    // fsync before rename: otherwise a crash can leave the new name pointing at an empty file.
    if (::fsync(fd) != 0) give_up("cannot write (fsync)", errno, fd);
    if (::close(fd) != 0) give_up("cannot write (close)", errno, -1);
    if (::rename(temp.c_str(), target.path.c_str()) != 0)
        give_up("cannot rename the temporary file into place", errno, -1);
    io::unregister_temporary(slot);

    io::sync_directory(dir);  // the rename itself durable
}

}  // namespace

void write_file_atomically(const std::string& path, std::span<const std::uint8_t> bytes) {
    write_atomically(path, [&](int fd) { return io::write_all(fd, bytes.data(), bytes.size()); });
}

namespace io {

void write_file_atomically_with(const std::string& path, const std::function<bool(int fd)>& write) {
    write_atomically(path, write);
}

void write_pieces_atomically(const std::string& path, std::span<const std::span<const std::uint8_t>> pieces,
                             const std::function<void(std::span<const std::uint8_t>)>& before_each,
                             std::size_t chunk_bytes) {
    write_atomically(path, [&](int fd) {
        for (std::span<const std::uint8_t> piece : pieces)
            for (std::size_t at = 0; at < piece.size(); at += chunk_bytes) {
                const std::span<const std::uint8_t> chunk = piece.subspan(at, std::min(chunk_bytes, piece.size() - at));
                if (before_each) before_each(chunk);
                if (!io::write_all(fd, chunk.data(), chunk.size())) return false;
            }
        return true;
    });
}

}  // namespace io

}  // namespace apron
