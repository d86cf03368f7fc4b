// WorkPlanner: the work a planning client gives each node. Every slot of the
// planned steps goes to exactly one node, with the plan's id; the load
// spreads over a shard's holders by the work outstanding, a step staying on
// the node its first sample went to wherever that node holds its samples; a
// node that has not delivered gets less, an excluded node nothing, and a
// shard with one copy always goes to its holder.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "client/stream_plan.h"
#include "common/file_placement.h"
#include "plan/stratum_index.h"

namespace strata::client_internal {
namespace {

constexpr uint64_t kSamples = 1000;
constexpr uint32_t kBatch = 30;

v1::ClusterMap Map() {
  v1::ClusterMap map;
  for (const char* id : {"a", "b", "c"}) {
    v1::NodeInfo* n = map.add_nodes();
    n->set_id(id);
    n->set_address(std::string(id) + ":1");
  }
  return map;
}

std::shared_ptr<const StreamPlan> Plan(uint32_t replication) {
  v1::DatasetInfo info;
  info.set_name("d");
  info.set_version(1);
  info.set_samples(kSamples);
  info.set_replication(replication);
  std::vector<v1::ShardInfo> shards;
  for (uint32_t s = 0; s < 10; ++s) {
    v1::ShardInfo& shard = shards.emplace_back();
    shard.set_seq(s);
    shard.set_first_id(s * 100);
    shard.set_samples(100);
  }
  DatasetShape shape;
  shape.name = "d";
  shape.version = 1;
  shape.num_samples = kSamples;
  auto plan = EpochPlan::Create(shape, v1::SamplerSpec(), 7, 0, kBatch, 1, v1::REMAINDER_SHORT);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return StreamPlan::Make(info, shards, std::move(plan).value());
}

// The rank's ids of steps [from, to).
std::map<uint64_t, std::vector<uint64_t>> Ids(const StreamPlan& plan, uint64_t from, uint64_t to) {
  std::map<uint64_t, std::vector<uint64_t>> ids;
  for (uint64_t step = from; step < to; ++step) plan.plan().RankBatch(step, 0, &ids[step]);
  return ids;
}

const auto kNothingFilled = [](uint64_t) -> const std::vector<bool>* { return nullptr; };

// Samples per node in `work`, checking that each slot of [from, to) is given
// once, with the plan's id, and that each node's work covers every step.
std::map<std::string, uint64_t> Count(const std::map<std::string, std::vector<v1::WorkStep>>& work,
                                      const std::map<uint64_t, std::vector<uint64_t>>& ids, uint64_t from,
                                      uint64_t to) {
  std::map<std::string, uint64_t> per_node;
  std::set<std::pair<uint64_t, uint32_t>> slots;
  for (const auto& [node, steps] : work) {
    EXPECT_EQ(steps.size(), to - from) << node;
    for (size_t i = 0; i < steps.size(); ++i) {
      const v1::WorkStep& w = steps[i];
      EXPECT_EQ(w.step(), from + i);
      for (int k = 0; k < w.ids_size(); ++k) {
        EXPECT_TRUE(slots.insert({w.step(), w.slots(k)}).second) << "slot given twice";
        EXPECT_EQ(w.ids(k), ids.at(w.step()).at(w.slots(k)));
        ++per_node[node];
      }
    }
  }
  EXPECT_EQ(slots.size(), (to - from) * kBatch) << "every slot given";
  return per_node;
}

TEST(WorkPlannerTest, SpreadsWholeStepsOverTheHoldersAndGivesANodeThatHasNotDeliveredLess) {
  auto plan = Plan(3);  // every node holds every shard
  WorkPlanner planner(plan, Map(), "");
  std::map<std::string, std::vector<v1::WorkStep>> work;
  auto ids = Ids(*plan, 0, 6);
  ASSERT_TRUE(planner.Plan(0, 6, ids, kNothingFilled, &work).ok());
  auto per_node = Count(work, ids, 0, 6);
  for (const char* n : {"a", "b", "c"}) {
    EXPECT_EQ(per_node[n], 60u) << n << ": 6 steps of 30 over three copies, evenly";
    EXPECT_EQ(planner.outstanding(n), 60u);
  }
  // Each step comes whole from one node: one part, no join.
  for (const auto& [node, steps] : work) {
    for (const v1::WorkStep& w : steps) {
      EXPECT_TRUE(w.ids_size() == 0 || w.ids_size() == static_cast<int>(kBatch)) << node << " step " << w.step();
    }
  }
  // b and c deliver everything, a nothing: the next window goes to them.
  planner.Received("b", 60);
  planner.Received("c", 60);
  ids = Ids(*plan, 6, 10);
  ASSERT_TRUE(planner.Plan(6, 10, ids, kNothingFilled, &work).ok());
  per_node = Count(work, ids, 6, 10);
  EXPECT_EQ(per_node["a"], 0u);
  EXPECT_EQ(per_node["b"], 60u);
  EXPECT_EQ(per_node["c"], 60u);
  // Excluded: nothing, and the outstanding work is forgotten with the calls.
  planner.SetExcluded({"b"});
  EXPECT_EQ(planner.outstanding("a"), 0u);
  ids = Ids(*plan, 10, 12);
  ASSERT_TRUE(planner.Plan(10, 12, ids, kNothingFilled, &work).ok());
  per_node = Count(work, ids, 10, 12);
  EXPECT_EQ(per_node.count("b"), 0u);
  EXPECT_EQ(per_node["a"] + per_node["c"], 60u);
  // Every node excluded: Unavailable.
  planner.SetExcluded({"a", "b", "c"});
  EXPECT_EQ(planner.Plan(10, 12, ids, kNothingFilled, &work).code(), Code::kUnavailable);
}

// With two copies of each shard on three nodes, the node a step's first
// sample goes to keeps every sample of the step it holds; only the others go
// elsewhere. The load still spreads evenly over many steps.
TEST(WorkPlannerTest, AStepsFirstNodeKeepsEverySampleItHolds) {
  auto plan = Plan(2);
  WorkPlanner planner(plan, Map(), "");
  std::map<std::string, std::vector<v1::WorkStep>> work;
  const auto ids = Ids(*plan, 0, 30);
  ASSERT_TRUE(planner.Plan(0, 30, ids, kNothingFilled, &work).ok());
  const auto per_node = Count(work, ids, 0, 30);
  PlacementSet members({{"a", "", ""}, {"b", "", ""}, {"c", "", ""}});
  const auto holds = [&](const std::string& node, uint64_t id) {
    const auto holders = FileHolders(plan->info(), ShardRef("d", 1, static_cast<uint32_t>(id / 100)), members);
    return std::find(holders.begin(), holders.end(), node) != holders.end();
  };
  for (uint64_t step = 0; step < 30; ++step) {
    std::string keeper;  // the node given slot 0
    for (const auto& [node, steps] : work) {
      const v1::WorkStep& w = steps[step];
      for (int k = 0; k < w.ids_size(); ++k) {
        if (w.slots(k) == 0) keeper = node;
      }
    }
    for (const auto& [node, steps] : work) {
      const v1::WorkStep& w = steps[step];
      for (int k = 0; k < w.ids_size(); ++k) {
        EXPECT_TRUE(holds(node, w.ids(k))) << "id " << w.ids(k) << " given to " << node << ", which lacks it";
        if (node != keeper) {
          EXPECT_FALSE(holds(keeper, w.ids(k))) << "step " << step << " id " << w.ids(k);
        }
      }
    }
  }
  for (const char* n : {"a", "b", "c"}) {
    EXPECT_GT(per_node.at(n), 30u * kBatch / 3 / 2) << n << ": the load spreads";
  }
}

TEST(WorkPlannerTest, OneCopyGoesToItsHolderAndFilledSlotsAreLeftOut) {
  auto plan = Plan(1);
  WorkPlanner planner(plan, Map(), "");
  std::map<std::string, std::vector<v1::WorkStep>> work;
  const auto ids = Ids(*plan, 0, 3);
  // Slot 0 of every step is filled already: the rest are asked for.
  std::vector<bool> first_filled(kBatch, false);
  first_filled[0] = true;
  ASSERT_TRUE(planner
                  .Plan(
                      0, 3, ids, [&first_filled](uint64_t) { return &first_filled; }, &work)
                  .ok());
  PlacementSet members({{"a", "", ""}, {"b", "", ""}, {"c", "", ""}});
  uint64_t given = 0;
  for (const auto& [node, steps] : work) {
    for (const v1::WorkStep& w : steps) {
      for (int k = 0; k < w.ids_size(); ++k) {
        EXPECT_NE(w.slots(k), 0u);
        const uint64_t id = w.ids(k);
        const auto holders = FileHolders(plan->info(), ShardRef("d", 1, static_cast<uint32_t>(id / 100)), members);
        ASSERT_EQ(holders.size(), 1u);
        EXPECT_EQ(holders[0], node) << "id " << id;
        ++given;
      }
    }
  }
  EXPECT_EQ(given, 3u * (kBatch - 1));
}

TEST(StratumIndexCacheTest, KeepsTheMostRecentlyUsedVersions) {
  StratumIndexCache cache;
  std::vector<std::shared_ptr<const StratumMembers>> indexes;
  for (uint64_t v = 1; v <= StratumIndexCache::kCapacity + 1; ++v) {
    indexes.push_back(std::make_shared<InMemoryStratumMembers>(std::vector<std::vector<uint64_t>>{{v}}));
    if (v == StratumIndexCache::kCapacity + 1) {
      EXPECT_EQ(cache.Find("d@1"), indexes[0]) << "used again: kept";
    }
    cache.Put("d@" + std::to_string(v), indexes.back());
  }
  EXPECT_EQ(cache.Find("d@1"), indexes[0]);
  EXPECT_EQ(cache.Find("d@2"), nullptr) << "the least recently used went";
  EXPECT_EQ(cache.Find("d@5"), indexes[4]);
  EXPECT_EQ(cache.Find("e@1"), nullptr);
}

}  // namespace
}  // namespace strata::client_internal
