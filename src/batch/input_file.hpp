#pragma once
// One input image file of a batch, opened once: its size and modification time from the open descriptor,
// any bytes of its header (to know what it decodes to before it is read whole), then all of it. What was
// read is what is decoded and what the manifest's CRC-32 describes; the file is never read twice.
#include <cstddef>
#include <cstdint>
#include <string>

namespace apron::batch {

class InputFile {
public:
    // Opens and stats `path`. apron::Error "PATH: cannot open: why" (missing, no permission), or "PATH: not
    // a regular file" (a directory, a FIFO that would block a reader forever, a device).
    explicit InputFile(const std::string& path);
    ~InputFile();
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    const std::string& path() const { return path_; }
    std::uint64_t size() const { return size_; }  // at the open
    std::int64_t mtime_ns() const { return mtime_ns_; }

    // Up to `n` bytes from `offset` (fewer at the end of the file); apron::Error naming the file on a
    // read error.
    std::string read_at(std::uint64_t offset, std::size_t n) const;
    // The whole file. apron::Error naming the file on a read error, or when it grew past its size at the
    // open (it is being written: what was budgeted and what would be decoded are not the same file).
    std::string read_all() const;

private:
    std::string path_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
    std::int64_t mtime_ns_ = 0;
};

} // namespace apron::batch
