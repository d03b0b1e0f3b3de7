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
    int busy_ = 0;  // workers still inside the current generation

    const std::function<void(int, int)>* task_ = nullptr;
    int count_ = 0;
    std::atomic<int> next_{0};
    std::exception_ptr error_;
};

} // namespace apron::cpu
