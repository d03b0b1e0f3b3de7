#pragma once
// FNV-1a, 64 bits: the hash of the resume fingerprint and of the tables it names (not for security; two
// texts that hash alike are told apart by the fingerprint's fields).
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace apron {

inline std::uint64_t fnv1a(std::span<const unsigned char> bytes, std::uint64_t h = 0xcbf29ce484222325ull) {
    for (const unsigned char b : bytes) h = (h ^ b) * 0x100000001b3ull;
    return h;
}

template <class T>
std::uint64_t fnv1a_of(const T* data, std::size_t count) {
    return fnv1a(std::span(reinterpret_cast<const unsigned char*>(data), count * sizeof(T)));
}

// 16 hex digits.
inline std::string hex16(std::uint64_t v) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
    return text;
}

} // namespace apron
