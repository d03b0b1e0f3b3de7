#pragma once
// A cursor over the ASCII header of Netpbm-family files (PNM, PAM, PFM): whitespace-separated tokens,
// with '#' comments to the end of the line wherever whitespace is allowed. Every read is bounds-checked
// and reports "truncated" or a malformed field with the file's name.
#include <cstdint>
#include <string>
#include <string_view>

#include "io/codecs.hpp"

namespace apron::io {

class TextHeader {
public:
    TextHeader(Bytes bytes, const std::string& name, const char* format)
        : bytes_(bytes), name_(name), format_(format) {}

    static bool is_space(std::uint8_t c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
    }

    std::size_t pos() const { return pos_; }
    std::size_t remaining() const { return bytes_.size() - pos_; }
    bool at_end() const { return pos_ >= bytes_.size(); }
    Bytes rest() const { return bytes_.subspan(pos_); }
    void skip(std::size_t n) { pos_ += n; }

    void skip_space_and_comments() {
        while (pos_ < bytes_.size()) {
            if (bytes_[pos_] == '#') {
                while (pos_ < bytes_.size() && bytes_[pos_] != '\n' && bytes_[pos_] != '\r') ++pos_;
            } else if (is_space(bytes_[pos_])) {
                ++pos_;
            } else {
                return;
            }
        }
    }

    // An unsigned decimal number after optional whitespace and comments. Values beyond 2^40 are refused
    // here (no Netpbm field can usefully be that large) so that accumulation can never overflow.
    std::uint64_t number(const char* what) {
        skip_space_and_comments();
        if (at_end()) truncated(what);
        if (bytes_[pos_] < '0' || bytes_[pos_] > '9')
            malformed(std::string("expected a non-negative integer for the ") + what);
        std::uint64_t v = 0;
        while (pos_ < bytes_.size() && bytes_[pos_] >= '0' && bytes_[pos_] <= '9') {
            v = v * 10 + (bytes_[pos_++] - '0');
            if (v > (std::uint64_t(1) << 40)) malformed(std::string("the number for the ") + what + " is too large");
        }
        return v;
    }

    // The next run of non-space characters (at most `limit` of them), after whitespace and comments.
    std::string_view token(const char* what, std::size_t limit = 64) {
        skip_space_and_comments();
        if (at_end()) truncated(what);
        const std::size_t start = pos_;
        while (pos_ < bytes_.size() && !is_space(bytes_[pos_]) && pos_ - start < limit) ++pos_;
        return {reinterpret_cast<const char*>(bytes_.data()) + start, pos_ - start};
    }

    // The single whitespace byte that separates a binary header from its raster (as Netpbm requires).
    // Netpbm's own reader takes a comment right after the last number as part of that whitespace.
    void end_of_header() {
        if (!at_end() && bytes_[pos_] == '#')
            while (pos_ < bytes_.size() && bytes_[pos_] != '\n' && bytes_[pos_] != '\r') ++pos_;
        if (at_end()) truncated("pixel data");
        if (!is_space(bytes_[pos_])) malformed("expected one whitespace character before the pixel data");
        ++pos_;
    }

    [[noreturn]] void truncated(const char* what) const {
        fail(name_, std::string("truncated ") + format_ + " file (ends before the " + what + ")");
    }
    [[noreturn]] void malformed(const std::string& problem) const {
        fail(name_, std::string("malformed ") + format_ + " file: " + problem);
    }

private:
    Bytes bytes_;
    const std::string& name_;
    const char* format_;
    std::size_t pos_ = 0;
};

}  // namespace apron::io
