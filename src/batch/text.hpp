#pragma once
// Small text helpers shared by the batch input parsers (job, list and pipeline files): line splitting,
// trimming, and quoting untrusted text in one-line messages. (Files are read by io::read_file.)
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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

} // namespace apron::batch::text
