#include "cpu/fast_pool.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <system_error>

#include "core/usable_cores.hpp"

namespace apron::cpu {

namespace {

// Resolved the way ThreadPool's constructor resolves it, so that 0 and the core count share their pools.
int pool_size(int threads) {
    const int cores = usable_cores();
    if (threads <= 0) threads = cores;
    return std::min(threads, std::max(64, 2 * cores));
}

// Idle pools by size. At most a few of each size wait (as many as runs of that size were at once, up to
// four); more are destroyed when given back. Never destroyed itself: pools may come back during static
// destruction, and a pool's threads must not be joined then.
struct IdlePools {
    static constexpr std::size_t kept_per_size = 4;
    std::mutex mutex;
    pid_t owner = ::getpid();
    std::multimap<int, ThreadPool*> idle;
};

IdlePools& idle_pools() {
    static IdlePools* pools = new IdlePools;
    return *pools;
}

} // namespace

std::shared_ptr<ThreadPool> borrow_pool(int threads) {
    const int size = pool_size(threads);
    IdlePools& pools = idle_pools();
    ThreadPool* pool = nullptr;
    {
        std::lock_guard lock(pools.mutex);
        if (pools.owner != ::getpid()) {  // a forked child: the pools' threads stayed in the parent
            pools.idle.clear();            // left, not destroyed: their threads cannot be joined here
            pools.owner = ::getpid();
        }
        if (auto it = pools.idle.find(size); it != pools.idle.end()) {
            pool = it->second;
            pools.idle.erase(it);
        }
    }
    if (!pool) pool = new ThreadPool(size);
    return std::shared_ptr<ThreadPool>(pool, [size](ThreadPool* p) {
        IdlePools& pools = idle_pools();
        {
            std::lock_guard lock(pools.mutex);
            if (pools.owner == ::getpid() && pools.idle.count(size) < IdlePools::kept_per_size) {
                pools.idle.emplace(size, p);
                return;
            }
        }
        delete p;
    });
}

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

// A worker joins a run only while it is open: one that wakes after the caller has done every task (a small
// image) finds it closed and sleeps again, so the caller never waits for a thread to wake up for nothing
// (tens of microseconds on every call, more than a small image's filter).
void ThreadPool::worker_loop(int participant) {
    std::uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_) return;
            seen = generation_;
            if (!open_) continue;
            ++active_;
        }
        work(participant);
        {
            std::lock_guard lock(mutex_);
            if (--active_ == 0) done_.notify_one();
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
        open_ = true;
        ++generation_;
    }
    wake_.notify_all();
    work(0);
    std::exception_ptr error;
    {
        std::unique_lock lock(mutex_);
        open_ = false;  // no worker joins from now on: wait for those that did
        done_.wait(lock, [&] { return active_ == 0; });
        task_ = nullptr;
        error = error_;
        error_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
}

} // namespace apron::cpu
