#pragma once
// A bounded queue between the threads of a pipeline: the batch engine's stages, and the band engine's reader,
// workers and writer. push waits while it is full, which bounds the work in flight and so the memory; pop waits
// while it is empty. finish() ends the pushes and lets the pops drain what is left; abort() (an error) drops
// what is left. After either, push refuses its item and pop returns nullopt once nothing is left.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace apron {

template <class T>
class BoundedQueue {
public:
    explicit BoundedQueue(std::size_t capacity = 1) : capacity_(capacity ? capacity : 1) {}

    void set_capacity(std::size_t n) {
        std::lock_guard<std::mutex> lock(mutex_);
        capacity_ = n ? n : 1;
        not_full_.notify_all();
    }

    // false when the queue was finished or aborted (the item is dropped).
    bool push(T item) {
        std::unique_lock<std::mutex> lock(mutex_);
        not_full_.wait(lock, [&] { return ended_ || items_.size() < capacity_; });
        if (ended_) return false;
        items_.push_back(std::move(item));
        not_empty_.notify_one();
        return true;
    }

    std::optional<T> pop() {
        std::unique_lock<std::mutex> lock(mutex_);
        not_empty_.wait(lock, [&] { return ended_ || !items_.empty(); });
        return take();
    }

    std::optional<T> try_pop() {
        std::lock_guard<std::mutex> lock(mutex_);
        return take();
    }

    // Waits at most `timeout` for an item.
    template <class Duration>
    std::optional<T> pop_for(Duration timeout) {
        std::unique_lock<std::mutex> lock(mutex_);
        not_empty_.wait_for(lock, timeout, [&] { return ended_ || !items_.empty(); });
        return take();
    }

    // Whether finish() or abort() was called.
    bool ended() {
        std::lock_guard<std::mutex> lock(mutex_);
        return ended_;
    }

    void finish() { end(false); }
    void abort() { end(true); }

private:
    void end(bool drop) {
        std::lock_guard<std::mutex> lock(mutex_);
        ended_ = true;
        if (drop) items_.clear();
        not_full_.notify_all();
        not_empty_.notify_all();
    }

    std::optional<T> take() {  // mutex_ held
        if (items_.empty()) return std::nullopt;
        std::optional<T> item(std::move(items_.front()));
        items_.pop_front();
        not_full_.notify_one();
        return item;
    }

    std::mutex mutex_;
    std::condition_variable not_full_, not_empty_;
    std::deque<T> items_;
    std::size_t capacity_;
    bool ended_ = false;
};

} // namespace apron
