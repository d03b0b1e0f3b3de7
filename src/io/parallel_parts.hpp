#pragma once
// Work split into parts run by a few threads at once, for the row readers and writers: one thread copying
// between the page cache and a buffer moves about 2 GB/s, so a band of a huge image is read or written in
// parts. When parts fail, the failure of the lowest part is rethrown here once every thread has stopped, so
// the error named (the first bad sample of a file, say) is the one a single thread would have met first.
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace apron::io {

// Calls part(k) for k in [0, parts), on up to `threads` threads (the caller's among them).
template <class Part>
void run_parts(int parts, int threads, const Part& part) {
    threads = std::max(1, std::min(threads, parts));
    if (threads == 1) {
        for (int k = 0; k < parts; ++k) part(k);
        return;
    }
    std::atomic<int> next{0};
    std::exception_ptr failure;
    int failed_part = parts;
    std::mutex failure_mutex;
    auto work = [&] {
        for (int k; (k = next.fetch_add(1)) < parts;) {
            try {
                part(k);
            } catch (...) {
                std::lock_guard lock(failure_mutex);
                if (k < failed_part) failure = std::current_exception(), failed_part = k;
                // The other threads stop after their current part; parts below k were all handed out
                // before it, so each still finishes and may report an earlier failure.
                next = parts;
            }
        }
    };
    std::vector<std::thread> helpers;
    for (int t = 1; t < threads; ++t) helpers.emplace_back(work);
    work();
    for (auto& t : helpers) t.join();
    if (failure) std::rethrow_exception(failure);
}

}  // namespace apron::io
