#pragma once
// The cores this process may run on: its CPU affinity (an MPI launcher or a batch scheduler may bind a
// process to a few cores; std::thread::hardware_concurrency counts the whole machine regardless).
#include <sched.h>

#include <algorithm>
#include <thread>

namespace apron {

inline int usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    return std::max(1, int(std::thread::hardware_concurrency()));
}

} // namespace apron
