#include "cpu/fast_pool.hpp"

#include <algorithm>
#include <system_error>

#include "core/usable_cores.hpp"

namespace apron::cpu {

ThreadPool::ThreadPool(int threads) {
    const int cores = usable_cores();
    if (threads <= 0) threads = cores;
    // More threads than cores only adds switching; a huge request must not exhaust the process
    // limit. Oversubscription up to 64 stays possible (tests cut work unevenly on purpose).
    threads = std::min(threads, std::max(64, 2 * cores));
    workers_.reserve(std::size_t(threads - 1));
    for (int p = 1; p < threads; ++p) {
        try {
            workers_.emplace_back([this, p] { worker_loop(p); });
        } catch (const std::system_error&) {
            break;  // the system refused another thread: run with those we have
        }
    }
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::work(int participant) {
    for (;;) {
        const int index = next_.fetch_add(1, std::memory_order_relaxed);
        if (index >= count_) return;
        try {
            (*task_)(index, participant);
        } catch (...) {
            std::lock_guard lock(mutex_);
            if (!error_) error_ = std::current_exception();
            next_.store(count_, std::memory_order_relaxed);  // stop handing out work
        }
    }
}

void ThreadPool::worker_loop(int participant) {
    std::uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_) return;
            seen = generation_;
        }
        work(participant);
        {
            std::lock_guard lock(mutex_);
            if (--busy_ == 0) done_.notify_one();
        }
    }
}

void ThreadPool::run(int count, const std::function<void(int, int)>& task) {
    if (count <= 0) return;
    std::lock_guard serial(run_mutex_);
    if (workers_.empty() || count == 1) {
        for (int i = 0; i < count; ++i) task(i, 0);
        return;
    }
    {
        std::lock_guard lock(mutex_);
        task_ = &task;
        count_ = count;
        next_.store(0, std::memory_order_relaxed);
        error_ = nullptr;
        busy_ = int(workers_.size());
        ++generation_;
    }
    wake_.notify_all();
    work(0);
    std::exception_ptr error;
    {
        std::unique_lock lock(mutex_);
        done_.wait(lock, [&] { return busy_ == 0; });
        task_ = nullptr;
        error = error_;
        error_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
}

} // namespace apron::cpu
