// The stratified and weighted samplers on adversarial distributions, checking
// every guarantee of plan/stratified_sampler.h at every step:
//   per-batch floor/ceil, cumulative within 1, rank shares within 1,
//   exactly once, determinism, the same global batches for world 1/2/4/8,
//   and resumption at random steps.
#include "plan/stratified_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "common/int128.h"
#include "plan/stratum_index.h"
#include "tests/plan/adversarial_datasets.h"

namespace strata {
namespace {

v1::SamplerSpec Stratified() {
  v1::SamplerSpec s;
  s.set_kind(v1::SamplerSpec::STRATIFIED);
  return s;
}

EpochPlan MakePlan(const Dataset& d, const v1::SamplerSpec& spec, uint32_t batch, uint32_t world,
                   v1::Remainder rem = v1::REMAINDER_SHORT, uint64_t seed = 11, uint64_t epoch = 0) {
  auto plan = EpochPlan::Create(d.shape, spec, seed, epoch, batch, world, rem);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return std::move(plan).value();
}

// Every rank's batch of every step.
using RankBatches = std::vector<std::vector<std::vector<uint64_t>>>;  // [step][rank]

RankBatches RunEpoch(const EpochPlan& plan) {
  RankBatches out(plan.num_steps(), std::vector<std::vector<uint64_t>>(plan.world()));
  for (uint64_t step = 0; step < plan.num_steps(); ++step) {
    for (uint32_t r = 0; r < plan.world(); ++r) {
      plan.RankBatch(step, r, &out[step][r]);
      EXPECT_EQ(out[step][r].size(), plan.RankBatchSize(step, r));
    }
  }
  return out;
}

std::vector<uint64_t> SortedGlobal(const std::vector<std::vector<uint64_t>>& ranks) {
  std::vector<uint64_t> all;
  for (const auto& r : ranks) all.insert(all.end(), r.begin(), r.end());
  std::sort(all.begin(), all.end());
  return all;
}

// Checks the natural-proportion guarantees of a STRATIFIED epoch at every step.
void CheckStratifiedEpoch(const Dataset& d, const RankBatches& run, uint64_t g, uint32_t world, v1::Remainder rem) {
  const uint64_t n = d.n();
  const size_t strata = d.counts.size();
  const uint64_t full = n / g, left = n % g;
  ASSERT_EQ(run.size(), full + (rem == v1::REMAINDER_SHORT && left != 0 ? 1 : 0));
  std::vector<uint64_t> cumulative(strata, 0);
  std::vector<uint8_t> seen(n, 0);
  uint64_t delivered = 0;
  for (uint64_t step = 0; step < run.size(); ++step) {
    const uint64_t size = step < full ? g : left;
    std::vector<uint64_t> count(strata, 0);
    std::vector<std::vector<uint64_t>> rank_count(world, std::vector<uint64_t>(strata, 0));
    uint64_t total = 0;
    for (uint32_t r = 0; r < world; ++r) {
      for (uint64_t id : run[step][r]) {
        ASSERT_LT(id, n);
        ASSERT_EQ(seen[id]++, 0) << "sample " << id << " again at step " << step;
        ++count[d.stratum_of[id]];
        ++rank_count[r][d.stratum_of[id]];
        ++total;
      }
    }
    ASSERT_EQ(total, size) << "step " << step;
    delivered += size;
    for (size_t s = 0; s < strata; ++s) {
      // Target of s in this batch: size * c_s / n.
      const uint64_t num = size * d.counts[s];
      ASSERT_GE(count[s], num / n) << "stratum " << s << " below the floor at step " << step;
      ASSERT_LE(count[s], (num + n - 1) / n) << "stratum " << s << " above the ceiling at step " << step;
      cumulative[s] += count[s];
      // |cumulative - delivered * c_s / n| < 1, in units of 1/n.
      const i128 lag = static_cast<i128>(cumulative[s]) * n - static_cast<i128>(delivered) * d.counts[s];
      ASSERT_LT(lag, static_cast<i128>(n)) << "stratum " << s << " cumulative ahead at step " << step;
      ASSERT_GT(lag, -static_cast<i128>(n)) << "stratum " << s << " cumulative behind at step " << step;
      for (uint32_t r = 0; r < world; ++r) {
        // Each rank: within 1 of its proportional share size * c_s / (n * W).
        ASSERT_GE(rank_count[r][s], num / (n * world)) << "rank " << r << " stratum " << s << " step " << step;
        ASSERT_LE(rank_count[r][s], (num + n * world - 1) / (n * world))
            << "rank " << r << " stratum " << s << " step " << step;
      }
    }
  }
  if (rem == v1::REMAINDER_SHORT) {
    for (uint64_t id = 0; id < n; ++id) ASSERT_EQ(seen[id], 1) << "sample " << id << " never came";
  }
}

struct Case {
  const char* name;
  Dataset (*make)();
  uint32_t global_batch;
};

class AdversarialTest : public ::testing::TestWithParam<Case> {};

TEST_P(AdversarialTest, EveryGuaranteeAtEveryStepForWorlds1248) {
  const Dataset d = GetParam().make();
  const uint32_t g = GetParam().global_batch;
  RankBatches reference;
  for (uint32_t world : {1u, 2u, 4u, 8u}) {
    if (g % world != 0) continue;  // the global batch is split evenly
    SCOPED_TRACE("world " + std::to_string(world));
    EpochPlan plan = MakePlan(d, Stratified(), g / world, world);
    RankBatches run = RunEpoch(plan);
    CheckStratifiedEpoch(d, run, g, world, v1::REMAINDER_SHORT);
    if (HasFatalFailure()) return;
    if (world == 1) {
      reference = run;
      continue;
    }
    ASSERT_EQ(run.size(), reference.size());
    for (uint64_t step = 0; step < run.size(); ++step) {
      ASSERT_EQ(SortedGlobal(run[step]), SortedGlobal(reference[step])) << "step " << step;
    }
  }
}

TEST_P(AdversarialTest, DropRemainderKeepsFullBatchesOnly) {
  const Dataset d = GetParam().make();
  const uint32_t g = GetParam().global_batch;
  EpochPlan plan = MakePlan(d, Stratified(), g / 4, 4, v1::REMAINDER_DROP);
  EXPECT_EQ(plan.num_steps(), d.n() / g);
  CheckStratifiedEpoch(d, RunEpoch(plan), g, 4, v1::REMAINDER_DROP);
}

TEST_P(AdversarialTest, DeterministicAndResumableAtRandomSteps) {
  const Dataset d = GetParam().make();
  const uint32_t g = GetParam().global_batch;
  const RankBatches uninterrupted = RunEpoch(MakePlan(d, Stratified(), g / 4, 4));
  EXPECT_EQ(RunEpoch(MakePlan(d, Stratified(), g / 4, 4)), uninterrupted) << "a second plan object differs";
  std::mt19937_64 rng(5);
  std::vector<uint64_t> ids;
  for (int trial = 0; trial < 12; ++trial) {
    // A fresh process resumes at a random step and runs a few steps.
    EpochPlan resumed = MakePlan(d, Stratified(), g / 4, 4);
    const uint64_t at = rng() % resumed.num_steps();
    for (uint64_t step = at; step < std::min(at + 5, resumed.num_steps()); ++step) {
      for (uint32_t r = 0; r < 4; ++r) {
        resumed.RankBatch(step, r, &ids);
        ASSERT_EQ(ids, uninterrupted[step][r]) << "resumed at " << at << ", step " << step;
      }
    }
  }
  // One plan asked for steps in random order.
  EpochPlan shared = MakePlan(d, Stratified(), g / 4, 4);
  for (int trial = 0; trial < 200; ++trial) {
    const uint64_t step = rng() % shared.num_steps();
    const uint32_t r = static_cast<uint32_t>(rng() % 4);
    shared.RankBatch(step, r, &ids);
    ASSERT_EQ(ids, uninterrupted[step][r]) << "step " << step << " rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Distributions, AdversarialTest,
                         ::testing::Values(Case{"RareClass", RareClass, 256}, Case{"Zipf1000", Zipf1000, 256},
                                           Case{"TwoSources", TwoSources, 200},
                                           Case{"TwoSourcesB100", TwoSources, 100}),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(StratifiedSamplerTest, OnePercentStratumIsInEveryBatchOf100) {
  const Dataset d = TwoSources();
  EpochPlan plan = MakePlan(d, Stratified(), 25, 4);
  const RankBatches run = RunEpoch(plan);
  for (uint64_t step = 0; step < run.size(); ++step) {
    uint64_t rare = 0;
    for (const auto& rank : run[step]) {
      for (uint64_t id : rank) rare += d.stratum_of[id] == 1;
    }
    ASSERT_EQ(rare, 1u) << "step " << step;
  }
}

TEST(StratifiedSamplerTest, EdgeCases) {
  struct Edge {
    std::vector<uint64_t> counts;
    uint32_t batch, world;
  };
  const std::vector<Edge> edges = {
      {{3, 2, 1}, 4, 4},            // n < G: one short batch
      {{7, 5, 1}, 2, 2},            // a stratum with one sample
      {{10, 9, 4, 1}, 1, 1},        // G = 1
      {{101, 53, 17, 3, 1}, 3, 2},  // n not divisible by G
      {{5000, 1, 1, 1}, 8, 4},      // three singletons against a giant
      {{1, 1, 1, 1, 1, 1, 1, 1, 1}, 2, 1},
  };
  for (const Edge& e : edges) {
    const Dataset d = MakeDataset(e.counts);
    SCOPED_TRACE("n " + std::to_string(d.n()) + " batch " + std::to_string(e.batch) + " world " +
                 std::to_string(e.world));
    EpochPlan plan = MakePlan(d, Stratified(), e.batch, e.world);
    CheckStratifiedEpoch(d, RunEpoch(plan), uint64_t{e.batch} * e.world, e.world, v1::REMAINDER_SHORT);
    if (d.n() >= uint64_t{e.batch} * e.world) {
      EpochPlan drop = MakePlan(d, Stratified(), e.batch, e.world, v1::REMAINDER_DROP);
      CheckStratifiedEpoch(d, RunEpoch(drop), uint64_t{e.batch} * e.world, e.world, v1::REMAINDER_DROP);
    }
  }
}

TEST(StratifiedSamplerTest, EmptyStrataAreLeftOut) {
  Dataset d = MakeDataset({40, 0, 25, 0, 35});
  EpochPlan plan = MakePlan(d, Stratified(), 5, 2);
  CheckStratifiedEpoch(d, RunEpoch(plan), 10, 2, v1::REMAINDER_SHORT);
  const auto& sampler = dynamic_cast<const StratifiedSampler&>(plan.sampler());
  EXPECT_EQ(sampler.quotas().strata.size(), 3u);
  const std::vector<double> shares = plan.sampler().TargetShares();
  ASSERT_EQ(shares.size(), 5u);
  EXPECT_EQ(shares[1], 0.0);
  EXPECT_DOUBLE_EQ(shares[0], 0.4);
}

TEST(StratifiedSamplerTest, ManyStepsExerciseCheckpoints) {
  // G = 16 over Zipf: ~9,400 steps, several checkpoints; random access both ways.
  const Dataset d = Zipf1000();
  EpochPlan plan = MakePlan(d, Stratified(), 8, 2);
  const RankBatches run = RunEpoch(plan);
  CheckStratifiedEpoch(d, run, 16, 2, v1::REMAINDER_SHORT);
  std::mt19937_64 rng(9);
  std::vector<uint64_t> ids;
  EpochPlan other = MakePlan(d, Stratified(), 8, 2);
  for (int trial = 0; trial < 100; ++trial) {
    const uint64_t step = rng() % other.num_steps();
    other.RankBatch(step, 1, &ids);
    ASSERT_EQ(ids, run[step][1]) << "step " << step;
  }
}

TEST(StratifiedSamplerTest, SeedAndEpochChangeTheOrderButNotTheGuarantees) {
  const Dataset d = RareClass();
  std::vector<uint64_t> a, b;
  MakePlan(d, Stratified(), 64, 4, v1::REMAINDER_SHORT, 1, 0).RankBatch(3, 0, &a);
  MakePlan(d, Stratified(), 64, 4, v1::REMAINDER_SHORT, 2, 0).RankBatch(3, 0, &b);
  EXPECT_NE(a, b);
  MakePlan(d, Stratified(), 64, 4, v1::REMAINDER_SHORT, 1, 1).RankBatch(3, 0, &b);
  EXPECT_NE(a, b);
  CheckStratifiedEpoch(d, RunEpoch(MakePlan(d, Stratified(), 64, 4, v1::REMAINDER_SHORT, 2, 1)), 256, 4,
                       v1::REMAINDER_SHORT);
}

TEST(StratifiedSamplerTest, WithinAStratumTheOrderIsShuffled) {
  // Ids of one stratum should not come in ascending order.
  const Dataset d = TwoSources();
  const RankBatches run = RunEpoch(MakePlan(d, Stratified(), 100, 1));
  std::vector<uint64_t> common;
  for (const auto& step : run) {
    for (uint64_t id : step[0]) {
      if (d.stratum_of[id] == 0) common.push_back(id);
    }
  }
  size_t ascending = 0;
  for (size_t i = 1; i < common.size(); ++i) ascending += common[i] > common[i - 1];
  EXPECT_GT(ascending, common.size() * 4 / 10);
  EXPECT_LT(ascending, common.size() * 6 / 10);
}

TEST(StratifiedSamplerTest, BlockWindowKeepsTheGuarantees) {
  const Dataset d = RareClass();
  v1::SamplerSpec spec = Stratified();
  spec.set_block_window(64);
  EpochPlan plan = MakePlan(d, spec, 64, 4);
  CheckStratifiedEpoch(d, RunEpoch(plan), 256, 4, v1::REMAINDER_SHORT);
  EXPECT_NE(plan.plan_hash(), MakePlan(d, Stratified(), 64, 4).plan_hash());
}

// FNV-1a over every rank's batch of every step, sizes included.
uint64_t EpochHash(const EpochPlan& plan) {
  uint64_t hash = 0xCBF29CE484222325;
  for (const auto& step : RunEpoch(plan)) {
    for (const auto& rank : step) {
      hash = (hash ^ rank.size()) * 0x100000001B3;
      for (uint64_t id : rank) hash = (hash ^ id) * 0x100000001B3;
    }
  }
  return hash;
}

TEST(StratifiedSamplerTest, OrderIsPinned) {
  // Plans and resume tokens name positions of this exact order: a change to it
  // (to the permutations, or to how Select walks a batch) changes every stored
  // plan. 30 strata of Zipf sizes, ids in stratum order (no std::shuffle, whose
  // results differ between standard libraries).
  std::vector<uint64_t> counts;
  for (uint64_t s = 0; s < 30; ++s) counts.push_back(3000 / (s + 1) + 1);
  Dataset d = MakeDataset(counts);
  std::sort(d.stratum_of.begin(), d.stratum_of.end());
  d.shape.members = InMemoryStratumMembers::FromAssignment(d.stratum_of, 30);
  v1::SamplerSpec windowed = Stratified();
  windowed.set_block_window(64);
  v1::SamplerSpec weighted;  // a few strata cycle through several permutations
  weighted.set_kind(v1::SamplerSpec::WEIGHTED);
  for (uint32_t s = 0; s < 30; ++s) (*weighted.mutable_weights())[d.shape.strata[s].key()] = 1 + s % 4;
  v1::SamplerSpec weighted_windowed = weighted;
  weighted_windowed.set_block_window(50);
  EXPECT_EQ(EpochHash(MakePlan(d, Stratified(), 100, 3)), uint64_t{0x63E5206C692E2351});
  EXPECT_EQ(EpochHash(MakePlan(d, windowed, 16, 8)), uint64_t{0x4C03F33F3EBF3DA9});
  EXPECT_EQ(EpochHash(MakePlan(d, weighted, 64, 2)), uint64_t{0xB9E375C51F587093});
  EXPECT_EQ(EpochHash(MakePlan(d, weighted_windowed, 1000, 1)), uint64_t{0x9203EF27487133CD});
}

TEST(StratifiedSamplerTest, AStepTooFarFromWhatTheScheduleReachedIsRefusedUntilItIsNear) {
  // A weighted epoch of 2^64 - 1 samples: its schedule would take hours to
  // replay to step 2^61, and a node serving such a request stays bounded.
  Dataset d = TwoSources();
  v1::SamplerSpec weighted;
  weighted.set_kind(v1::SamplerSpec::WEIGHTED);
  weighted.set_epoch_samples(~uint64_t{0});
  EpochPlan plan = MakePlan(d, weighted, 1, 1);
  const uint64_t far = uint64_t{1} << 61;
  Status s = plan.CheckReachable(far);
  ASSERT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("start at step "), std::string::npos) << s.message();
  // Two strata: 2^28 / 4 steps from step 0 at most.
  const uint64_t most = (uint64_t{1} << 28) / 4;
  EXPECT_TRUE(plan.CheckReachable(most).ok());
  EXPECT_FALSE(plan.CheckReachable(most + 1).ok());
  // Once the schedule stands further on, the bound counts from there.
  std::vector<uint64_t> ids;
  plan.RankBatch(1000000, 0, &ids);
  EXPECT_TRUE(plan.CheckReachable(1000000 + most).ok());
  EXPECT_FALSE(plan.CheckReachable(1000000 + 2 * most).ok());
  // The shuffle sampler computes any step directly.
  auto shuffle = EpochPlan::Create(d.shape, v1::SamplerSpec(), 1, 0, 1, 1, v1::REMAINDER_SHORT);
  ASSERT_TRUE(shuffle.ok());
  EXPECT_TRUE(shuffle->CheckReachable(shuffle->num_steps() - 1).ok());
}

TEST(StratifiedSamplerTest, RefusesBadSpecsAndMissingIndex) {
  Dataset d = TwoSources();
  v1::SamplerSpec spec = Stratified();
  spec.set_weight_power(0.5);
  auto bad = EpochPlan::Create(d.shape, spec, 1, 0, 10, 1, v1::REMAINDER_SHORT);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  spec = Stratified();
  (*spec.mutable_min_per_batch())["nope"] = 1;
  bad = EpochPlan::Create(d.shape, spec, 1, 0, 10, 1, v1::REMAINDER_SHORT);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("nope"), std::string::npos);
  spec = Stratified();
  (*spec.mutable_min_per_batch())["s00001"] = 10;
  bad = EpochPlan::Create(d.shape, spec, 1, 0, 10, 1, v1::REMAINDER_SHORT);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument) << "min_per_batch fills the whole batch";
  v1::SamplerSpec shuffle;
  (*shuffle.mutable_min_per_batch())["s00001"] = 1;
  bad = EpochPlan::Create(d.shape, shuffle, 1, 0, 10, 1, v1::REMAINDER_SHORT);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  DatasetShape no_index = d.shape;
  no_index.members.reset();
  bad = EpochPlan::Create(no_index, Stratified(), 1, 0, 10, 1, v1::REMAINDER_SHORT);
  EXPECT_EQ(bad.status().code(), Code::kFailedPrecondition);
  DatasetShape wrong = d.shape;
  wrong.strata[0].set_count(wrong.strata[0].count() - 1);
  bad = EpochPlan::Create(wrong, Stratified(), 1, 0, 10, 1, v1::REMAINDER_SHORT);
  EXPECT_EQ(bad.status().code(), Code::kFailedPrecondition);
}

TEST(StratifiedSamplerTest, PlanHashCoversTheSpec) {
  const Dataset d = TwoSources();
  const uint64_t base = MakePlan(d, Stratified(), 50, 2).plan_hash();
  EXPECT_EQ(base, MakePlan(d, Stratified(), 25, 4).plan_hash()) << "world is not part of the plan";
  EXPECT_NE(base, MakePlan(d, v1::SamplerSpec(), 50, 2).plan_hash());
  v1::SamplerSpec boosted = Stratified();
  (*boosted.mutable_min_per_batch())["s00001"] = 3;
  EXPECT_NE(base, MakePlan(d, boosted, 50, 2).plan_hash());
}

// The members of the dataset, with a log of what the sampler asks of them.
class LoggedMembers final : public StratumMembers {
 public:
  explicit LoggedMembers(std::shared_ptr<const StratumMembers> inner) : inner_(std::move(inner)) {}
  uint32_t num_strata() const override { return inner_->num_strata(); }
  uint64_t count(uint32_t stratum) const override { return inner_->count(stratum); }
  uint64_t Member(uint32_t stratum, uint64_t j) const override {
    log_.push_back({'M', stratum, j});
    return inner_->Member(stratum, j);
  }
  void WillRead(uint32_t stratum, uint64_t j) const override { log_.push_back({'W', stratum, j}); }

