#include "client/cli/balance_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "client/cli/stream_options.h"

namespace strata::cli {
namespace {

using ::testing::HasSubstr;

TEST(DistributedSamplerTest, PadsShardsAndBatchesAsTorchDoes) {
  // n = 10, 4 ranks: 3 samples each (2 padded from the permutation's head),
  // DataLoader batches of 2: global batches of 8 and 4.
  const auto batches = DistributedSamplerBatches(10, 4, 2, 7, 0, false);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].size(), 8u);
  EXPECT_EQ(batches[1].size(), 4u);
  std::map<uint64_t, int> seen;
  for (const auto& b : batches) {
    for (uint64_t id : b) ++seen[id];
  }
  EXPECT_EQ(seen.size(), 10u) << "every sample once";
  int twice = 0;
  for (const auto& [id, n] : seen) twice += n == 2;
  EXPECT_EQ(twice, 2) << "and two padding duplicates";
  EXPECT_EQ(DistributedSamplerBatches(10, 4, 2, 7, 0, true).size(), 1u) << "drop_last drops the short batch";
  EXPECT_EQ(DistributedSamplerBatches(10, 4, 2, 7, 0, false), batches) << "seeded";
  EXPECT_NE(DistributedSamplerBatches(10, 4, 2, 7, 1, false), batches) << "seed + epoch";
}

TEST(DistributedSamplerTest, IsAUniformShuffle) {
  // Over many seeds, sample 0 lands in each of 10 global batches about equally often.
  std::vector<int> where(10, 0);
  for (uint64_t seed = 0; seed < 5000; ++seed) {
    const auto batches = DistributedSamplerBatches(100, 2, 5, seed, 0, false);
    for (size_t k = 0; k < batches.size(); ++k) {
      if (std::count(batches[k].begin(), batches[k].end(), 0u)) ++where[k];
    }
  }
  for (int n : where) EXPECT_NEAR(n, 500, 100);
}

TEST(BalanceReportTest, MeasuresDeviationAndMissingStrata) {
  // Two strata at 75% / 25%, batches of 4: targets 3 and 1.
  const Compositions batches = {{0, 0, 0, 1}, {0, 0, 0, 0}, {0, 1, 1, 1}};
  const SamplerFigures f = Measure(batches, {0.75, 0.25});
  EXPECT_EQ(f.batches, 3u);
  EXPECT_EQ(f.samples, 12u);
  EXPECT_EQ(f.delivered, (std::vector<uint64_t>{8, 4}));
  EXPECT_DOUBLE_EQ(f.max_deviation[0], 2.0);
  EXPECT_DOUBLE_EQ(f.max_deviation[1], 2.0);
  EXPECT_EQ(f.missing, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(f.batches_missing, 1u);
  EXPECT_DOUBLE_EQ(f.max_deviation_all, 2.0);
}

TEST(BalanceReportTest, FillUnseenKeepsTheCounts) {
  const std::vector<uint32_t> of = FillUnseen({1, -1, -1, 0, -1}, {2, 3});
  EXPECT_EQ(of, (std::vector<uint32_t>{1, 0, 1, 0, 1}));
}

TEST(BalanceReportTest, PrintsBothColumns) {
  std::vector<uint32_t> of(100);
  for (size_t i = 0; i < of.size(); ++i) of[i] = i % 10 == 0 ? 1 : 0;
  Compositions ours;
  for (int k = 0; k < 10; ++k) ours.push_back({0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
  const BalanceReport r = MakeReport("test", {"common", "rare"}, {90, 10}, {0.9, 0.1}, ours, of, 2, 5, 1, 0, false);
  EXPECT_EQ(r.ours_figures.batches_missing, 0u);
  EXPECT_DOUBLE_EQ(r.ours_figures.max_deviation_all, 0.0);
  EXPECT_EQ(r.distributed_figures.batches, 10u);
  std::ostringstream out;
  PrintReport(out, r);
  for (const char* want : {"STRATUM", "DS DEV", "DS MISSING", "rare", "largest per-batch deviation",
                           "batches lacking a stratum", "DistributedSampler"}) {
    EXPECT_NE(out.str().find(want), std::string::npos) << want << "\n" << out.str();
  }
}

TEST(StreamOptionsTest, BuildsSamplerSpecs) {
  EXPECT_EQ(SplitAssignment("label=cat|source=web=0.5")->first, "label=cat|source=web");
  EXPECT_EQ(SplitAssignment("label=cat|source=web=0.5")->second, "0.5");
  EXPECT_FALSE(SplitAssignment("cat").ok());
  EXPECT_FALSE(SplitAssignment("cat=").ok());

  SamplerArgs a;
  a.sampler = "weighted";
  a.weights = {"cat=0.5", "dog=1.5"};
  a.min_per_batch = {"rare=2"};
  auto spec = BuildSamplerSpec(a);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->kind, SamplerSpec::Kind::kWeighted);
  EXPECT_EQ(spec->weights.at("dog"), 1.5);
  EXPECT_EQ(spec->min_per_batch.at("rare"), 2u);

  SamplerArgs bad = a;
  bad.weight_power = 0.5;
  EXPECT_FALSE(BuildSamplerSpec(bad).ok()) << "weights and a power";
  bad = SamplerArgs();
  bad.weights = {"cat=1"};
  EXPECT_FALSE(BuildSamplerSpec(bad).ok()) << "weights need the weighted sampler";
  bad = SamplerArgs();
  bad.min_per_batch = {"cat=1"};
  EXPECT_FALSE(BuildSamplerSpec(bad).ok()) << "min-per-batch needs a stratified sampler";
  bad = SamplerArgs();
  bad.sampler = "stratified";
  bad.min_per_batch = {"cat=0"};
  EXPECT_FALSE(BuildSamplerSpec(bad).ok());
  bad.min_per_batch = {"cat=x"};
  EXPECT_FALSE(BuildSamplerSpec(bad).ok());
  bad = SamplerArgs();
  bad.sampler = "random";
  EXPECT_FALSE(BuildSamplerSpec(bad).ok());
}

// A weight is a finite number; one too large for a double says so, rather
// than that it is no number.
TEST(StreamOptionsTest, SaysWhatIsWrongWithAWeight) {
  SamplerArgs a;
  a.sampler = "weighted";
  const auto message = [&](const std::string& weight) {
    a.weights = {"cat=" + weight};
    return BuildSamplerSpec(a).status().message();
  };
  EXPECT_THAT(message("1e400"), HasSubstr("'1e400' is out of range"));
  EXPECT_THAT(message("inf"), HasSubstr("'inf' is not a finite number"));
  EXPECT_THAT(message("nan"), HasSubstr("'nan' is not a finite number"));
  EXPECT_THAT(message("1.5x"), HasSubstr("'1.5x' is not a number"));
  EXPECT_THAT(message("1e400x"), HasSubstr("'1e400x' is not a number"));
  a.weights = {"cat=1e300"};
  EXPECT_TRUE(BuildSamplerSpec(a).ok());
}

}  // namespace
}  // namespace strata::cli
