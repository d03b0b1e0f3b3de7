// The band engine's hand-out of bands to GPUs (stream/band_dealer.hpp): each band to the least loaded lane,
// room for two bands per worker, finish and abort waking every waiter.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "stream/band_dealer.hpp"

namespace apron::stream {
namespace {

std::vector<int> drain(BandDealer<int>& dealer, int lane) {
    std::vector<int> got;
    while (auto band = dealer.take(lane)) got.push_back(*band);
    return got;
}

TEST(BandDealer, NoLaneTakesASecondBandWhileAnotherHasNone) {
    BandDealer<int> dealer(4, 2);  // 4 GPUs, 2 workers each: room for 4 bands a lane
    for (int k = 0; k < 8; ++k) ASSERT_TRUE(dealer.deal(k));
    dealer.finish();
    for (int lane = 0; lane < 4; ++lane) EXPECT_EQ(drain(dealer, lane), (std::vector<int>{lane, lane + 4})) << lane;
}

TEST(BandDealer, AFreedLaneTakesTheNextBand) {
    BandDealer<int> dealer(3, 1);
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(dealer.deal(k));
    EXPECT_EQ(*dealer.take(1), 1);
    dealer.done(1);              // lane 1 filtered its band: it has the fewest now
    ASSERT_TRUE(dealer.deal(3));
    EXPECT_EQ(*dealer.take(1), 3);
    EXPECT_EQ(*dealer.take(0), 0);
    EXPECT_EQ(*dealer.take(2), 2);
}

TEST(BandDealer, DealingWaitsForRoomAndAbortWakesEveryone) {
    BandDealer<int> dealer(1, 1);  // room for 2
    ASSERT_TRUE(dealer.deal(0));
    ASSERT_TRUE(dealer.deal(1));
    std::atomic<bool> dealt = false;
    std::thread third([&] { dealt = dealer.deal(2); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(dealt);  // full: waits
    EXPECT_EQ(*dealer.take(0), 0);
    dealer.done(0);
    third.join();
    EXPECT_TRUE(dealt);

    BandDealer<int> stuck(2, 1);
    std::thread waiter([&] { EXPECT_FALSE(stuck.take(1)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stuck.abort();
    waiter.join();
    EXPECT_FALSE(stuck.deal(5));
}

TEST(BandDealer, FinishLetsTheLanesDrainThenEnds) {
    BandDealer<int> dealer(2, 2);
    std::vector<int> got[2];
    std::thread a([&] { got[0] = drain(dealer, 0); });
    std::thread b([&] { got[1] = drain(dealer, 1); });
    for (int k = 0; k < 6; ++k) {
        ASSERT_TRUE(dealer.deal(k));
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    dealer.finish();
    a.join();
    b.join();
    EXPECT_EQ(got[0].size() + got[1].size(), 6u);  // every band once (lanes never call done here: room 4 each)
    EXPECT_GE(got[0].size(), 2u);
    EXPECT_GE(got[1].size(), 2u);
}

}  // namespace
}  // namespace apron::stream
