#pragma once
// Parsing of the options several subcommands share; each error names its option.
#include <optional>
#include <string>

#include "apron/errors.hpp"
#include "apron/image.hpp"
#include "apron/pipeline.hpp"

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
