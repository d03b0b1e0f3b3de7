#pragma once
// Small text helpers shared by the batch input parsers (job, list and pipeline files): line splitting,
// trimming, quoting untrusted text in one-line messages, and reading a whole file with a size limit.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "apron/errors.hpp"

namespace apron::batch::text {

inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

inline std::string_view trim(std::string_view s) {
    while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
    return s;
}

// The lines of `text` without their '\n'; a final '\n' does not start another line. Line i is number i + 1.
inline std::vector<std::string_view> split_lines(std::string_view text) {
    std::vector<std::string_view> lines;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        lines.push_back(text.substr(pos, end - pos));
        pos = end + 1;
    }
    return lines;
}

// Untrusted text for a message: quoted, cut to a readable length, control bytes as \xNN, so that whatever
// a file holds, the message stays one printable line.
inline std::string quoted(std::string_view s, std::size_t limit = 80) {
    static const char digits[] = "0123456789abcdef";
    std::string out = "'";
    for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += digits[c >> 4];
            out += digits[c & 15];
        } else {
            out += char(c);
        }
    }
    if (s.size() > limit) out += "...";
    return out + "'";
}

// The whole file; throws apron::Error "PATH: cannot read WHAT: reason" (a directory reads as EISDIR).
inline std::string read_file(const std::string& path, const char* what, std::size_t max_bytes) {
    auto reason = [](int e) { return std::generic_category().message(e); };
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, std::string("cannot open ") + what + ": " + reason(errno));
    std::string content;
    char buffer[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int e = errno;
            ::close(fd);
            fail(path, std::string("cannot read ") + what + ": " + reason(e));
        }
        if (n == 0) break;
        content.append(buffer, std::size_t(n));
        if (content.size() > max_bytes) {
            ::close(fd);
            fail(path, std::string(what) + " larger than " + std::to_string(max_bytes >> 20) + " MiB");
        }
    }
    ::close(fd);
    return content;
}

} // namespace apron::batch::text
