#include "server/serve/composition_recorder.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace strata {
namespace {

// What the registry holds for a metric family: label "stratum" (or "") -> value.
std::map<std::string, double> Collected(prometheus::Registry& registry, const std::string& family) {
  std::map<std::string, double> out;
  for (const auto& f : registry.Collect()) {
    if (f.name != family) continue;
    for (const auto& m : f.metric) {
      std::string stratum;
      for (const auto& l : m.label) {
        if (l.name == "stratum") stratum = l.value;
      }
      switch (f.type) {
        case prometheus::MetricType::Counter: out[stratum] = m.counter.value; break;
        case prometheus::MetricType::Gauge: out[stratum] = m.gauge.value; break;
        case prometheus::MetricType::Histogram: out[stratum] = static_cast<double>(m.histogram.sample_count); break;
        default: break;
      }
    }
  }
  return out;
}

// One part whose samples carry these strata.
std::vector<WirePart> Parts(const std::vector<std::string>& strata) {
  std::vector<WirePart> parts(1);
  for (const std::string& s : strata) parts[0].message().add_strata(s);
  return parts;
}

// The same, named once per part as for a client that asked for indexed labels.
std::vector<WirePart> IndexedParts(const std::vector<std::string>& strata) {
  std::vector<WirePart> parts(1);
  v1::Batch& m = parts[0].message();
  for (const std::string& s : strata) {
    auto it = std::find(m.stratum_names().begin(), m.stratum_names().end(), s);
    m.add_stratum_index(static_cast<uint32_t>(it - m.stratum_names().begin()));
    if (it == m.stratum_names().end()) m.add_stratum_names(s);
  }
  return parts;
}

DatasetShape Shape(const std::map<std::string, uint64_t>& counts) {
  DatasetShape shape;
  for (const auto& [key, n] : counts) {
    v1::StratumCount c;
    c.set_key(key);
    c.set_count(n);
    shape.strata.push_back(c);
    shape.num_samples += n;
  }
  return shape;
}

TEST(StratumMetricsTest, CountsEachBatchsStrataAndItsDeviationFromTheShares) {
  prometheus::Registry registry;
  StratumMetrics metrics(registry, "node-1");
  CompositionRecorder recorder(Shape({{"cat", 3}, {"dog", 1}}), {0.75, 0.25}, &metrics);

  recorder.Record(Parts({"cat", "cat", "cat", "dog"}), 4);  // exactly the shares: deviation 0
  recorder.Record(Parts({"cat", "cat", "cat", "cat"}), 4);  // no dog: off by its whole target, 1
  auto served = Collected(registry, "strata_served_samples_by_stratum_total");
  EXPECT_EQ(served["cat"], 7.0);
  EXPECT_EQ(served["dog"], 1.0);
  EXPECT_EQ(Collected(registry, "strata_batch_composition_deviation")[""], 2.0);  // two batches observed
  EXPECT_EQ(Collected(registry, "strata_batch_composition_deviation_recent")[""], 1.0);

  // Part of a batch (another node served the rest): counted, not observed.
  recorder.Record(Parts({"dog"}), 4);
  served = Collected(registry, "strata_served_samples_by_stratum_total");
  EXPECT_EQ(served["dog"], 2.0);
  EXPECT_EQ(Collected(registry, "strata_batch_composition_deviation")[""], 2.0);
}

TEST(StratumMetricsTest, StrataNamedOncePerPartCountAsStrings) {
  prometheus::Registry registry;
  StratumMetrics metrics(registry, "node-1");
  CompositionRecorder recorder(Shape({{"cat", 3}, {"dog", 1}}), {0.75, 0.25}, &metrics);
  recorder.Record(IndexedParts({"cat", "dog", "cat", "cat"}), 4);  // exactly the shares
  recorder.Record(IndexedParts({"dog", "dog", "dog", "cat"}), 4);  // off by 2
  const auto served = Collected(registry, "strata_served_samples_by_stratum_total");
  EXPECT_EQ(served.at("cat"), 4.0);
  EXPECT_EQ(served.at("dog"), 4.0);
  EXPECT_EQ(Collected(registry, "strata_batch_composition_deviation")[""], 2.0);
  EXPECT_EQ(Collected(registry, "strata_batch_composition_deviation_recent")[""], 2.0);
}

TEST(StratumMetricsTest, KeysPastTheCapAreCountedAsOther) {
  prometheus::Registry registry;
  StratumMetrics metrics(registry, "node-1");
  for (size_t i = 0; i < StratumMetrics::kMaxStrata + 3; ++i) metrics.AddServed("s" + std::to_string(i), 2);
  metrics.AddServed("s0", 5);  // a known key keeps its own series
  const auto served = Collected(registry, "strata_served_samples_by_stratum_total");
  EXPECT_EQ(served.size(), StratumMetrics::kMaxStrata + 1);
  EXPECT_EQ(served.at("s0"), 7.0);
  EXPECT_EQ(served.at("other"), 6.0);  // three keys past the cap, 2 each
  EXPECT_EQ(served.count("s" + std::to_string(StratumMetrics::kMaxStrata)), 0u);
}

}  // namespace
}  // namespace strata
