// The bounded queue the batch and band engines share (core/bounded_queue.hpp): its bound holds a producer
// back, finish() drains, abort() drops, and neither takes pushes afterwards.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/bounded_queue.hpp"

using apron::BoundedQueue;
using namespace std::chrono_literals;

TEST(BoundedQueue, AFullQueueHoldsTheProducerUntilAPop) {
    BoundedQueue<int> q(2);
    ASSERT_TRUE(q.push(1));
    ASSERT_TRUE(q.push(2));
    std::atomic<bool> pushed{false};
    std::thread producer([&] {
        q.push(3);
        pushed = true;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(pushed.load());  // two items: the third waits
    EXPECT_EQ(q.pop(), 1);
    producer.join();
    EXPECT_TRUE(pushed.load());
    EXPECT_EQ(q.pop(), 2);
    EXPECT_EQ(q.pop(), 3);
}

TEST(BoundedQueue, FinishDrainsThenEnds) {
    BoundedQueue<int> q(4);
    q.push(7);
    q.push(8);
    q.finish();
    EXPECT_TRUE(q.ended());
    EXPECT_FALSE(q.push(9));
    EXPECT_EQ(q.pop(), 7);
    EXPECT_EQ(q.try_pop(), 8);
    EXPECT_EQ(q.pop(), std::nullopt);
}

TEST(BoundedQueue, AbortDropsWhatIsLeftAndWakesAWaitingProducer) {
    BoundedQueue<int> q(1);
    q.push(1);
    std::atomic<int> result{-1};
    std::thread producer([&] { result = q.push(2) ? 1 : 0; });
    std::this_thread::sleep_for(20ms);
    q.abort();
    producer.join();
    EXPECT_EQ(result.load(), 0);
    EXPECT_EQ(q.pop(), std::nullopt);
}

TEST(BoundedQueue, PopForGivesUpAfterItsTimeoutAndAConsumerWakesOnFinish) {
    BoundedQueue<int> q;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(q.pop_for(20ms), std::nullopt);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
    std::atomic<bool> woke{false};
    std::thread consumer([&] {
        EXPECT_EQ(q.pop(), std::nullopt);
        woke = true;
    });
    std::this_thread::sleep_for(20ms);
    q.finish();
    consumer.join();
    EXPECT_TRUE(woke.load());
}

TEST(BoundedQueue, ManyProducersAndConsumersPassEveryItemOnce) {
    BoundedQueue<int> q(3);
    constexpr int producers = 4, each = 500;
    std::vector<std::thread> threads;
    std::atomic<long> sum{0};
    std::atomic<int> count{0};
    for (int p = 0; p < producers; ++p)
        threads.emplace_back([&, p] {
            for (int i = 0; i < each; ++i) q.push(p * each + i);
        });
    std::vector<std::thread> consumers;
    for (int c = 0; c < 3; ++c)
        consumers.emplace_back([&] {
            while (auto v = q.pop()) sum += *v, ++count;
        });
    for (std::thread& t : threads) t.join();
    q.finish();
    for (std::thread& t : consumers) t.join();
    const long n = producers * each;
    EXPECT_EQ(count.load(), n);
    EXPECT_EQ(sum.load(), n * (n - 1) / 2);
}
