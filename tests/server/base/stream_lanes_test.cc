#include "server/base/stream_lanes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace strata {
namespace {

TEST(StreamLanesTest, StreamsGoToTheLeastLoadedLane) {
  StreamLanes lanes(3);
  ASSERT_EQ(lanes.size(), 3u);
  EXPECT_EQ(lanes.Acquire(), 0u);
  EXPECT_EQ(lanes.Acquire(), 1u);
  EXPECT_EQ(lanes.Acquire(), 2u);
  EXPECT_EQ(lanes.Acquire(), 0u) << "all equal: the lowest index";
  lanes.Release(1);
  EXPECT_EQ(lanes.Acquire(), 1u) << "the lane a stream left is the least loaded";
  EXPECT_EQ(lanes.streams_on(0), 2u);
  EXPECT_EQ(lanes.streams_on(1), 1u);
  EXPECT_EQ(lanes.streams_on(2), 1u);
}

TEST(StreamLanesTest, ReleaseIgnoresWhatItDidNotGive) {
  StreamLanes lanes(2);
  lanes.Release(0);  // nothing acquired: stays at zero
  lanes.Release(7);  // no such lane
  EXPECT_EQ(lanes.streams_on(0), 0u);
  EXPECT_EQ(lanes.streams_on(7), 0u);
  EXPECT_EQ(lanes.Acquire(), 0u);
}

TEST(StreamLanesTest, AtLeastOneLane) {
  StreamLanes lanes(0);
  EXPECT_EQ(lanes.size(), 1u);
  EXPECT_EQ(lanes.Acquire(), 0u);
}

// The point of a lane: whoever posts a stream's tasks (gRPC's threads, the
// lane itself), they all run on one thread, one at a time; different lanes
// are different threads.
TEST(StreamLanesTest, EveryTaskOfALaneRunsOnItsOneThread) {
  StreamLanes lanes(2);
  std::mutex mu;
  std::vector<std::set<std::thread::id>> ran_on(2);
  std::atomic<int> running[2] = {0, 0};
  std::atomic<bool> overlapped{false};
  auto task = [&](uint32_t lane) {
    if (running[lane].fetch_add(1) != 0) overlapped = true;
    {
      std::lock_guard<std::mutex> lock(mu);
      ran_on[lane].insert(std::this_thread::get_id());
    }
    running[lane].fetch_sub(1);
  };
  std::vector<std::thread> posters;
  for (int p = 0; p < 4; ++p) {
    posters.emplace_back([&, p] {
      for (int i = 0; i < 500; ++i) {
        const uint32_t lane = static_cast<uint32_t>((p + i) % 2);
        boost::asio::post(lanes.executor(lane), [&, lane] {
          task(lane);
          // A task that posts the next one, as a build task posts a write.
          boost::asio::post(lanes.executor(lane), [&, lane] { task(lane); });
        });
      }
    });
  }
  for (auto& t : posters) t.join();
  lanes.Join();
  EXPECT_FALSE(overlapped) << "two tasks of one lane ran at once";
  ASSERT_EQ(ran_on[0].size(), 1u);
  ASSERT_EQ(ran_on[1].size(), 1u);
  EXPECT_NE(*ran_on[0].begin(), *ran_on[1].begin());
  EXPECT_EQ(ran_on[0].count(std::this_thread::get_id()), 0u);
}

}  // namespace
}  // namespace strata
