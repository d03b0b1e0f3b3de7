#pragma once
// The batch's memory budget: bytes of the images in flight (files being decoded, decoded images, filtered
// images and their encodings), taken before they are allocated and given back as they are freed. Taking is
// all or nothing and never blocks: a reader that finds no room does other work (writing) and tries again,
// so no thread ever waits for memory that only it could free.
#include <cstdint>
#include <mutex>

namespace apron::batch {

class MemoryGate {
public:
    explicit MemoryGate(std::uint64_t budget) : budget_(budget) {}

    std::uint64_t budget() const { return budget_; }
    // Takes `bytes` when they fit beside what is taken (n <= budget - taken); false and nothing taken else.
    bool try_take(std::uint64_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (bytes > budget_ || taken_ > budget_ - bytes) return false;
        taken_ += bytes;
        return true;
    }
    // Counts `bytes` more whatever the room (an image larger than its header said: it is already there).
    void force(std::uint64_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        taken_ += bytes;
    }
    void give(std::uint64_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        taken_ -= bytes < taken_ ? bytes : taken_;
    }
    std::uint64_t taken() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return taken_;
    }

private:
    const std::uint64_t budget_;
    std::uint64_t taken_ = 0;
    mutable std::mutex mutex_;
};

} // namespace apron::batch
