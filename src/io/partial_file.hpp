#pragma once
// The partial file a row sink writes (row_stream.hpp): created (or reopened) beside the target as
// ".NAME.apron-partial", written with pwrite or through a mapping, renamed into place by commit(); removed
// by the destructor (and by SIGINT/SIGTERM) unless it is kept for --resume. Shared by the sinks of
// row_sink.cpp (fixed offsets) and the encoded sinks (compressed TIFF, PNG), which write it in order.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>

#include "apron/errors.hpp"
#include "io/codecs.hpp"
#include "io/file_io.hpp"
#include "io/output_target.hpp"
#include "io/row_stream.hpp"
#include "io/temporary_registry.hpp"

namespace apron::io::detail {

inline std::string reason(int e) { return std::generic_category().message(e); }

// Tiled TIFF outputs (uncompressed and compressed): tiles of side x side, a multiple of 16 as TIFF asks.
inline void check_tile_side(const std::string& path, int side) {
    if (side < 16 || side % 16 || side > 8192)
        fail(path, "tiles of " + std::to_string(side) + " pixels: the tile side must be a multiple of 16 from 16 to 8192");
}

// Created with `size` bytes (sparse; 0 for a file written in order, which grows as it is written).
class PartialFile {
public:
    PartialFile(const std::string& path, std::uint64_t size, const SinkOptions& options) : path_(path), keep_(options.keep_partial) {
        target_ = resolve_output(path);
        partial_ = partial_path_for(path);
        dir_ = directory_of(target_.path);
        if (!keep_) slot_ = register_temporary(partial_.c_str());  // SIGINT/SIGTERM remove it
        // A new partial file is a new file (O_EXCL), whatever was at its name: a link planted there is
        // removed, never followed or written through (a hard link's other names keep their bytes). A
        // reopened one is never followed either, and must be a plain file of one name.
        if (!options.reopen_partial) ::unlink(partial_.c_str());
        const int flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (options.reopen_partial ? 0 : O_EXCL);
        fd_ = ::open(partial_.c_str(), flags, 0666);
        if (fd_ < 0) abandon("cannot create " + partial_ + ": " + reason(errno));
        struct stat st {};
        if (::fstat(fd_, &st) != 0) abandon("cannot write: " + reason(errno));
        if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
            abandon(partial_ + " is not a plain file of one name (remove it to start over)");
        if (target_.exists) ::fchmod(fd_, target_.st.st_mode & 0777);
        holds_nothing_ = st.st_size == 0;  // made (or found empty) by this run: nothing to resume from
        reopened_ = options.reopen_partial && std::uint64_t(st.st_size) == size;
        if (options.reopen_partial && !reopened_ && st.st_size != 0)
            abandon("the partial file " + partial_ + " has " + std::to_string(st.st_size) + " bytes, not the " +
                    std::to_string(size) + " this image needs; remove it to start over");
        // The file has its final size from the start (sparse), so every band lands at its offset. A size past
        // a file-size limit (ulimit -f) fails here with EFBIG; a reopened file already has its size, and a
        // limit that refuses it even so is resumable: it is kept.
        if (::ftruncate(fd_, off_t(size)) != 0) {
            const int e = errno;
            const std::string why = "cannot size " + partial_ + " to " + std::to_string(size) + " bytes: " + reason(e);
            if (keep_ && reopened_ && out_of_room(e)) abandon(why + " (partial output kept for --resume)", true);
            abandon(why);
        }
    }
    ~PartialFile() {
        if (fd_ >= 0) ::close(fd_);
        if (!committed_ && !keep_) ::unlink(partial_.c_str());
        if (slot_ >= 0) unregister_temporary(slot_);
    }
    PartialFile(const PartialFile&) = delete;
    PartialFile& operator=(const PartialFile&) = delete;

    bool reopened() const { return reopened_; }
    // The open file, for writers that go through a library of their own (libtiff, libpng) rather than
    // write_at; never closed by them.
    int fd() const { return fd_; }
    const std::string& path() const { return path_; }
    bool keep() const { return keep_; }
    const std::string& partial() const { return partial_; }

