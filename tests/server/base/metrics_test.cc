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

std::string Exposition(const Metrics& m) {
  return prometheus::TextSerializer().Serialize(m.registry()->Collect());
}

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
  EXPECT_EQ(les, (std::set<std::string>{"1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001",
                                        "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5",
                                        "5", "10", "+Inf"}));
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

// The disk gauges are computed at scrape time and reach /metrics through the
// exposer; served here on a free port and read back with a plain socket.
TEST(MetricsTest, DiskFreeAndTotalOfTheDataDir) {
  testing::TempDir dir;
  Metrics m("node-1");
  m.WatchDisk(dir.path());
  ASSERT_TRUE(m.StartExposer("127.0.0.1:0").ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(m.exposer_port()) + "/metrics";
  FILE* curl = popen(("/usr/bin/curl -sf " + url).c_str(), "r");
  ASSERT_NE(curl, nullptr);
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, curl)) > 0;) text.append(buf, n);
  ASSERT_EQ(pclose(curl), 0);
  std::smatch free_m, total_m;
  ASSERT_TRUE(std::regex_search(text, free_m, std::regex(R"(strata_disk_free_bytes\{node="node-1"\} (\S+))")))
      << text;
  ASSERT_TRUE(std::regex_search(text, total_m, std::regex(R"(strata_disk_total_bytes\{node="node-1"\} (\S+))")));
  const double free_bytes = std::stod(free_m[1]), total_bytes = std::stod(total_m[1]);
  EXPECT_GT(total_bytes, 0);
  EXPECT_LE(free_bytes, total_bytes);
}

}  // namespace
}  // namespace strata
