// The loop that drives a stream's calls (client/read_loop.h): tasks posted
// from any thread run on the loop's one thread, each poster's in order, none
// lost; a task may post another.
#include "client/read_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace strata::client_internal {
namespace {

TEST(ReadLoopTest, TasksFromSeveralThreadsRunOnOneThreadEachPostersInOrder) {
  constexpr int kPosters = 4, kTasks = 2000;
  std::vector<std::vector<int>> ran(kPosters);  // the loop's only
  std::set<std::thread::id> threads;            // the loop's only
  std::atomic<int> done{0};
  {
    ReadLoop loop;
    std::vector<std::thread> posters;
    for (int p = 0; p < kPosters; ++p) {
      posters.emplace_back([&, p] {
        for (int i = 0; i < kTasks; ++i) {
          loop.Post([&, p, i] {
            ran[p].push_back(i);
            threads.insert(std::this_thread::get_id());
            ++done;
          });
        }
      });
    }
    for (auto& t : posters) t.join();
    while (done < kPosters * kTasks) std::this_thread::yield();
  }
  EXPECT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u) << "tasks run on the loop, not on a poster";
  for (int p = 0; p < kPosters; ++p) {
    ASSERT_EQ(ran[p].size(), static_cast<size_t>(kTasks)) << "poster " << p;
    for (int i = 0; i < kTasks; ++i) ASSERT_EQ(ran[p][i], i) << "poster " << p;
  }
}

TEST(ReadLoopTest, ATaskMayPostAnotherWhichRunsAfterIt) {
  std::vector<int> order;
  std::atomic<bool> done{false};
  ReadLoop loop;
  loop.Post([&] {
    order.push_back(1);
    loop.Post([&] {
      order.push_back(3);
      done = true;
    });
    order.push_back(2);
  });
  while (!done) std::this_thread::yield();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

}  // namespace
}  // namespace strata::client_internal
