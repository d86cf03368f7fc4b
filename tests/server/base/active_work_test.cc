#include "server/base/active_work.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

TEST(ActiveWorkTest, CountsBeginAndEnd) {
  ActiveWork w;
  EXPECT_EQ(w.count(), 0u);
  w.Begin();
  w.Begin();
  EXPECT_EQ(w.count(), 2u);
  EXPECT_FALSE(w.End());
  EXPECT_TRUE(w.End()) << "the last End reports it";
  EXPECT_EQ(w.count(), 0u);
}

TEST(ActiveWorkTest, IdleAtOnceWhenNothingRuns) {
  ActiveWork w;
  EXPECT_TRUE(w.WaitIdle(Clock::now()));
}

TEST(ActiveWorkTest, WaitEndsAtTheDeadlineWhileWorkRemains) {
  ActiveWork w;
  w.Begin();
  EXPECT_FALSE(w.WaitIdle(Clock::now() + std::chrono::milliseconds(20)));
  EXPECT_EQ(w.count(), 1u);
}

TEST(ActiveWorkTest, TheLastEndWakesTheWaiter) {
  ActiveWork w;
  w.Begin();
  w.Begin();
  std::thread ender([&] {
    w.End();
    w.End();
  });
  // A deadline far away: the wait returns because the count reached zero.
  EXPECT_TRUE(w.WaitIdle(Clock::now() + std::chrono::hours(1)));
  ender.join();
  EXPECT_EQ(w.count(), 0u);
}

}  // namespace
}  // namespace strata
