#pragma once
// The memory budget: how much host memory one apron run may take (--memory on the command line,
// RunOptions::memory_budget and ReadOptions::memory_budget in the library). Runs estimate what they need
// before they allocate and fail at once, naming the file or step and the bytes needed, rather than
// exhausting the machine.
#include <cstdint>
#include <string>
#include <string_view>

namespace apron {

// Physical memory of this machine (sysconf), or of the cgroup when a smaller limit applies; 0 if unknown.
std::uint64_t physical_memory_bytes();
// The default budget: three quarters of physical_memory_bytes() (16 GiB when that is unknown).
std::uint64_t default_memory_budget();
// "4G", "512M", "1.5GiB", "800000000", "75%" (of physical memory); K/M/G/T are powers of 1024, with or
// without a trailing "iB" or "B". Throws apron::Error "WHAT: ..." for anything else, zero, or overflow.
std::uint64_t parse_memory_size(std::string_view text, const std::string& what = "--memory");
// Throws apron::Error "WHAT: needs N of host memory (BREAKDOWN), over the memory budget of B (raise it
// with --memory)" when need > budget (0: default_memory_budget()).
void require_memory(std::uint64_t need, std::uint64_t budget, const std::string& what, const std::string& breakdown);
// "1.50 GiB", "12.0 MiB", "512 bytes": for messages.
std::string format_bytes(std::uint64_t bytes);

} // namespace apron
