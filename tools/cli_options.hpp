#pragma once
// Parsing of the options several subcommands share; each error names its option.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "apron/errors.hpp"
#include "apron/image.hpp"
#include "apron/io.hpp"
#include "apron/memory.hpp"
#include "apron/pipeline.hpp"

// The values of the shared options, as CLI11 value names ("a|b|c"): --help shows them, and the man page and
// the shell completions (cli_docs.cpp) read them back. The parsers below accept exactly these.
inline constexpr const char* backend_values = "auto|cpu|reference|cuda";
inline constexpr const char* algo_values = "auto|direct|separable|low-rank|fft|tensor";
inline constexpr const char* type_values = "u8|u16|f32";
inline constexpr const char* byte_order_values = "big|little";
inline constexpr const char* metadata_values = "keep|strip";
inline constexpr const char* metadata_help =
    "keep: the input's colour profile and Exif block (orientation) go into the output where its format has a "
    "place (JPEG, PNG, TIFF), a FITS header into FITS; strip: none";

inline apron::Backend backend_option(const std::string& name) {
    auto backend = apron::parse_backend(name);
    if (!backend) throw apron::Error("--backend: '" + name + "' is not auto, cpu, reference or cuda");
    return *backend;
}

inline apron::Algorithm algo_option(const std::string& name) {
    auto algo = apron::parse_algorithm(name);
    if (!algo) throw apron::Error("--algo: '" + name + "' is not auto, direct, separable, low-rank, fft or tensor");
    return *algo;
}

inline std::optional<apron::PixelType> type_option(const std::string& name, const char* option) {
    if (name.empty()) return std::nullopt;
    auto t = apron::parse_pixel_type(name);
    if (!t) throw apron::Error(std::string(option) + ": '" + name + "' is not u8, u16 or f32");
    return t;
}

// --memory: a size ("8G", "75%"); empty: the default budget.
inline std::uint64_t memory_option(const std::string& text) {
    return text.empty() ? apron::default_memory_budget() : apron::parse_memory_size(text, "--memory");
}

// --metadata: whether the input's colour profile and Exif block are carried to the output.
inline bool keep_metadata_option(const std::string& name) {
    if (name == "keep") return true;
    if (name == "strip") return false;
    throw apron::Error("--metadata: '" + name + "' is not keep or strip");
}

// --byte-order of 16-bit binary PNM samples: big (Netpbm) or little (GenConv's files).
inline apron::ByteOrder byte_order_option(const std::string& name) {
    if (name == "big") return apron::ByteOrder::big;
    if (name == "little") return apron::ByteOrder::little;
    throw apron::Error("--byte-order: '" + name + "' is not big or little");
}

// --size WIDTHxHEIGHT: two positive decimal integers that fit in an int (sscanf's %d wraps on overflow).
inline std::pair<int, int> size_option(const std::string& text, const char* option = "--size") {
    const std::size_t x = text.find('x');
    auto number = [&](std::string_view digits) {
        if (digits.empty()) throw apron::Error(std::string(option) + ": '" + text + "' is not WIDTHxHEIGHT");
        long long v = 0;  // saturates just past INT_MAX
        for (const char c : digits) {
            if (c < '0' || c > '9') throw apron::Error(std::string(option) + ": '" + text + "' is not WIDTHxHEIGHT");
            v = std::min(v * 10 + (c - '0'), (long long)INT_MAX + 1);
        }
        if (v < 1) throw apron::Error(std::string(option) + ": '" + text + "' is not WIDTHxHEIGHT (both positive)");
        if (v > INT_MAX)
            throw apron::Error(std::string(option) + ": " + std::string(digits) + " is too large (a side is at most " +
                               std::to_string(INT_MAX) + ")");
        return int(v);
    };
    if (x == std::string::npos) throw apron::Error(std::string(option) + ": '" + text + "' is not WIDTHxHEIGHT");
    const std::string_view all(text);
    return {number(all.substr(0, x)), number(all.substr(x + 1))};
}
