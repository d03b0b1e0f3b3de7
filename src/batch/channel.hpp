#pragma once
// A bounded queue between the stages of a batch: push waits while it is full (which bounds the images in
// flight, hence the memory), pop waits while it is empty; after close() pushes are refused and pops drain
// what is left, then return nullopt.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace apron::batch {

template <class T>
class Channel {
public:
    void set_capacity(std::size_t n) {
        std::lock_guard<std::mutex> lock(mutex_);
        capacity_ = n ? n : 1;
    }

    // false when the channel was closed (the item is dropped).
    bool push(T&& item) {
        std::unique_lock<std::mutex> lock(mutex_);
        not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
        if (closed_) return false;
        items_.push_back(std::move(item));
        not_empty_.notify_one();
        return true;
    }

    std::optional<T> pop() {
        std::unique_lock<std::mutex> lock(mutex_);
        not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
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
        not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); });
        return take();
    }

    bool closed() {
        std::lock_guard<std::mutex> lock(mutex_);
        return closed_;
    }

    void close() {
        std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
        not_full_.notify_all();
        not_empty_.notify_all();
    }

private:
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
    std::size_t capacity_ = 1;
    bool closed_ = false;
};

} // namespace apron::batch
