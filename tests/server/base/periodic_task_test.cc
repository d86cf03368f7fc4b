#include "server/base/periodic_task.h"

#include <gtest/gtest.h>

#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace strata {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

// Counts runs; tests wait for a count without any deadline of their own.
class Runs {
 public:
  milliseconds Run(milliseconds next) {
    std::unique_lock<std::mutex> lock(mu_);
    ++count_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return !hold_; });
    return next;
  }
  void WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return count_ >= n; });
  }
  void Hold(bool hold) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = hold;
    changed_.notify_all();
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int count_ = 0;
  bool hold_ = false;
};

TEST(PeriodicTaskTest, RunsAtStartAndAgainWhenKicked) {
  boost::asio::thread_pool pool(2);
  Runs runs;
  PeriodicTask task(pool.get_executor(), [&] { return runs.Run(hours(1)); });
  task.Start();
  runs.WaitFor(1);
  task.Kick();  // the hour-long wait ends at once
  runs.WaitFor(2);
  task.Stop();
  EXPECT_EQ(runs.count(), 2);
}

TEST(PeriodicTaskTest, RunsAgainAfterTheDelayItReturns) {
  boost::asio::thread_pool pool(2);
  Runs runs;
  PeriodicTask task(pool.get_executor(), [&] { return runs.Run(milliseconds(1)); });
  task.Start();
  runs.WaitFor(5);
  task.Stop();
}

TEST(PeriodicTaskTest, AKickDuringARunIsFollowedByAnotherRun) {
  boost::asio::thread_pool pool(2);
  Runs runs;
  runs.Hold(true);
  PeriodicTask task(pool.get_executor(), [&] { return runs.Run(hours(1)); });
  task.Start();
  runs.WaitFor(1);  // the first run is in progress, held
  task.Kick();
  runs.Hold(false);
  runs.WaitFor(2);
  task.Stop();
}

TEST(PeriodicTaskTest, StopWaitsForTheRunInProgressAndNothingRunsAfter) {
  boost::asio::thread_pool pool(2);
  Runs runs;
  runs.Hold(true);
  PeriodicTask task(pool.get_executor(), [&] { return runs.Run(milliseconds(0)); });
  task.Start();
  runs.WaitFor(1);
  std::thread stopper([&] { task.Stop(); });
  while (!task.stopping()) std::this_thread::yield();
  runs.Hold(false);  // the run ends; it returned delay 0, yet no run follows
  stopper.join();
  EXPECT_EQ(runs.count(), 1);
  task.Kick();  // ignored once stopped
  pool.join();
  EXPECT_EQ(runs.count(), 1);
}

TEST(PeriodicTaskTest, StopBeforeStartRunsNothing) {
  boost::asio::thread_pool pool(1);
  Runs runs;
  {
    PeriodicTask task(pool.get_executor(), [&] { return runs.Run(milliseconds(0)); });
    task.Stop();
    task.Start();
  }
  pool.join();
  EXPECT_EQ(runs.count(), 0);
}

}  // namespace
}  // namespace strata
