#include "common/placement.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
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

TEST(PlacementTest, ShardServingAndShardServersAgreeWithServingNodeForEveryNodeAndSample) {
  // Random holders, exclusions and near sets over 6 nodes: for each, every
  // node's precomputed answer is ServingNode's, and exactly one node (or, with
  // every member excluded, none) serves each sample.
  const auto nodes = Nodes(6);
  std::mt19937_64 rng(7);
  auto subset = [&](int max) {
    std::vector<std::string> out;
    for (const auto& n : nodes) {
      if (static_cast<int>(out.size()) < max && rng() % 2 == 0) out.push_back(n);
    }
    return out;
  };
  int fallbacks = 0, nobody = 0;
  for (int round = 0; round < 300; ++round) {
    const std::vector<std::string> holders = subset(3), near = subset(2);
    const std::vector<std::string> excluded = round % 50 == 0 ? nodes : subset(round % 7);
    const auto ranked = RankMembers("f" + std::to_string(round), nodes);
    std::vector<ShardServing> serving;
    for (const auto& n : nodes) serving.emplace_back(holders, ranked, excluded, near, n);
    const ShardServers servers(holders, ranked, excluded, near);  // the client's view: who serves each
    for (uint64_t id = 0; id < 64; ++id) {
      const auto chosen = ServingNode(holders, ranked, excluded, id, near);
      EXPECT_EQ(servers.nodes().empty(), !chosen.has_value());
      if (chosen) {
        EXPECT_EQ(servers.nodes()[servers.Pick(id)], *chosen) << "round " << round << " id " << id;
      }
      int serves = 0;
      for (size_t n = 0; n < nodes.size(); ++n) {
        EXPECT_EQ(serving[n].Serves(id), chosen == nodes[n]) << "round " << round << " id " << id;
        serves += serving[n].Serves(id);
      }
      EXPECT_EQ(serves, chosen.has_value() ? 1 : 0);
      if (!chosen) ++nobody;
      if (chosen && std::find(holders.begin(), holders.end(), *chosen) == holders.end()) ++fallbacks;
    }
  }
  EXPECT_GT(fallbacks, 0) << "the rounds include shards whose holders are all excluded";
  EXPECT_GT(nobody, 0) << "and members that are all excluded";
}

// `zones` zones of `per_zone` nodes each: "z<zone>-n<i>" in zone "z<zone>".
std::vector<PlacementMember> ZonedNodes(int zones, int per_zone) {
  std::vector<PlacementMember> out;
  for (int z = 0; z < zones; ++z) {
    for (int i = 0; i < per_zone; ++i) {
      out.push_back({"z" + std::to_string(z) + "-n" + std::to_string(i), "z" + std::to_string(z), ""});
    }
  }
  return out;
}

std::map<std::string, std::string> ZoneOf(const std::vector<PlacementMember>& members) {
  std::map<std::string, std::string> out;
  for (const auto& m : members) out[m.id] = m.zone;
  return out;
}

TEST(PlacementTest, CopiesGoToDistinctZonesWhenThereAreEnough) {
  const auto members = ZonedNodes(4, 3);
  const auto zone = ZoneOf(members);
  for (int i = 0; i < 3000; ++i) {
    const auto holders = Holders(ShardFileKey("ds", 1, static_cast<uint32_t>(i)), members, 3);
    ASSERT_EQ(holders.size(), 3u);
    std::set<std::string> zones;
    for (const auto& h : holders) zones.insert(zone.at(h));
    EXPECT_EQ(zones.size(), 3u) << "file " << i;
  }
}

TEST(PlacementTest, FewerZonesThanCopiesSpreadAsEvenlyAsTheyCan) {
  const auto members = ZonedNodes(2, 4);
  const auto zone = ZoneOf(members);
  for (int i = 0; i < 2000; ++i) {
    const auto holders = Holders(ShardFileKey("ds", 1, static_cast<uint32_t>(i)), members, 3);
    std::map<std::string, int> per_zone;
    for (const auto& h : holders) ++per_zone[zone.at(h)];
    ASSERT_EQ(per_zone.size(), 2u) << "file " << i;
    EXPECT_LE(std::max(per_zone["z0"], per_zone["z1"]), 2);
  }
}

TEST(PlacementTest, RacksSpreadCopiesWithinAZone) {
  std::vector<PlacementMember> members;
  for (int i = 0; i < 6; ++i) members.push_back({"n" + std::to_string(i), "z", "r" + std::to_string(i % 2)});
  for (int i = 0; i < 2000; ++i) {
    const auto holders = Holders(ShardFileKey("ds", 1, static_cast<uint32_t>(i)), members, 2);
    ASSERT_EQ(holders.size(), 2u);
    EXPECT_NE(holders[0].back() % 2, holders[1].back() % 2) << "both copies in one rack, file " << i;
  }
}

