#pragma once
// apron reports every failure as apron::Error: one line that names the file or parameter and says
// what is wrong (SPEC.md, "Errors"). The CLI prints what() and exits non-zero.
//
// Messages quote what files hold (header lines, names), so the constructor escapes control bytes (below
// 0x20, and 0x7f) as \xNN: whatever a file contains, the message is one printable line, and a NUL byte
// cannot cut it short when it is printed as a C string. Bytes from 0x80 up are kept, since file names are
// often UTF-8.
#include <stdexcept>
#include <string>
#include <string_view>

namespace apron {

// `text` with every byte below 0x20 and 0x7f written as \xNN (e.g. a NUL as \x00, a newline as \x0a).
inline std::string printable_line(std::string_view text) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) {
            out.push_back('\\');
            out.push_back('x');
            out.push_back(digits[c >> 4]);
            out.push_back(digits[c & 15]);
        } else {
            out.push_back(ch);
        }
    }
    return out;
}

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(printable_line(message)) {}
};

// Shorthand for the common "<what>: <problem>" message shape.
[[noreturn]] inline void fail(const std::string& what, const std::string& problem) {
    throw Error(what + ": " + problem);
}

} // namespace apron
