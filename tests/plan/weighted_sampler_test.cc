// The weighted sampler and min_per_batch: per-batch floor/ceil and cumulative
// counts against the plan's exact quotas, cycling without repeats inside a
// cycle, and the same global batches for world 1/2/4/8.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "common/int128.h"
#include "plan/stratified_sampler.h"
#include "plan/stratum_index.h"
#include "tests/plan/adversarial_datasets.h"

namespace strata {
namespace {

v1::SamplerSpec Weighted() {
  v1::SamplerSpec s;
  s.set_kind(v1::SamplerSpec::WEIGHTED);
  return s;
}

EpochPlan MakePlan(const Dataset& d, const v1::SamplerSpec& spec, uint32_t batch, uint32_t world,
                   v1::Remainder rem = v1::REMAINDER_SHORT) {
  auto plan = EpochPlan::Create(d.shape, spec, 3, 1, batch, world, rem);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return std::move(plan).value();
}

using RankBatches = std::vector<std::vector<std::vector<uint64_t>>>;

RankBatches RunEpoch(const EpochPlan& plan) {
  RankBatches out(plan.num_steps(), std::vector<std::vector<uint64_t>>(plan.world()));
  for (uint64_t step = 0; step < plan.num_steps(); ++step) {
    for (uint32_t r = 0; r < plan.world(); ++r) plan.RankBatch(step, r, &out[step][r]);
  }
  return out;
}

// Checks an epoch against the plan's own quotas: every full batch gives plan
// stratum i base_i or base_i + 1 samples with the cumulative count within 1 of
// k * q_i; the short last batch gives the floor or ceiling of q_i * L / G;
// ranks get the floor or ceiling of their share; strata that cycle deliver
// every member floor(T / c) or ceil(T / c) times.
void CheckQuotaEpoch(const Dataset& d, const EpochPlan& plan, const RankBatches& run) {
  const QuotaPlan& q = dynamic_cast<const StratifiedSampler&>(plan.sampler()).quotas();
  const uint32_t world = plan.world();
  std::map<uint32_t, size_t> plan_index;
  for (size_t i = 0; i < q.strata.size(); ++i) plan_index[q.strata[i].stratum] = i;
  std::vector<uint64_t> cumulative(q.strata.size(), 0);
  std::vector<uint64_t> times(d.n(), 0);
  const u128 den = q.denom, g = q.global_batch;
  for (uint64_t step = 0; step < run.size(); ++step) {
    std::vector<uint64_t> count(q.strata.size(), 0);
    std::vector<std::vector<uint64_t>> rank_count(world, std::vector<uint64_t>(q.strata.size(), 0));
    uint64_t total = 0;
    for (uint32_t r = 0; r < world; ++r) {
      for (uint64_t id : run[step][r]) {
        auto it = plan_index.find(d.stratum_of[id]);
        ASSERT_NE(it, plan_index.end()) << "a sample of a stratum without a quota at step " << step;
        ++count[it->second];
        ++rank_count[r][it->second];
        ++times[id];
        ++total;
      }
    }
    ASSERT_EQ(total, plan.sampler().batch_size(step));
    for (size_t i = 0; i < q.strata.size(); ++i) {
      const StratumQuota& s = q.strata[i];
      if (step < q.full_steps) {
        ASSERT_GE(count[i], s.base) << "stratum " << s.stratum << " step " << step;
        ASSERT_LE(count[i], s.base + (s.rate != 0 ? 1 : 0)) << "stratum " << s.stratum << " step " << step;
        cumulative[i] += count[i];
        const i128 lag = static_cast<i128>(u128{cumulative[i]} * den) -
                         static_cast<i128>(u128{step + 1} * (u128{s.base} * den + s.rate));
        ASSERT_LT(lag, static_cast<i128>(den)) << "stratum " << s.stratum << " ahead at step " << step;
        ASSERT_GT(lag, -static_cast<i128>(den)) << "stratum " << s.stratum << " behind at step " << step;
      } else if (q.exhaustive) {
        // The other strata's remainders are checked by "exactly once" below.
        if (s.boosted) {
          ASSERT_EQ(count[i], s.base) << "a boosted stratum keeps its minimum in the last batch";
        }
      } else {
        const u128 num = (u128{s.base} * den + s.rate) * q.last_batch;
        ASSERT_GE(count[i], static_cast<uint64_t>(num / (g * den))) << "last batch, stratum " << s.stratum;
        ASSERT_LE(count[i], static_cast<uint64_t>((num + g * den - 1) / (g * den)))
            << "last batch, stratum " << s.stratum;
      }
      for (uint32_t r = 0; r < world; ++r) {
        ASSERT_GE(rank_count[r][i], count[i] / world);
        ASSERT_LE(rank_count[r][i], (count[i] + world - 1) / world);
      }
    }
  }
  // Cycling strata: every member equally often, within one.
  std::vector<uint64_t> draws(d.counts.size(), 0);
  for (uint64_t id = 0; id < d.n(); ++id) draws[d.stratum_of[id]] += times[id];
  for (uint64_t id = 0; id < d.n(); ++id) {
    const uint32_t s = d.stratum_of[id];
    auto it = plan_index.find(s);
    if (it == plan_index.end()) {
      ASSERT_EQ(times[id], 0u);
      continue;
    }
    if (q.strata[it->second].cycle) {
      ASSERT_GE(times[id], draws[s] / d.counts[s]) << "sample " << id;
      ASSERT_LE(times[id], (draws[s] + d.counts[s] - 1) / d.counts[s]) << "sample " << id;
    } else {
      ASSERT_EQ(times[id], 1u) << "sample " << id << " of an exhausted stratum";
    }
  }
}

TEST(WeightedSamplerTest, EqualWeightsOnTwoSources) {
  const Dataset d = TwoSources();
  v1::SamplerSpec spec = Weighted();
  (*spec.mutable_weights())["s00000"] = 1;
  (*spec.mutable_weights())["s00001"] = 1;
  for (uint32_t world : {1u, 2u, 4u}) {
    EpochPlan plan = MakePlan(d, spec, 100 / world, world);
    EXPECT_EQ(plan.num_steps(), 500u) << "an epoch is the dataset's size by default";
    const RankBatches run = RunEpoch(plan);
    CheckQuotaEpoch(d, plan, run);
    for (const auto& step : run) {
      uint64_t rare = 0;
      for (const auto& rank : step) {
        for (uint64_t id : rank) rare += d.stratum_of[id];
      }
      ASSERT_EQ(rare, 50u);
    }
  }
}

TEST(WeightedSamplerTest, PowerOnZipfSameGlobalBatchesForWorlds1248) {
  const Dataset d = Zipf1000();
  v1::SamplerSpec spec = Weighted();
  spec.set_weight_power(0.5);
  RankBatches reference;
  for (uint32_t world : {1u, 2u, 4u, 8u}) {
    EpochPlan plan = MakePlan(d, spec, 256 / world, world);
    const RankBatches run = RunEpoch(plan);
    CheckQuotaEpoch(d, plan, run);
    if (HasFatalFailure()) return;
    if (world == 1) {
      reference = run;
      // Shares follow sqrt(count), to the 2^-32 quantisation.
      double norm = 0;
      for (uint64_t c : d.counts) norm += std::sqrt(static_cast<double>(c));
      const std::vector<double> shares = plan.sampler().TargetShares();
      for (size_t s = 0; s < d.counts.size(); ++s) {
        ASSERT_NEAR(shares[s], std::sqrt(static_cast<double>(d.counts[s])) / norm, 1e-8) << s;
      }
      continue;
    }
    for (uint64_t step = 0; step < run.size(); ++step) {
      std::vector<uint64_t> a, b;
      for (const auto& r : run[step]) a.insert(a.end(), r.begin(), r.end());
      for (const auto& r : reference[step]) b.insert(b.end(), r.begin(), r.end());
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      ASSERT_EQ(a, b) << "world " << world << " step " << step;
    }
  }
}

TEST(WeightedSamplerTest, EpochSamplesSetsTheLengthAndTheShortLastBatch) {
  const Dataset d = RareClass();
  v1::SamplerSpec spec = Weighted();
  spec.set_epoch_samples(12345);
  EpochPlan plan = MakePlan(d, spec, 64, 4);
  EXPECT_EQ(plan.num_steps(), 49u);
  EXPECT_EQ(plan.sampler().batch_size(48), 12345u - 48 * 256);
  CheckQuotaEpoch(d, plan, RunEpoch(plan));
  EpochPlan drop = MakePlan(d, spec, 64, 4, v1::REMAINDER_DROP);
  EXPECT_EQ(drop.num_steps(), 48u);
  CheckQuotaEpoch(d, drop, RunEpoch(drop));
}

// An epoch the remainder empties names what is too small: here the
// sampler's epoch, not the dataset, which holds more than a global batch.
TEST(WeightedSamplerTest, AnEmptyEpochNamesItsEpochSamples) {
  const Dataset d = RareClass();
  ASSERT_GT(d.shape.num_samples, 4u);
  v1::SamplerSpec spec = Weighted();
  spec.set_epoch_samples(3);
  auto plan = EpochPlan::Create(d.shape, spec, 3, 1, 2, 2, v1::REMAINDER_DROP);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kInvalidArgument);
  EXPECT_NE(
      plan.status().message().find("the weighted sampler's epoch has 3 samples, fewer than one global batch of 4"),
      std::string::npos)
      << plan.status().message();
}

// Weights whose sum overflows a double give the shares they name: 1e308 and
// 1e308 are 1 and 1 (they were refused as giving no stratum a share).
TEST(WeightedSamplerTest, HugeWeightsGiveTheirShares) {
  const Dataset d = TwoSources();
  v1::SamplerSpec huge = Weighted(), plain = Weighted();
  for (const auto& s : d.shape.strata) {
    (*huge.mutable_weights())[s.key()] = 1e308;
    (*plain.mutable_weights())[s.key()] = 1;
  }
  EXPECT_EQ(RunEpoch(MakePlan(d, huge, 16, 2)), RunEpoch(MakePlan(d, plain, 16, 2)));
}

TEST(WeightedSamplerTest, UnnamedStrataAreLeftOut) {
  const Dataset d = RareClass();
  v1::SamplerSpec spec = Weighted();
  (*spec.mutable_weights())["s00002"] = 0.25;  // the rare class
  (*spec.mutable_weights())["s00000"] = 0.75;
  EpochPlan plan = MakePlan(d, spec, 10, 4);
  CheckQuotaEpoch(d, plan, RunEpoch(plan));
  const auto shares = plan.sampler().TargetShares();
  EXPECT_DOUBLE_EQ(shares[2], 0.25);
  EXPECT_EQ(shares[1], 0.0);
}

TEST(MinPerBatchTest, StratifiedBoostsTheRareClassAndKeepsTheRestExactlyOnce) {
  const Dataset d = RareClass();
  v1::SamplerSpec spec;
  spec.set_kind(v1::SamplerSpec::STRATIFIED);
  (*spec.mutable_min_per_batch())["s00002"] = 2;  // 0.05% of 256 is 0.128 per batch
  (*spec.mutable_min_per_batch())["s00000"] = 3;  // already far above: not boosted
  for (uint32_t world : {1u, 4u, 8u}) {
    EpochPlan plan = MakePlan(d, spec, 256 / world, world);
    const QuotaPlan& q = dynamic_cast<const StratifiedSampler&>(plan.sampler()).quotas();
    EXPECT_EQ(plan.num_steps(), (99950u + 253) / 254) << "the epoch ends when the other strata are exhausted";
    const RankBatches run = RunEpoch(plan);
    CheckQuotaEpoch(d, plan, run);
    for (const auto& step : run) {
      uint64_t rare = 0;
      for (const auto& rank : step) {
        for (uint64_t id : rank) rare += d.stratum_of[id] == 2;
      }
      ASSERT_EQ(rare, 2u) << "every global batch, the short last one too";
    }
    for (const StratumQuota& s : q.strata) EXPECT_EQ(s.boosted, s.stratum == 2);
  }
}

TEST(MinPerBatchTest, WeightedWithAMinimum) {
  const Dataset d = Zipf1000();
  v1::SamplerSpec spec = Weighted();
  spec.set_weight_power(1.0);
  spec.set_epoch_samples(50000);
  (*spec.mutable_min_per_batch())["s00999"] = 1;
  (*spec.mutable_min_per_batch())["s00500"] = 2;
  EpochPlan plan = MakePlan(d, spec, 32, 8);
  CheckQuotaEpoch(d, plan, RunEpoch(plan));
}

TEST(WeightedSamplerTest, RefusesBadWeights) {
  const Dataset d = TwoSources();
  auto create = [&](const v1::SamplerSpec& spec) {
    return EpochPlan::Create(d.shape, spec, 1, 0, 10, 1, v1::REMAINDER_SHORT).status().code();
  };
  v1::SamplerSpec unknown = Weighted();
  (*unknown.mutable_weights())["dog"] = 1;
  EXPECT_EQ(create(unknown), Code::kInvalidArgument);
  v1::SamplerSpec negative = Weighted();
  (*negative.mutable_weights())["s00000"] = -1;
  EXPECT_EQ(create(negative), Code::kInvalidArgument);
  v1::SamplerSpec nan = Weighted();
  (*nan.mutable_weights())["s00000"] = std::nan("");
  EXPECT_EQ(create(nan), Code::kInvalidArgument);
  v1::SamplerSpec zero = Weighted();
  (*zero.mutable_weights())["s00000"] = 0;
  EXPECT_EQ(create(zero), Code::kInvalidArgument);
  v1::SamplerSpec both = Weighted();
  (*both.mutable_weights())["s00000"] = 1;
  both.set_weight_power(0.5);
  EXPECT_EQ(create(both), Code::kInvalidArgument);
  v1::SamplerSpec power = Weighted();
  power.set_weight_power(100);
  EXPECT_EQ(create(power), Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata
