// RateLimiter: a rate passes what it allows; Stop ends a wait at once, however
// slow the rate, and every later Acquire says to stop.
#include "server/cluster/rate_limiter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>

namespace strata {
namespace {

using namespace std::chrono_literals;

TEST(RateLimiterTest, UnlimitedAndWithinTheBurstPassAtOnce) {
  RateLimiter unlimited(0);
  EXPECT_TRUE(unlimited.Acquire(uint64_t{1} << 40));
  RateLimiter fast(uint64_t{100} << 20);  // a burst of 10 MiB
  EXPECT_TRUE(fast.Acquire(uint64_t{1} << 20));
}

// At 1 byte a second a 1 MiB piece would wait 12 days: a node stopping used
// to sit in that wait past any drain timeout.
TEST(RateLimiterTest, StopEndsAWaitAndEveryLaterAcquire) {
  RateLimiter slow(1);
  ASSERT_TRUE(slow.Acquire(1));  // the burst
  auto waiting = std::async(std::launch::async, [&] { return slow.Acquire(uint64_t{1} << 20); });
  EXPECT_EQ(waiting.wait_for(200ms), std::future_status::timeout) << "it did not wait";
  slow.Stop();
  ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready) << "Stop did not end the wait";
  EXPECT_FALSE(waiting.get());
  EXPECT_FALSE(slow.Acquire(1));
  RateLimiter unlimited(0);
  unlimited.Stop();
  EXPECT_FALSE(unlimited.Acquire(1));
}

}  // namespace
}  // namespace strata
