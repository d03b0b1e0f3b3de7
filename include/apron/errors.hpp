#pragma once
// apron reports every failure as apron::Error: one line that names the file or parameter and says
// what is wrong (SPEC.md, "Errors"). The CLI prints what() and exits non-zero.
#include <stdexcept>
#include <string>

namespace apron {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Shorthand for the common "<what>: <problem>" message shape.
[[noreturn]] inline void fail(const std::string& what, const std::string& problem) {
    throw Error(what + ": " + problem);
}

} // namespace apron
