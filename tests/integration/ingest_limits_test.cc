// A real stratad's bounds on ingest calls: at most max_ingests at once (more
// are refused with RESOURCE_EXHAUSTED), and an ingest whose client sends
// nothing for ingest_idle_timeout_s is aborted, with nothing kept, while one
// whose client keeps writing, however slowly, commits.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

IngestOptions Options(const std::string& dataset) {
  IngestOptions o;
  o.dataset = dataset;
  return o;
}

TEST(IngestLimitsTest, ANodeTakesAtMostMaxIngestsAtOnce) {
  TempDir dir;
  StratadProcess::Options o;
  o.data_dir = dir.Join("data");
  o.extra_args = {"--max-ingests", "2"};
  auto server = StratadProcess::Start(o);
  ASSERT_NE(server, nullptr);
  auto client = Client::Connect(server->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto a = client.value()->StartIngest(Options("a"));
  auto b = client.value()->StartIngest(Options("b"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto c = client.value()->StartIngest(Options("c"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kResourceExhausted) << c.status().ToString();
  EXPECT_NE(c.status().message().find("at most 2 ingests at once (max_ingests)"), std::string::npos)
      << c.status().ToString();
  // The two open ones are unaffected, and once one ends a new one is taken.
  ASSERT_TRUE(a.value()->Write(SyntheticSample(0)).ok());
  auto sealed = a.value()->Commit();
  ASSERT_TRUE(sealed.ok()) << sealed.status().ToString();
  // The call ends on the server just after the client has its reply: a new
  // one is taken once the node counts one open ingest.
  ASSERT_TRUE(Eventually([&] { return Metric(server->metrics_address(), "strata_active_ingests") == 1; },
                         std::chrono::seconds(10)));
  auto d = client.value()->StartIngest(Options("d"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  d.value()->Abort();
  b.value()->Abort();
  CommandResult scrape = RunCommand({"/usr/bin/curl", "-sf", "http://" + server->metrics_address() + "/metrics"});
  EXPECT_NE(scrape.out.find("strata_requests_rejected_total{node=\"node-1\",reason=\"too_many_ingests\"} 1"),
            std::string::npos)
      << scrape.out;
}

TEST(IngestLimitsTest, AnIngestWhoseClientGoesQuietIsAbortedAndASlowOneIsNot) {
  TempDir dir;
  StratadProcess::Options o;
  o.data_dir = dir.Join("data");
  o.extra_args = {"--ingest-idle-timeout-s", "10"};  // swept every second
  auto server = StratadProcess::Start(o);
  ASSERT_NE(server, nullptr);
  auto client = Client::Connect(server->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  // Both at once. Quiet: one sample, then nothing for 14 s. Slow: a sample
  // every 0.5 s for 12 s, longer than the timeout; the writer sends a
  // message once its first sample has waited 5 s, so the server hears from
  // it every 5-6 s.
  auto quiet = client.value()->StartIngest(Options("quiet"));
  auto slow = client.value()->StartIngest(Options("slow"));
  ASSERT_TRUE(quiet.ok()) << quiet.status().ToString();
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  ASSERT_TRUE(quiet.value()->Write(SyntheticSample(0)).ok());
  Result<IngestSummary> slow_sealed = Status::Internal("not run");
  std::thread slow_writer([&] {
    for (uint64_t i = 0; i < 24; ++i) {
      if (!slow.value()->Write(SyntheticSample(i)).ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    slow_sealed = slow.value()->Commit();
  });
  std::this_thread::sleep_for(std::chrono::seconds(14));
  auto quiet_ended = quiet.value()->Commit();
  slow_writer.join();

  ASSERT_FALSE(quiet_ended.ok()) << "an ingest idle past the timeout committed";
  EXPECT_EQ(quiet_ended.status().code(), Code::kDeadlineExceeded) << quiet_ended.status().ToString();
  EXPECT_NE(quiet_ended.status().message().find("sent nothing for 10 s (ingest_idle_timeout_s)"), std::string::npos)
      << quiet_ended.status().ToString();
  EXPECT_NE(server->Log().find("aborted: the client sent nothing for 10 s (ingest_idle_timeout_s)"), std::string::npos)
      << server->Log();
  EXPECT_FALSE(client.value()->Describe("quiet").ok()) << "nothing of the aborted ingest is kept";
  ASSERT_TRUE(slow_sealed.ok()) << slow_sealed.status().ToString();
  EXPECT_EQ(slow_sealed->dataset.samples, 24u);
  EXPECT_EQ(Metric(server->metrics_address(), "strata_active_ingests"), 0);
  CommandResult scrape = RunCommand({"/usr/bin/curl", "-sf", "http://" + server->metrics_address() + "/metrics"});
  EXPECT_NE(scrape.out.find("strata_requests_rejected_total{node=\"node-1\",reason=\"ingest_idle\"} 1"),
            std::string::npos)
      << scrape.out;
}

}  // namespace
}  // namespace strata::testing