TEST(PlacementTest, WithoutZonesTheOrderIsPlainRendezvous) {
  const auto nodes = Nodes(7);
  std::vector<PlacementMember> members;
  for (const auto& n : nodes) members.push_back({n, "", ""});
  for (int i = 0; i < 500; ++i) {
    const std::string key = ShardFileKey("ds", 3, static_cast<uint32_t>(i));
    std::vector<std::string> expected = nodes;
    std::sort(expected.begin(), expected.end(),
              [&](const auto& a, const auto& b) { return RendezvousWeight(key, a) > RendezvousWeight(key, b); });
    EXPECT_EQ(RankMembers(key, members), expected);
    EXPECT_EQ(Holders(key, members, 3), std::vector<std::string>(expected.begin(), expected.begin() + 3));
  }
}

TEST(PlacementTest, HoldersAreTheRankedListsHead) {
  // Zones of unequal sizes, racks in some: the pruned Holders agrees with Rank.
  std::vector<PlacementMember> members;
  for (int i = 0; i < 23; ++i) {
    members.push_back(
        {"n" + std::to_string(i), "z" + std::to_string(i % 4), i % 4 == 1 ? "r" + std::to_string(i % 3) : ""});
  }
  for (int i = 0; i < 1000; ++i) {
    const std::string key = ShardFileKey("ds", 4, static_cast<uint32_t>(i));
    const auto ranked = RankMembers(key, members);
    for (uint32_t r : {1u, 2u, 3u, 5u}) {
      EXPECT_EQ(Holders(key, members, r), std::vector<std::string>(ranked.begin(), ranked.begin() + r));
    }
  }
}

// A join moves copies only onto the joining node, at most one per file; a
// leave only off the leaver; in both cases about R/N of the copies.
TEST(PlacementTest, ZonedJoinAndLeaveMoveOnlyWhatTheyMust) {
  const auto before = ZonedNodes(5, 6);
  auto after = before;
  after.push_back({"joiner", "z2", ""});
  const int files = 6000;
  int joined = 0, left = 0;
  for (int i = 0; i < files; ++i) {
    const std::string key = ShardFileKey("ds", 5, static_cast<uint32_t>(i));
    const auto a = Holders(key, before, 3);
    const auto b = Holders(key, after, 3);
    const std::set<std::string> sa(a.begin(), a.end()), sb(b.begin(), b.end());
    for (const auto& h : b) {
      if (sa.count(h)) continue;
      ++joined;
      EXPECT_EQ(h, "joiner") << "a join put a copy on an old node, file " << i;
    }
    // The leave is the join in reverse: `after` loses the joiner.
    for (const auto& h : b) {
      if (!sa.count(h)) ++left;
    }
    int dropped = 0;
    for (const auto& h : a) dropped += !sb.count(h);
    EXPECT_LE(dropped, 1) << "file " << i;
  }
  // Each file gains the joiner with probability about 3/31.
  EXPECT_NEAR(joined, files * 3 / 31, files / 40);
  EXPECT_EQ(left, joined);

  // Another node leaves: only its copies move.
  std::vector<PlacementMember> less(before.begin() + 1, before.end());
  for (int i = 0; i < files; ++i) {
    const std::string key = ShardFileKey("ds", 6, static_cast<uint32_t>(i));
    const auto a = Holders(key, before, 3);
    const auto b = Holders(key, less, 3);
    const std::set<std::string> sb(b.begin(), b.end());
    for (const auto& h : a) {
      if (!sb.count(h)) {
        EXPECT_EQ(h, before[0].id) << "a leave moved a copy off a staying node, file " << i;
      }
    }
  }
}

TEST(PlacementTest, ServingNodePrefersHoldersNearTheReader) {
  const std::vector<std::string> holders = {"a1", "b1", "c1"};
  const std::vector<std::string> near = {"b1", "b2"};
  for (uint64_t id = 0; id < 200; ++id) EXPECT_EQ(ServingNode(holders, holders, {}, id, near), "b1");
  // The near holder is down: the others share its samples as without a zone.
  const std::vector<std::string> down = {"b1"};
  std::set<std::string> used;
  for (uint64_t id = 0; id < 200; ++id) {
    const auto s = ServingNode(holders, holders, down, id, near);
    ASSERT_TRUE(s.has_value());
    EXPECT_NE(*s, "b1");
    used.insert(*s);
  }
  EXPECT_EQ(used.size(), 2u);
  // No holder near: as without a zone.
  const std::vector<std::string> far = {"x"};
  for (uint64_t id = 0; id < 100; ++id)
    EXPECT_EQ(ServingNode(holders, holders, {}, id, far), ServingNode(holders, holders, {}, id));
}

TEST(PlacementTest, DefaultReplication) {
  EXPECT_EQ(DefaultReplication(1), 1u);
  EXPECT_EQ(DefaultReplication(2), 2u);
  EXPECT_EQ(DefaultReplication(5), 3u);
}

}  // namespace
}  // namespace strata
