#include "common/placement.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace strata {
namespace {

std::vector<std::string> Nodes(int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back("node-" + std::to_string(i));
  return out;
}

TEST(PlacementTest, HoldersAreTheTopRankedAndDeterministic) {
  const auto nodes = Nodes(5);
  const auto ranked = RankMembers("ds@1/7", nodes);
  ASSERT_EQ(ranked.size(), 5u);
  EXPECT_EQ(std::set<std::string>(ranked.begin(), ranked.end()).size(), 5u);
  const auto holders = Holders("ds@1/7", nodes, 3);
  EXPECT_EQ(holders, std::vector<std::string>(ranked.begin(), ranked.begin() + 3));
  // The member list's order does not matter.
  std::vector<std::string> shuffled = {"node-4", "node-2", "node-5", "node-1", "node-3"};
  EXPECT_EQ(Holders("ds@1/7", shuffled, 3), holders);
  EXPECT_EQ(Holders("ds@1/7", nodes, 9).size(), 5u);
}

TEST(PlacementTest, SpreadsFilesEvenly) {
  const auto nodes = Nodes(5);
  std::map<std::string, int> primary;
  for (int i = 0; i < 10000; ++i) ++primary[Holders(ShardFileKey("ds", 1, static_cast<uint32_t>(i)), nodes, 1)[0]];
  for (const auto& [node, count] : primary) EXPECT_NEAR(count, 2000, 200) << node;
}

TEST(PlacementTest, AJoinOrLeaveMovesOnlyAFewFiles) {
  const auto five = Nodes(5);
  const auto six = Nodes(6);
  int moved = 0;
  const int files = 6000;
  for (int i = 0; i < files; ++i) {
    const std::string key = ShardFileKey("ds", 2, static_cast<uint32_t>(i));
    const auto a = Holders(key, five, 2);
    const auto b = Holders(key, six, 2);
    const std::set<std::string> sa(a.begin(), a.end());
    for (const auto& h : b) {
      if (!sa.count(h)) {
        ++moved;
        EXPECT_EQ(h, "node-6") << "a new holder can only be the joining node";
      }
    }
  }
  // Expected: each file gains node-6 with probability 2/6.
  EXPECT_NEAR(moved, files * 2 / 6, files / 20);
}

TEST(PlacementTest, ServingNodeSkipsExcludedHoldersAndSpreadsLoad) {
  const auto nodes = Nodes(3);
  const std::vector<std::string> holders = {"node-2", "node-3"};
  const auto ranked = RankMembers("f", nodes);
  std::map<std::string, int> load;
  for (uint64_t id = 0; id < 1000; ++id) {
    auto s = ServingNode(holders, ranked, {}, id);
    ASSERT_TRUE(s.has_value());
    ++load[*s];
    EXPECT_EQ(ServingNode(holders, ranked, {}, id), s) << "stable per sample";
  }
  EXPECT_EQ(load.size(), 2u);
  EXPECT_NEAR(load["node-2"], 500, 80);
  const std::vector<std::string> dead = {"node-2"};
  for (uint64_t id = 0; id < 100; ++id) EXPECT_EQ(ServingNode(holders, ranked, dead, id), "node-3");
  const std::vector<std::string> both = {"node-2", "node-3"};
  EXPECT_EQ(ServingNode(holders, ranked, both, 1), "node-1") << "falls back to a non-holder";
  const std::vector<std::string> all = {"node-1", "node-2", "node-3"};
  EXPECT_FALSE(ServingNode(holders, ranked, all, 1).has_value());
}

TEST(PlacementTest, DefaultReplication) {
  EXPECT_EQ(DefaultReplication(1), 1u);
  EXPECT_EQ(DefaultReplication(2), 2u);
  EXPECT_EQ(DefaultReplication(5), 3u);
}

}  // namespace
}  // namespace strata
