#pragma once
// Whole-file reads and writes at the POSIX level, one implementation for every reader and writer of apron
// (images, job, list and pipeline files, the atomic writer, the batch manifest).
#include <cstddef>
#include <cstdint>
#include <string>

namespace apron::io {

// The whole file. Throws apron::Error "PATH: cannot open WHAT: reason", "PATH: cannot read WHAT: reason"
// (a directory reads as EISDIR), or "PATH: WHAT larger than N MiB" past max_bytes. Regular files are read
// in one allocation; pipes and devices grow the buffer as they go.
std::string read_file(const std::string& path, const std::string& what = "", std::size_t max_bytes = SIZE_MAX);

// write() until every byte is out, retrying partial writes and EINTR (a manifest line lands whole). false
// with errno set on failure.
bool write_all(int fd, const void* data, std::size_t n);

// Makes a new or renamed name in `dir` durable; best effort (a failure cannot undo what was written).
void sync_directory(const std::string& dir);

// Temporary files write_file_atomically leaves when its process is killed mid-write (".NAME.apron-tmp-XXXXXX",
// never a partial file under the target's name): removes those in `dir`. Only while nothing writes there.
void remove_atomic_write_leftovers(const std::string& dir);

} // namespace apron::io
