#pragma once
// Strings built from pieces with one allocation. Also the way around a false positive of GCC 12:
// `"literal" + std::string(...)` inlines basic_string::insert, whose memcpy -Wrestrict then reports as
// overlapping (GCC bug 105329) wherever the right operand is a temporary.
#include <initializer_list>
#include <string>
#include <string_view>

namespace apron {

inline std::string concat(std::initializer_list<std::string_view> pieces) {
    std::size_t size = 0;
    for (std::string_view p : pieces) size += p.size();
    std::string s;
    s.reserve(size);
    for (std::string_view p : pieces) s += p;
    return s;
}

} // namespace apron
