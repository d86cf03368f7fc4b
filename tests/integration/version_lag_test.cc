// A node that does not know a version yet: it was unreachable (stopped) when
// the version was sealed and is back before anti-entropy reached it (a long
// repair interval here). It answers a stream on that dataset NotFound at once, before the
// other nodes have planned; the stream must not end there: the nodes that know
// the version serve, the behind node's share fails over, every sample exactly
// once, whether the stream names the version or not and whoever plans. A
// dataset or a version that no node knows still ends the stream with NotFound.
// Where the node knows the version before, not none, the stream reads the
// latest all the same.
#include <gtest/gtest.h>

#include <map>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kSamples = 900;

TEST(VersionLagTest, ANodeBehindOnVersionsDoesNotEndTheStream) {
  LocalCluster::Options options;
  options.repair_interval_ms = 3'600'000;  // no periodic anti-entropy round during the test
  LocalCluster cluster(options);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  auto client = cluster.Connect(0, 30000);
  ASSERT_NE(client, nullptr);
  SyntheticIngest how;
  how.replication = 2;
  how.shard_target_bytes = 8 << 10;  // many shards: node-3 is a holder of some
  // "older": a version on every node, and a later one (below) on all but node-3.
  auto oldest = TryIngestSynthetic(*client, "older", kSamples / 3, how);
  ASSERT_TRUE(oldest.ok()) << oldest.status().ToString();

  // node-3 misses a version of "fresh" and the latest of "older": it is
  // stopped (SIGSTOP) while they are sealed, so no broadcast reaches it.
  // Once back, it catches up at once (a node whose map changes runs an
  // anti-entropy round: Repairer::Kick), so it is asked straight after
  // SIGCONT, on a connection made before; where it has caught up already (a
  // loaded machine), the versions are ingested again under a new name.
  auto behind = Client::Connect(cluster.Address(2));
  ASSERT_TRUE(behind.ok());
  ASSERT_TRUE(behind.value()->Describe("older").ok());
  std::string fresh;
  Result<IngestSummary> summary = Status::Internal("not ingested");
  Result<IngestSummary> older = Status::Internal("not ingested");
  for (int attempt = 0; attempt < 4 && fresh.empty(); ++attempt) {
    cluster.Pause(2);  // its own timers stand still; the others see it down
    ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 2; }, 20s));
    const std::string name = "fresh" + std::to_string(attempt);
    summary = TryIngestSynthetic(*client, name, kSamples, how);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    older = TryIngestSynthetic(*client, "older", kSamples, how);
    ASSERT_TRUE(older.ok()) << older.status().ToString();
    ASSERT_GT(older->dataset.version, oldest->dataset.version);
    cluster.Resume(2);
    const auto knows_fresh = behind.value()->Describe(name);
    const auto knows_older = behind.value()->Describe("older");
    ASSERT_TRUE(knows_older.ok()) << knows_older.status().ToString();
    if (knows_fresh.status().code() == Code::kNotFound && knows_older->dataset.version < older->dataset.version) {
      fresh = name;
    } else {
      std::cerr << "node-3 caught up before it was asked (attempt " << attempt << "); again\n";
    }
    ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  }
  ASSERT_FALSE(fresh.empty()) << "node-3 must not know the version for this test to mean anything";

  // Several streams: whether the NotFound comes before the first part is a race.
  for (uint32_t stream = 0; stream < 8; ++stream) {
    const uint32_t rank = stream % 2;
    std::map<uint64_t, int> seen;
    StreamOptions o;
    o.dataset = fresh;  // the latest: each node resolves it itself
    o.batch_size = 30;
    o.world = 2;
    o.rank = rank;
    o.seed = 3;
    o.epoch = stream / 2;
    const RankRun run = StreamAll(*client, o);
    ASSERT_EQ(run.end.code(), Code::kOutOfRange) << "stream " << stream << ": " << run.end.ToString();
    for (const Batch& b : run.batches) {
      for (size_t i = 0; i < b.size(); ++i) {
        ++seen[b.ids()[i]];
        EXPECT_EQ(b.sample(i), SyntheticPayload(b.ids()[i]));
      }
    }
    EXPECT_EQ(seen.size(), kSamples / 2) << "stream " << stream;
    for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << "id " << id;
  }

  // The version named, and the nodes planning (so that the behind node's
  // NotFound may come before any part): still every sample once. A version
  // no node has ends the stream with NotFound, not with every node failed.
  auto planning_nodes = cluster.Connect(0, 30000, /*plan_on_client=*/false);
  ASSERT_NE(planning_nodes, nullptr);
  for (Client* c : {client.get(), planning_nodes.get()}) {
    StreamOptions named;
    named.dataset = fresh + "@" + std::to_string(summary->dataset.version);
    named.batch_size = 30;
    named.seed = 4;
    const RankRun run = StreamAll(*c, named);
    ASSERT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
    std::map<uint64_t, int> seen;
    for (const Batch& b : run.batches) {
      for (size_t i = 0; i < b.size(); ++i) ++seen[b.ids()[i]];
    }
    EXPECT_EQ(seen.size(), kSamples);
    for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << "id " << id;
    named.dataset = fresh + "@" + std::to_string(summary->dataset.version + 5);
    const RankRun none = StreamAll(*c, named);
    EXPECT_EQ(none.end.code(), Code::kNotFound) << none.end.ToString();
    EXPECT_NE(none.end.message().find("has no version"), std::string::npos) << none.end.ToString();
  }

  // The latest version, the nodes planning, where node-3 knows only one
  // before (checked above): each node used to resolve the name itself,
  // node-3 served that one beside the others' latest, and the stream ended
  // with 'a part of another stream'. The client now names the version it
  // streams.
  for (uint32_t seed = 0; seed < 3; ++seed) {
    StreamOptions latest;
    latest.dataset = "older";
    latest.batch_size = 30;
    latest.seed = seed;
    const RankRun run = StreamAll(*planning_nodes, latest);
    ASSERT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
    std::map<uint64_t, int> seen;
    for (const Batch& b : run.batches) {
      EXPECT_EQ(b.dataset_version(), older->dataset.version);
      for (size_t i = 0; i < b.size(); ++i) ++seen[b.ids()[i]];
    }
    EXPECT_EQ(seen.size(), kSamples) << "seed " << seed;
  }

  StreamOptions missing;
  missing.dataset = "never-ingested";
  missing.batch_size = 8;
  const RankRun none = StreamAll(*client, missing);
  EXPECT_EQ(none.end.code(), Code::kNotFound) << none.end.ToString();
  EXPECT_NE(none.end.message().find("never-ingested"), std::string::npos) << none.end.ToString();
}

}  // namespace
}  // namespace strata::testing
