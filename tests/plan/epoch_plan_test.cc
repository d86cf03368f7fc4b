#include "plan/epoch_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "plan/stream_start.h"

namespace strata {
namespace {

DatasetShape Shape(uint64_t n) {
  DatasetShape s;
  s.name = "cats";
  s.version = 3;
  s.num_samples = n;
  return s;
}

EpochPlan MakePlan(uint64_t n, uint32_t batch, uint32_t world, v1::Remainder rem = v1::REMAINDER_SHORT,
                   uint64_t seed = 7, uint64_t epoch = 0) {
  auto plan = EpochPlan::Create(Shape(n), v1::SamplerSpec(), seed, epoch, batch, world, rem);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return std::move(plan).value();
}

// All of global batch `step`, reassembled from every rank's slice in position order.
std::vector<uint64_t> Global(const EpochPlan& plan, uint64_t step) {
  std::vector<std::vector<uint64_t>> parts(plan.world());
  uint64_t total = 0;
  for (uint32_t r = 0; r < plan.world(); ++r) {
    plan.RankBatch(step, r, &parts[r]);
    EXPECT_EQ(parts[r].size(), plan.RankBatchSize(step, r));
    total += parts[r].size();
  }
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < total; ++i) out.push_back(parts[i % plan.world()][i / plan.world()]);
  return out;
}

class ExactlyOnceTest : public ::testing::TestWithParam<std::tuple<uint64_t, uint32_t, uint32_t>> {};

TEST_P(ExactlyOnceTest, ShortRemainderVisitsEverySampleOnce) {
  const auto [n, batch, world] = GetParam();
  EpochPlan plan = MakePlan(n, batch, world);
  const uint64_t g = uint64_t{batch} * world;
  EXPECT_EQ(plan.num_steps(), (n + g - 1) / g);
  std::vector<int> seen(n, 0);
  std::vector<uint64_t> ids;
  for (uint64_t step = 0; step < plan.num_steps(); ++step) {
    const bool last = step + 1 == plan.num_steps();
    const uint64_t in_batch = last ? n - step * g : g;
    for (uint32_t r = 0; r < world; ++r) {
      plan.RankBatch(step, r, &ids);
      if (!last) {
        EXPECT_EQ(ids.size(), batch) << "full batches give every rank batch_size samples";
      } else {
        // A short batch is split as evenly as possible: floor or ceiling.
        EXPECT_GE(ids.size(), in_batch / world);
        EXPECT_LE(ids.size(), (in_batch + world - 1) / world);
      }
      for (uint64_t id : ids) {
        ASSERT_LT(id, n);
        ++seen[id];
      }
    }
  }
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "sample " << i;
}

TEST_P(ExactlyOnceTest, DropRemainderHasNoDuplicatesAndOnlyFullBatches) {
  const auto [n, batch, world] = GetParam();
  const uint64_t g = uint64_t{batch} * world;
  auto created = EpochPlan::Create(Shape(n), v1::SamplerSpec(), 7, 0, batch, world, v1::REMAINDER_DROP);
  if (n < g) {
    ASSERT_FALSE(created.ok());
    EXPECT_EQ(created.status().code(), Code::kInvalidArgument);
    return;
  }
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const EpochPlan& plan = created.value();
  EXPECT_EQ(plan.num_steps(), n / g);
  std::set<uint64_t> seen;
  std::vector<uint64_t> ids;
  for (uint64_t step = 0; step < plan.num_steps(); ++step) {
    for (uint32_t r = 0; r < world; ++r) {
      plan.RankBatch(step, r, &ids);
      ASSERT_EQ(ids.size(), batch);
      for (uint64_t id : ids) {
        ASSERT_LT(id, n);
        ASSERT_TRUE(seen.insert(id).second) << "duplicate " << id;
      }
    }
  }
  EXPECT_EQ(seen.size(), plan.num_steps() * g);
}

INSTANTIATE_TEST_SUITE_P(Combinations, ExactlyOnceTest,
                         ::testing::Combine(::testing::Values(1, 2, 7, 64, 100, 1000, 1023, 4097),
                                            ::testing::Values(1u, 3u, 8u, 32u), ::testing::Values(1u, 2u, 3u, 4u, 8u)));

TEST(EpochPlanTest, SameGlobalBatchesForAnyWorldWithTheSameGlobalBatch) {
  for (uint64_t n : {1000, 1013}) {
    EpochPlan w1 = MakePlan(n, 16, 1);
    EpochPlan w2 = MakePlan(n, 8, 2);
    EpochPlan w4 = MakePlan(n, 4, 4);
    EpochPlan w8 = MakePlan(n, 2, 8);
    ASSERT_EQ(w1.num_steps(), w8.num_steps());
    EXPECT_EQ(w1.plan_hash(), w8.plan_hash()) << "the plan hash depends on the global batch, not the world";
    for (uint64_t step = 0; step < w1.num_steps(); ++step) {
      std::vector<uint64_t> a = Global(w1, step);
      for (const EpochPlan* other : {&w2, &w4, &w8}) {
        std::vector<uint64_t> b = Global(*other, step);
        EXPECT_EQ(a, b) << "step " << step << " world " << other->world();
      }
    }
  }
}

TEST(EpochPlanTest, DeterministicAcrossPlanObjects) {
  EpochPlan a = MakePlan(5000, 10, 4);
  EpochPlan b = MakePlan(5000, 10, 4);
  std::vector<uint64_t> x, y;
  for (uint64_t step = 0; step < a.num_steps(); step += 7) {
    for (uint32_t r = 0; r < 4; ++r) {
      a.RankBatch(step, r, &x);
      b.RankBatch(step, r, &y);
      EXPECT_EQ(x, y);
    }
  }
}

TEST(EpochPlanTest, SeedAndEpochChangeTheOrder) {
  std::vector<uint64_t> base, other;
  MakePlan(1000, 100, 1, v1::REMAINDER_SHORT, 1, 0).RankBatch(0, 0, &base);
  MakePlan(1000, 100, 1, v1::REMAINDER_SHORT, 2, 0).RankBatch(0, 0, &other);
  EXPECT_NE(base, other) << "seed";
  MakePlan(1000, 100, 1, v1::REMAINDER_SHORT, 1, 1).RankBatch(0, 0, &other);
  EXPECT_NE(base, other) << "epoch";
}

TEST(EpochPlanTest, OrderIsShuffled) {
  // Not the identity, and not a rotation of it.
  EpochPlan plan = MakePlan(1000, 1000, 1);
  std::vector<uint64_t> ids;
  plan.RankBatch(0, 0, &ids);
  int ascending = 0;
  for (size_t i = 1; i < ids.size(); ++i) ascending += ids[i] == ids[i - 1] + 1;
  EXPECT_LT(ascending, 20);
}

TEST(EpochPlanTest, ResumedStepsEqualTheUninterruptedOnes) {
  EpochPlan run = MakePlan(777, 5, 3);
  std::vector<std::vector<uint64_t>> uninterrupted;
  std::vector<uint64_t> ids;
  for (uint64_t step = 0; step < run.num_steps(); ++step) {
    run.RankBatch(step, 1, &ids);
    uninterrupted.push_back(ids);
  }
  for (uint64_t resume_at : {0ull, 1ull, 17ull, 51ull}) {
    EpochPlan resumed = MakePlan(777, 5, 3);  // a fresh process after a restart
    for (uint64_t step = resume_at; step < resumed.num_steps(); ++step) {
      resumed.RankBatch(step, 1, &ids);
      ASSERT_EQ(ids, uninterrupted[step]) << "resumed at " << resume_at << ", step " << step;
    }
  }
}

TEST(EpochPlanTest, ShuffleOrderIsPinned) {
  // Plans and resume tokens name positions of this exact order: a change to it
  // (to the permutations, or to how Select walks a batch) changes every stored
  // plan. FNV-1a over every rank's batch of every step.
  for (const auto& [window, world, pinned] : {std::tuple<uint64_t, uint32_t, uint64_t>{0, 1, 0xC0AE120F256194F5},
                                              {0, 3, 0xD5D35EA27E1FDC0D},
                                              {64, 8, 0x69F603A6EC2E2F6D},
                                              {1000, 3, 0x8D0ADF19D91A8C93}}) {
    v1::SamplerSpec spec;
    spec.set_block_window(window);
    auto plan = EpochPlan::Create(Shape(100'003), spec, 7, 2, 100, world, v1::REMAINDER_SHORT);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    uint64_t hash = 0xCBF29CE484222325;
    std::vector<uint64_t> ids;
    for (uint64_t step = 0; step < plan->num_steps(); ++step) {
      for (uint32_t r = 0; r < world; ++r) {
        plan->RankBatch(step, r, &ids);
        hash = (hash ^ ids.size()) * 0x100000001B3;
        for (uint64_t id : ids) hash = (hash ^ id) * 0x100000001B3;
      }
    }
    EXPECT_EQ(hash, pinned) << "window " << window << ", world " << world;
  }
}

TEST(EpochPlanTest, HugeDatasetNeedsNoPerSampleMemory) {
  // 10^12 samples: building an n-element array would exhaust memory.
  EpochPlan plan = MakePlan(1'000'000'000'000ull, 256, 8);
  std::vector<uint64_t> ids;
  plan.RankBatch(plan.num_steps() - 1, 7, &ids);
  EXPECT_EQ(ids.size(), 256u);
  for (uint64_t id : ids) EXPECT_LT(id, 1'000'000'000'000ull);
}

TEST(EpochPlanTest, RejectsBadParameters) {
  auto zero_batch = EpochPlan::Create(Shape(10), v1::SamplerSpec(), 0, 0, 0, 1, v1::REMAINDER_SHORT);
  EXPECT_EQ(zero_batch.status().code(), Code::kInvalidArgument);
  auto zero_world = EpochPlan::Create(Shape(10), v1::SamplerSpec(), 0, 0, 4, 0, v1::REMAINDER_SHORT);
  EXPECT_EQ(zero_world.status().code(), Code::kInvalidArgument);
  auto huge = EpochPlan::Create(Shape(10), v1::SamplerSpec(), 0, 0, 1u << 20, 1u << 10, v1::REMAINDER_SHORT);
  EXPECT_EQ(huge.status().code(), Code::kInvalidArgument);
  auto empty = EpochPlan::Create(Shape(0), v1::SamplerSpec(), 0, 0, 4, 1, v1::REMAINDER_SHORT);
  EXPECT_EQ(empty.status().code(), Code::kFailedPrecondition);
  auto dropped = EpochPlan::Create(Shape(10), v1::SamplerSpec(), 0, 0, 4, 4, v1::REMAINDER_DROP);
  EXPECT_EQ(dropped.status().code(), Code::kInvalidArgument);
  EXPECT_NE(dropped.status().message().find("empty"), std::string::npos);
}

TEST(EpochPlanTest, PlanHashCoversSpecAndGlobalBatch) {
  const uint64_t base = MakePlan(100, 4, 2).plan_hash();
  EXPECT_EQ(base, MakePlan(100, 4, 2, v1::REMAINDER_SHORT, 99, 5).plan_hash()) << "seed and epoch are separate";
  EXPECT_NE(base, MakePlan(100, 4, 4).plan_hash());
  EXPECT_NE(base, MakePlan(100, 4, 2, v1::REMAINDER_DROP).plan_hash());
  DatasetShape other = Shape(100);
  other.version = 4;
  auto p = EpochPlan::Create(other, v1::SamplerSpec(), 7, 0, 4, 2, v1::REMAINDER_SHORT);
  ASSERT_TRUE(p.ok());
  EXPECT_NE(base, p->plan_hash());
}

// Where a stream of max_steps steps from `start` ends: never past the epoch,
// never wrapped around by a huge max_steps, never before its start.
TEST(StreamStartTest, EndStepIsTheEpochsEndAtMost) {
  EXPECT_EQ(EndStep(5, 0, 25), 25u) << "0: no limit";
  EXPECT_EQ(EndStep(5, 3, 25), 8u);
  EXPECT_EQ(EndStep(5, 20, 25), 25u);
  EXPECT_EQ(EndStep(5, 21, 25), 25u);
  EXPECT_EQ(EndStep(5, UINT64_MAX, 25), 25u);
  EXPECT_EQ(EndStep(UINT64_MAX - 1, UINT64_MAX, UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(EndStep(25, 4, 25), 25u) << "at the end: nothing";
  EXPECT_EQ(EndStep(30, 4, 25), 30u) << "past it (refused elsewhere): an empty range";
}

}  // namespace
}  // namespace strata