  struct Call {
    char kind;
    uint32_t stratum;
    uint64_t j;
  };
  mutable std::vector<Call> log_;

 private:
  std::shared_ptr<const StratumMembers> inner_;
};

// A step announces every member it will read (StratumMembers::WillRead)
// before it reads the first: an index out of the page cache then reads them
// from storage together.
TEST(StratifiedSamplerTest, AStepAnnouncesItsMembersBeforeReadingThem) {
  Dataset d = RareClass();
  auto logged = std::make_shared<LoggedMembers>(d.shape.members);
  d.shape.members = logged;
  const EpochPlan plan = MakePlan(d, Stratified(), 64, 2);
  std::vector<uint64_t> ids;
  for (uint64_t step = 0; step < 5; ++step) {
    for (uint32_t rank = 0; rank < 2; ++rank) {
      logged->log_.clear();
      plan.RankBatch(step, rank, &ids);
      ASSERT_EQ(ids.size(), plan.RankBatchSize(step, rank));
      const auto& log = logged->log_;
      ASSERT_EQ(log.size(), 2 * ids.size());
      std::vector<std::pair<uint32_t, uint64_t>> announced, read;
      for (size_t i = 0; i < log.size(); ++i) {
        EXPECT_EQ(log[i].kind, i < ids.size() ? 'W' : 'M') << "call " << i << " of step " << step;
        (log[i].kind == 'W' ? announced : read).emplace_back(log[i].stratum, log[i].j);
      }
      std::sort(announced.begin(), announced.end());
      std::sort(read.begin(), read.end());
      EXPECT_EQ(announced, read);
    }
  }
}

}  // namespace
}  // namespace strata
