#pragma once
// The band engine's hand-out of bands to GPUs (band_engine.cpp), apart so that it is tested without GPUs.
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

namespace apron::stream {

// Bands dealt to the GPUs (lanes): each goes to the GPU with the fewest bands queued or filtering, so that no
// GPU takes a second band while another has none. A queue shared by every worker let whichever asked first
// take the next band, so two bands could land on one GPU and none on another: on 4 H200s, 4 bands of a
// GPU-bound image over 4 GPUs x 2 workers took 5.6 s where one GPU filtered its band in 2.75 s (1.44x one
// GPU). A lane holds at most two bands per worker: one filtering and one waiting, as the shared queue did.
// One lane without GPUs, or for one GPU.
template <class Band>
class BandDealer {
public:
    BandDealer(int lanes, int workers_per_lane)
        : queues_(std::size_t(std::max(1, lanes))), load_(queues_.size(), 0), room_(2 * std::max(1, workers_per_lane)) {}

    // Queues `buf` on the least loaded lane with room, waiting for room; false once aborted.
    bool deal(Band buf) {
        std::unique_lock lock(mutex_);
        std::size_t lane = 0;
        changed_.wait(lock, [&] {
            if (aborted_) return true;
            lane = std::size_t(std::min_element(load_.begin(), load_.end()) - load_.begin());
            return load_[lane] < room_;
        });
        if (aborted_) return false;
        ++load_[lane];
        queues_[lane].push_back(std::move(buf));
        changed_.notify_all();
        return true;
    }
    // The next band of `lane`, waiting for one; nullopt once finished and drained, or aborted.
    std::optional<Band> take(int lane) {
        std::unique_lock lock(mutex_);
        auto& q = queues_[std::size_t(lane)];
        changed_.wait(lock, [&] { return aborted_ || finished_ || !q.empty(); });
        if (aborted_ || q.empty()) return std::nullopt;
        Band buf = std::move(q.front());
        q.pop_front();
        return buf;
    }
    // A band of `lane` is filtered: its place goes to the next.
    void done(int lane) {
        std::lock_guard lock(mutex_);
        --load_[std::size_t(lane)];
        changed_.notify_all();
    }
    void finish() {
        std::lock_guard lock(mutex_);
        finished_ = true;
        changed_.notify_all();
    }
    void abort() {
        std::lock_guard lock(mutex_);
        aborted_ = true;
        for (auto& q : queues_) q.clear();
        changed_.notify_all();
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::deque<Band>> queues_;
    std::vector<int> load_;  // bands queued or filtering, per lane
    const int room_;
    bool finished_ = false, aborted_ = false;
};

} // namespace apron::stream
