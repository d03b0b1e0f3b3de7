#pragma once
// write() until every byte is out, retrying partial writes and EINTR: the atomic file writer and the batch
// manifest (whose lines must land whole) both need it. false with errno set on failure.
#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace apron::io {

inline bool write_all(int fd, const void* data, std::size_t n) {
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

} // namespace apron::io
