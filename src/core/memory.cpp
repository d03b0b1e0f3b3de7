// The memory budget's defaults and its text form (apron/memory.hpp).
#include "apron/memory.hpp"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "apron/errors.hpp"

namespace apron {
namespace {

// The cgroup v2 (or v1) memory limit of this process, when one is set: containers see the host's memory
// through sysconf but are killed at their own limit.
std::uint64_t cgroup_limit() {
    for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
        std::ifstream f(path);
        std::string text;
        if (!(f >> text) || text == "max") continue;
        char* end = nullptr;
        const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
        if (end && *end == '\0' && v > 0) return v;
    }
    return 0;
}

} // namespace

std::uint64_t physical_memory_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    std::uint64_t bytes = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) : 0;
    const std::uint64_t limit = cgroup_limit();
    if (limit && (bytes == 0 || limit < bytes)) bytes = limit;
    return bytes;
}

std::uint64_t default_memory_budget() {
    const std::uint64_t physical = physical_memory_bytes();
    return physical ? physical / 4 * 3 : std::uint64_t(16) << 30;
}

std::uint64_t parse_memory_size(std::string_view text, const std::string& what) {
    const std::string s(text);
    auto bad = [&](const std::string& why) -> std::uint64_t {
        fail(what, "'" + s + "' " + why + " (e.g. 8G, 512M, 1.5GiB, 75%)");
    };
    if (s.empty()) bad("is empty");
    char* end = nullptr;
    const double number = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || !std::isfinite(number) || number <= 0 || s[0] == '-' || s[0] == '+')
        bad("is not a positive size");
    std::string unit(end);
    for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
    double bytes = 0;
    if (unit == "%") {
        if (number > 100) bad("is more than 100% of the memory");
        const std::uint64_t physical = physical_memory_bytes();
        if (!physical) bad("is a share, but this machine's memory is unknown");
        bytes = double(physical) * number / 100;
    } else {
        if (unit.ends_with("IB")) unit.resize(unit.size() - 2);
        else if (unit.ends_with("B")) unit.pop_back();
        const std::string units = "KMGT";
        int power = 0;
        if (unit.size() == 1 && units.find(unit[0]) != std::string::npos) power = int(units.find(unit[0])) + 1;
        else if (!unit.empty()) bad("has an unknown unit");
        bytes = std::ldexp(number, 10 * power);
    }
    if (bytes >= 0x1p63) bad("is too large");
    if (bytes < 1) bad("is less than one byte");
    return std::uint64_t(bytes);
}

void require_memory(std::uint64_t need, std::uint64_t budget, const std::string& what, const std::string& breakdown) {
    if (budget == 0) budget = default_memory_budget();
    if (need <= budget) return;
    fail(what, "needs " + format_bytes(need) + " of host memory (" + breakdown + "), over the memory budget of " +
                   format_bytes(budget) + " (raise it with --memory)");
}

std::string format_bytes(std::uint64_t bytes) {
    if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
    const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = double(bytes) / 1024;
    int u = 0;
    while (v >= 1024 && u < 5) v /= 1024, ++u;
    char b[32];
    std::snprintf(b, sizeof b, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return b;
}

} // namespace apron