    void write_at(std::uint64_t offset, const void* data, std::size_t n, const std::string& what) {
        if (!pwrite_all(fd_, data, n, offset)) write_failed(errno, what);
    }
    // The one-line error of a failed write (errno `e`), saying what becomes of the partial file.
    // Only a want of room (out_of_room) keeps a resumable sink's partial file; any other failure removes it.
    [[noreturn]] void write_failed(int e, const std::string& what) const {
        const std::string message = path_ + ": " + reason(e) + " while writing " + what;
        if (keep_ && out_of_room(e)) throw OutOfRoomError(message + " (partial output kept for --resume: " + partial_ + ")");
        throw Error(message + " (the partial file " + partial_ + " is removed)");
    }
    static bool out_of_room(int e) { return e == ENOSPC || e == EDQUOT || e == EFBIG; }
    // [offset, offset + n) of the file mapped for writing, its blocks reserved first (fallocate), so that a
    // full disk is an error here, never a SIGBUS while the mapping is written. Empty where the file system
    // reserves nothing (then write_at). Threads writing disjoint parts of one mapping do not queue on the
    // file's lock as pwrite does (on tmpfs: 8 threads write about twice as fast as with pwrite).
    struct Mapping {
        void* base = nullptr;
        std::size_t length = 0;
        std::uint8_t* data = nullptr;
        Mapping() = default;
        Mapping(Mapping&& o) noexcept : base(o.base), length(o.length), data(o.data) { o.base = nullptr; }
        Mapping& operator=(Mapping&&) = delete;
        ~Mapping() {
            if (base) ::munmap(base, length);
        }
    };
    Mapping map_for_write(std::uint64_t offset, std::size_t n, const std::string& what) {
        Mapping m;
        if (!mappable_ || n == 0) return m;
        const int rc = ::posix_fallocate(fd_, off_t(offset), off_t(n));
        if (rc == EOPNOTSUPP || rc == EINVAL) {
            mappable_ = false;
            return m;
        }
        if (rc != 0) write_failed(rc, what);
        static const std::uint64_t page = std::uint64_t(::sysconf(_SC_PAGESIZE));
        const std::uint64_t start = offset / page * page;
        m.length = std::size_t(offset + n - start);
        void* p = ::mmap(nullptr, m.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, off_t(start));
        if (p == MAP_FAILED) {
            mappable_ = false;
            return Mapping{};
        }
        m.base = p;
        m.data = static_cast<std::uint8_t*>(p) + (offset - start);
        return m;
    }
    bool read_at(std::uint64_t offset, void* data, std::size_t n) const {
        return ::pread(fd_, data, n, off_t(offset)) == ssize_t(n);
    }
    void sync() {
        if (::fdatasync(fd_) != 0) write_failed(errno, "the rows so far (fdatasync)");
    }
    void commit() {
        if (::fsync(fd_) != 0) fail(path_, "cannot write (fsync of " + partial_ + "): " + reason(errno));
        if (::close(fd_) != 0) {
            fd_ = -1;
            fail(path_, "cannot write (close of " + partial_ + "): " + reason(errno));
        }
        fd_ = -1;
        if (::rename(partial_.c_str(), target_.path.c_str()) != 0)
            fail(path_, "cannot rename " + partial_ + " into place: " + reason(errno));
        committed_ = true;
        sync_directory(dir_);
    }

private:
    // A constructor that throws runs no destructor: what it opened and registered is undone here first.
    [[noreturn]] void abandon(const std::string& why, bool resumable = false) {
        // Only a file this run opened is removed, and a kept one only while it holds nothing (a size past a
        // file-size limit fails before a band is written).
        if (fd_ >= 0) {
            ::close(fd_);
            if (!keep_ || holds_nothing_) ::unlink(partial_.c_str());
        }
        fd_ = -1;
        if (slot_ >= 0) unregister_temporary(slot_);
        slot_ = -1;
        if (resumable) throw OutOfRoomError(path_ + ": " + why);
        fail(path_, why);
    }

    std::string path_, partial_, dir_;
    OutputTarget target_;
    bool keep_ = false, committed_ = false, reopened_ = false, holds_nothing_ = false;
    std::atomic<bool> mappable_{true};  // false once the file system refused a mapping (then pwrite)
    int fd_ = -1, slot_ = -1;
};

}  // namespace apron::io::detail
