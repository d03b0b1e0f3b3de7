// The fast CPU executor's thread pool (cpu/fast_pool.hpp): every task once, whoever runs it; workers that wake
// after the caller did everything stay out; errors come back; pools borrowed and given back are reused, one
// borrower at a time, and a forked child starts its own.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpu/fast_pool.hpp"

namespace apron::cpu {
namespace {

TEST(ThreadPool, EveryTaskOnceWhateverTheCountAndSize) {
    for (int threads : {1, 2, 3, 8}) {
        ThreadPool pool(threads);
        for (int count : {1, 2, 7, 64, 1000}) {
            std::vector<std::atomic<int>> seen(static_cast<std::size_t>(count));
            std::atomic<int> bad_participant = 0;
            pool.run(count, [&](int i, int p) {
                seen[std::size_t(i)]++;
                if (p < 0 || p >= pool.size()) bad_participant++;
            });
            for (int i = 0; i < count; ++i) EXPECT_EQ(seen[std::size_t(i)].load(), 1) << threads << " " << count << " " << i;
            EXPECT_EQ(bad_participant.load(), 0);
        }
    }
}

TEST(ThreadPool, ManySmallRunsInARow) {
    // Runs the caller finishes before any worker wakes: late workers must not run a task of a run that ended
    // (its task object is gone) nor miss one of the next.
    ThreadPool pool(4);
    long long sum = 0;
    for (int r = 0; r < 20000; ++r) {
        std::atomic<int> n = 0;
        pool.run(3, [&](int i, int) { n += i + 1; });
        sum += n.load();
    }
    EXPECT_EQ(sum, 20000LL * 6);
}

TEST(ThreadPool, TheFirstErrorComesBackAndThePoolGoesOn) {
    ThreadPool pool(3);
    EXPECT_THROW(pool.run(100, [](int i, int) { if (i == 37) throw std::runtime_error("task 37"); }), std::runtime_error);
    std::atomic<int> n = 0;
    pool.run(10, [&](int, int) { ++n; });
    EXPECT_EQ(n.load(), 10);
}

TEST(ThreadPool, BorrowedPoolsAreReusedOneBorrowerAtATime) {
    ThreadPool* first = nullptr;
    {
        const auto a = borrow_pool(3);
        first = a.get();
        const auto b = borrow_pool(3);  // a is lent: another pool
        EXPECT_NE(a.get(), b.get());
        EXPECT_EQ(a->size(), 3);
    }
    const auto again = borrow_pool(3);
    const auto other = borrow_pool(3);
    EXPECT_TRUE(again.get() == first || other.get() == first);  // given back, lent again
    std::atomic<int> n = 0;
    again->run(50, [&](int, int) { ++n; });
    EXPECT_EQ(n.load(), 50);
}

TEST(ThreadPool, AForkedChildStartsItsOwnPools) {
    { const auto warm = borrow_pool(2); }  // an idle pool of 2 waits in the parent
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // The parent's idle pool has no threads here: running on it would wait forever.
        const auto pool = borrow_pool(2);
        std::atomic<int> n = 0;
        pool->run(64, [&](int, int) { ++n; });
        ::_exit(n.load() == 64 ? 0 : 1);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace apron::cpu
