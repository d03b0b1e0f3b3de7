#pragma once
// The name write_file_atomically gives its temporary file beside the target, and how to recognise one.
#include <string>

namespace apron::io {

constexpr const char* temporary_marker = ".apron-tmp-";

// ".BASE.apron-tmp-SUFFIX" (SUFFIX random), BASE cut to 200 bytes to stay within NAME_MAX.
inline std::string temporary_name(std::string base, const std::string& suffix) {
    if (base.size() > 200) base.resize(200);
    return "." + base + temporary_marker + suffix;
}

inline bool is_temporary_name(const std::string& name) {
    return name.starts_with(".") && name.find(temporary_marker) != std::string::npos;
}

}  // namespace apron::io
