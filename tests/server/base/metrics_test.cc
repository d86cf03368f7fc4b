// The operator metrics of server/base/metrics.h, read back through the registry
// as Prometheus would collect them.
#include "server/base/metrics.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <regex>
#include <set>

#include "tests/support/temp_dir.h"

namespace strata {
namespace {

std::string Exposition(const Metrics& m) { return prometheus::TextSerializer().Serialize(m.registry()->Collect()); }

TEST(MetricsTest, LatencyBucketsAreOneTwoPointFiveFiveTimesAPowerOfTen) {
  const auto buckets = Metrics::LatencyBuckets();
  ASSERT_EQ(buckets.size(), 19u);
  EXPECT_EQ(buckets.front(), 1e-5);
  EXPECT_EQ(buckets.back(), 10.0);
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(buckets[i - 1], buckets[i]);
    }
    const double decade = std::pow(10.0, std::floor(std::log10(buckets[i]) + 1e-9));
    const double mantissa = buckets[i] / decade;
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2.5) < 1e-9 || std::abs(mantissa - 5) < 1e-9)
        << buckets[i];
  }
  // As exposed: le="2.5e-05", not a long decimal expansion.
  Metrics m("node-1");
  const std::string text = Exposition(m);
  std::set<std::string> les;
  const std::regex le(R"(strata_read_seconds_bucket\{[^}]*le="([^"]+)\")");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), le); it != std::sregex_iterator(); ++it) {
    les.insert((*it)[1]);
  }
  EXPECT_EQ(les, (std::set<std::string>{"1e-05",  "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001",
                                        "0.0025", "0.005",   "0.01",  "0.025",  "0.05",    "0.1",    "0.25",
                                        "0.5",    "1",       "2.5",   "5",      "10",      "+Inf"}));
}

TEST(MetricsTest, ReadLatencyBySource) {
  Metrics m("node-1");
  m.local_read_seconds.Observe(0.0003);
  m.peer_fetch_seconds.Observe(0.02);
  m.peer_fetch_seconds.Observe(0.03);
  const std::string text = Exposition(m);
  EXPECT_NE(text.find(R"(strata_read_seconds_count{node="node-1",source="local"} 1)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(strata_read_seconds_count{node="node-1",source="peer"} 2)"), std::string::npos);
  EXPECT_NE(text.find(R"(strata_read_seconds_bucket{node="node-1",source="peer",le="0.025"} 1)"), std::string::npos);
}

TEST(MetricsTest, RejectedByReason) {
  Metrics m("node-1");
  m.CountRejected(Metrics::Reject::kTooManyStreams);
  m.CountRejected(Metrics::Reject::kTooManyStreams);
  m.CountRejected(Metrics::Reject::kDraining);
  EXPECT_EQ(m.rejected(Metrics::Reject::kTooManyStreams), 2);
  EXPECT_EQ(m.rejected(Metrics::Reject::kDraining), 1);
  EXPECT_EQ(m.rejected(Metrics::Reject::kInvalidRequest), 0);
  const std::string text = Exposition(m);
  EXPECT_NE(text.find(R"(strata_requests_rejected_total{node="node-1",reason="too_many_streams"} 2)"),
            std::string::npos);
  // Every reason is exported from the start, so a rate over it has a series.
  EXPECT_NE(text.find(R"(reason="ingest_refused"} 0)"), std::string::npos);
}

TEST(MetricsTest, PeerUpFollowsTheMap) {
  Metrics m("node-1");
  m.SetPeersUp({{"node-2", true}, {"node-3", false}});
  std::string text = Exposition(m);
  EXPECT_NE(text.find(R"(strata_peer_up{node="node-1",peer="node-2"} 1)"), std::string::npos);
  EXPECT_NE(text.find(R"(strata_peer_up{node="node-1",peer="node-3"} 0)"), std::string::npos);
  // node-3 left the map; node-2 went down.
  m.SetPeersUp({{"node-2", false}});
  text = Exposition(m);
  EXPECT_NE(text.find(R"(strata_peer_up{node="node-1",peer="node-2"} 0)"), std::string::npos);
  EXPECT_EQ(text.find(R"(peer="node-3")"), std::string::npos);
}

TEST(MetricsTest, BuildInfoAndShardGauges) {
  Metrics m("node-1");
  m.shards_under_replicated.Set(7);
  m.shards_missing.Set(1);
  const std::string text = Exposition(m);
  EXPECT_NE(text.find(std::string(R"(strata_build_info{node="node-1",version=")") + STRATA_VERSION + "\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find(R"(strata_shards_under_replicated{node="node-1"} 7)"), std::string::npos);
  EXPECT_NE(text.find(R"(strata_shards_missing{node="node-1"} 1)"), std::string::npos);
}

// Served counters by dataset: one series per name (versions folded in) up
// to the limit, then "other"; a name that already has a series keeps it.
TEST(MetricsTest, ServedByDatasetHasBoundedCardinality) {
  Metrics m("node-1");
  m.datasets().SetLimit(2);
  auto a = m.datasets().For("alpha@3");
  a.bytes->Increment(100);
  a.samples->Increment(2);
  m.datasets().For("alpha").bytes->Increment(1);
  m.datasets().For("beta").samples->Increment(5);
  for (int i = 0; i < 50; ++i) m.datasets().For("user" + std::to_string(i)).samples->Increment(1);
  m.datasets().For("other").samples->Increment(1);  // a dataset named "other" counts there too
  m.datasets().For("alpha@9").samples->Increment(1);
  const std::string text = Exposition(m);
  EXPECT_NE(text.find(R"(strata_served_bytes_by_dataset_total{dataset="alpha",node="node-1"} 101)"), std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(strata_served_samples_by_dataset_total{dataset="alpha",node="node-1"} 3)"), std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(strata_served_samples_by_dataset_total{dataset="beta",node="node-1"} 5)"), std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(strata_served_samples_by_dataset_total{dataset="other",node="node-1"} 51)"), std::string::npos)
      << text;
  const std::regex series(R"(strata_served_samples_by_dataset_total\{)");
  EXPECT_EQ(std::distance(std::sregex_iterator(text.begin(), text.end(), series), std::sregex_iterator()), 3) << text;
}

}  // namespace
}  // namespace strata
