#pragma once
// A persistent pool of worker threads for the fast CPU executor. `run` hands out task indices from an
// atomic counter (dynamic scheduling, so uneven tasks balance), the calling thread works too, and the
// call returns when every task is done. Each task learns which participant runs it, so scratch memory
// can be kept per participant and reused across tasks.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace apron::cpu {

class ThreadPool {
public:
    // `threads` participants in all (the caller counts as one); <= 0 means every hardware thread.
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return int(workers_.size()) + 1; }

    // Runs task(index, participant) for index in [0, count), participant in [0, size()).
    // The first exception a task throws is rethrown here once all tasks have stopped.
    // Calls from several threads are serialised; a task must not call run() on the same pool.
    void run(int count, const std::function<void(int index, int participant)>& task);

private:
    void worker_loop(int participant);
    void work(int participant);

    std::vector<std::thread> workers_;
    std::mutex run_mutex_;  // one run() at a time

    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::uint64_t generation_ = 0;
    bool stopping_ = false;
    bool open_ = false;  // workers may join the current run (until the caller has done its share)
    int active_ = 0;     // workers inside the current run

    const std::function<void(int, int)>* task_ = nullptr;
    int count_ = 0;
    std::atomic<int> next_{0};
    std::exception_ptr error_;
};

// A pool of `threads` participants (as ThreadPool's constructor takes them) for one executor, from the
// process's idle pools where one of that size waits, given back to them when the last owner lets it go.
// Starting and joining a pool's threads on every call cost 38 us with one thread and up to 1070 us with 16
// (issue 30), more than the filter on small images; runs at once on other threads borrow other pools. A
// forked child, which inherits the idle pools but not their threads, starts its own.
std::shared_ptr<ThreadPool> borrow_pool(int threads);

} // namespace apron::cpu
