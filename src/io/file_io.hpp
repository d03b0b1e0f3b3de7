#pragma once
// Whole-file reads and writes at the POSIX level, one implementation for every reader and writer of apron
// (images, masks, job, list and pipeline files, the atomic writer, the batch manifest).
//
// apron reads only regular files (symbolic links are followed; their target must be one). A FIFO, a
// device such as /dev/zero or /dev/urandom, a socket or a directory is refused by name before anything is
// read: those can block forever or deliver endless data, and their size is unknown in advance. A regular
// file is read in one allocation of the size fstat gives, checked against the caller's limit first.
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace apron::io {

// "a FIFO", "a character device", "a block device", "a socket", "a directory", "a regular file", ...
const char* file_type_name(mode_t mode);

// An open regular file (read-only). Opening refuses anything else with "PATH: cannot read WHAT: it is a
// FIFO, not a regular file (apron reads only regular files)", naming a symbolic link's target. A FIFO is
// opened without blocking, and a device is never opened at all.
class InputFile {
public:
    InputFile(const std::string& path, const std::string& what = "");
    ~InputFile();
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    const std::string& path() const { return path_; }
    std::uint64_t size() const { return size_; }  // from fstat when opened
    std::int64_t mtime_ns() const { return mtime_ns_; }
    // Up to n bytes at `offset`; fewer only at the end of the file; -1 (errno set) on a read error.
    // Never throws, so it may be called from C libraries' callbacks.
    long long read_at(std::uint64_t offset, void* dst, std::size_t n) const noexcept;
    // Bytes from `offset` on, scattered into `count` buffers in order (preadv: a band of padded or
    // bottom-up rows in one call); the bytes read, fewer only at the end of the file, -1 (errno set) on a
    // read error. Never throws.
    long long read_scattered(std::uint64_t offset, const iovec* parts, int count) const noexcept;
    // The same as a string; throws apron::Error naming the file on a read error.
    std::string read_at(std::uint64_t offset, std::size_t n) const;
    // The whole file, exactly size() bytes; throws "PATH: changed while it was read ..." when it grew or
    // shrank since the open (another program still writing it), so what was checked is what is read.
    std::string read_all() const;
    // The whole file into `dst` (exactly size() bytes), read in pieces of `piece_bytes`, each handed to
    // `on_piece` as soon as it is read, while it is still in the cache (a checksum then costs no second pass
    // over memory). Throws as read_all().
    void read_all_into(std::span<std::uint8_t> dst, const std::function<void(std::span<const std::uint8_t>)>& on_piece,
                       std::size_t piece_bytes = std::size_t(1) << 20) const;

private:
    std::string path_, what_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
    std::int64_t mtime_ns_ = 0;
};

// The whole file. `check_size(bytes)` runs with the size the file has when opened, before anything is
// allocated, and throws to refuse it. Throws apron::Error "PATH: cannot open WHAT: reason", "PATH: cannot
// read WHAT: reason", the refusal of a file that is not regular, or "PATH: changed while it was read ..."
// when the file grows or shrinks under the reader (another program still writing it).
std::string read_file(const std::string& path, const std::string& what,
                      const std::function<void(std::uint64_t)>& check_size);
// The same with a plain limit: "PATH: WHAT is N, larger than the limit of M".
std::string read_file(const std::string& path, const std::string& what = "", std::size_t max_bytes = SIZE_MAX);

// write_file_atomically of the pieces one after the other (a header and an image's rows where they lie), in
// chunks of at most `chunk_bytes`, each handed to `before_each` just before it is written, while the write is
// about to bring it into the cache anyway (a checksum then costs no second pass over memory).
void write_pieces_atomically(const std::string& path, std::span<const std::span<const std::uint8_t>> pieces,
                             const std::function<void(std::span<const std::uint8_t>)>& before_each = {},
                             std::size_t chunk_bytes = std::size_t(1) << 20);

// write_file_atomically with `write(fd)` putting the bytes into the temporary file (false with errno set on
// failure): the file may be written out of order, with pwrite from several threads (the image writers' rows
// at fixed offsets). The same guarantees: a temporary beside the target, removed on failure and on signals,
// the permissions of a replaced file, fsync, then rename.
void write_file_atomically_with(const std::string& path, const std::function<bool(int fd)>& write);

// write() until every byte is out, retrying partial writes and EINTR (a manifest line lands whole). false
// with errno set on failure.
bool write_all(int fd, const void* data, std::size_t n);
// pwrite() of all n bytes at `offset`, the same way (no exception: libtiff's and libpng's write callbacks
// use it). false with errno set on failure (ENOSPC where the file takes nothing).
bool pwrite_all(int fd, const void* data, std::size_t n, std::uint64_t offset);

// pwritev() of every byte of the `count` buffers at `offset`, the same way (retrying partial writes).
bool pwritev_all(int fd, const iovec* parts, int count, std::uint64_t offset);

// Makes a new or renamed name in `dir` durable; best effort (a failure cannot undo what was written).
void sync_directory(const std::string& dir);

// Temporary files write_file_atomically leaves when its process is killed mid-write (".NAME.apron-tmp-XXXXXX",
// never a partial file under the target's name): removes those in `dir`. Only while nothing writes there.
// (SIGINT, SIGTERM, SIGHUP and SIGQUIT remove them on the spot once install_signal_cleanup() ran; SIGKILL
// and a crash cannot.)
void remove_atomic_write_leftovers(const std::string& dir);

} // namespace apron::io
