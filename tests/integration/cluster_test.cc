// A real cluster: 3 and 5 stratad processes on loopback. Streaming survives
// kill -9 and SIGSTOP with every sample exactly once on the rank it belongs to;
// ingest survives a dying holder; a joining node gets its share; etcd
// membership follows leases; static membership keeps a peer behind a slow
// link up; a node gone past its grace period is re-replicated. Damaged
// copies: damage_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/placement.h"
#include "tests/integration/cluster_epochs.h"
#include "tests/support/slow_link.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

std::string HomeOf(const LocalCluster& cluster, const std::string& dataset) {
  std::vector<std::string> ids;
  for (int i = 0; i < cluster.size(); ++i) ids.push_back(cluster.Id(i));
  return RankMembers(DatasetHomeKey(dataset), ids).front();
}

int IndexOf(const LocalCluster& cluster, const std::string& id) {
  for (int i = 0; i < cluster.size(); ++i) {
    if (cluster.Id(i) == id) return i;
  }
  return -1;
}

// Copies of each shard of dataset@1 across the nodes' data directories.
std::map<uint32_t, int> ShardCopies(const LocalCluster& cluster, const std::string& dataset) {
  std::map<uint32_t, int> copies;
  for (int i = 0; i < cluster.size(); ++i) {
    const std::string dir = cluster.DataDir(i) + "/shards/" + dataset + "/v1";
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() == 12 && name.substr(6) == ".shard") ++copies[static_cast<uint32_t>(std::stoul(name))];
    }
  }
  return copies;
}

TEST(ClusterTest, KillNineDuringStreamingThreeNodes) {
  LocalCluster cluster(Nodes(3));
  auto client = cluster.Connect(0);
  Status error;
  ASSERT_EQ(IngestReplicated(*client, "kill3", 3000, 2, WritePolicy::kSync, &error).dataset.samples, 3000u)
      << error.ToString();
  const auto want = RunRanks(cluster, 0, "kill3", 2, 16);
  std::atomic<bool> killed{false};
  const auto got = RunRanks(cluster, 0, "kill3", 2, 16, [&](uint32_t rank, uint64_t step) {
    if (rank == 0 && step == 20 && !killed.exchange(true)) cluster.Kill(1);
  });
  EXPECT_TRUE(killed);
  ExpectSameAndExactlyOnce(got, want, 3000);
}

TEST(ClusterTest, KillNineTwoNodesOfFive) {
  LocalCluster cluster(Nodes(5));
  auto client = cluster.Connect(0);
  ASSERT_EQ(IngestReplicated(*client, "kill5", 4000, 3).dataset.samples, 4000u);
  const auto want = RunRanks(cluster, 0, "kill5", 4, 8);
  std::atomic<int> kills{0};
  const auto got = RunRanks(cluster, 0, "kill5", 4, 8, [&](uint32_t rank, uint64_t step) {
    if (rank != 0) return;
    if (step == 15 && kills == 0) {
      cluster.Kill(1);  // node-2
      ++kills;
    }
    if (step == 60 && kills == 1) {
      cluster.Kill(3);  // node-4: two of five gone, R=3 keeps a copy of everything
      ++kills;
    }
  });
  EXPECT_EQ(kills, 2);
  ExpectSameAndExactlyOnce(got, want, 4000);
}

TEST(ClusterTest, SigstopFailsOverAndSigcontServesNothingTwice) {
  LocalCluster cluster(Nodes(3));
  auto client = cluster.Connect(0);
  ASSERT_EQ(IngestReplicated(*client, "pause", 3000, 2).dataset.samples, 3000u);
  const auto want = RunRanks(cluster, 0, "pause", 2, 16);
  std::atomic<int> phase{0};
  const auto got = RunRanks(cluster, 0, "pause", 2, 16, [&](uint32_t rank, uint64_t step) {
    if (rank == 0 && step == 10 && phase == 0) {
      cluster.Pause(2);
      phase = 1;
    }
    if (rank == 0 && step == 50 && phase == 1) {
      cluster.Resume(2);  // it wakes up mid-stream: its late batches must not be delivered
      phase = 2;
    }
  });
  EXPECT_EQ(phase, 2);
  ExpectSameAndExactlyOnce(got, want, 3000);
}

TEST(ClusterTest, KillNineDuringIngestLosesNothingAcknowledged) {
  LocalCluster cluster(Nodes(3));
  const int home = IndexOf(cluster, HomeOf(cluster, "during"));
  const int victim = (home + 1) % 3;
  auto client = cluster.Connect(home);
  Status error;
  IngestSummary reply;
  std::jthread ingest([&] { reply = IngestReplicated(*client, "during", 20000, 2, WritePolicy::kSync, &error); });
  ASSERT_TRUE(Eventually([&] { return !ShardCopies(cluster, "during").empty(); }, 30s));
  cluster.Kill(victim);  // a holder dies mid-ingest
  ingest.join();
  // Two nodes are left for two copies: the victim's copies are handed to the
  // other node or kept by the coordinator (its own file), and the ingest is
  // acknowledged. (It used to fail, after about 100 s of retries, wherever
  // the coordinator itself came next: "only 1 of 2 copies".)
  ASSERT_TRUE(error.ok()) << error.ToString();
  // Every sample is there with two durable copies, even with the victim gone.
  ASSERT_EQ(reply.dataset.samples, 20000u);
  for (const auto& [seq, n] : ShardCopies(cluster, "during")) EXPECT_GE(n, 2) << "shard " << seq;
  RankRun run = StreamAll(*cluster.Connect(home), EpochOf("during", 100));
  EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  uint64_t total = 0;
  for (const auto& b : run.batches) total += b.size();
  EXPECT_EQ(total, 20000u);
  // The killed node restarts cleanly and rejoins.
  cluster.Start(victim);
  EXPECT_TRUE(Eventually([&] { return cluster.UpIn(home) == 3; }, 20s));
}

TEST(ClusterTest, KillNineOfTheCoordinatorLeavesNoHalfVersion) {
  LocalCluster cluster(Nodes(3));
  const int home = IndexOf(cluster, HomeOf(cluster, "cut"));
  auto client = cluster.Connect(home);
  Status error;
  std::jthread ingest([&] { IngestReplicated(*client, "cut", 50000, 2, WritePolicy::kSync, &error); });
  ASSERT_TRUE(Eventually([&] { return !ShardCopies(cluster, "cut").empty(); }, 30s));
  cluster.Kill(home);
  ingest.join();
  EXPECT_FALSE(error.ok()) << "an ingest whose coordinator died cannot have been acknowledged";
  cluster.Start(home);
  for (int i = 0; i < 3; ++i) {
    auto listed = cluster.Connect(i)->ListDatasets(/*include_unsealed=*/true);
    ASSERT_TRUE(listed.ok());
    for (const auto& d : listed.value()) EXPECT_NE(d.state, VersionState::kSealed) << d.name << " on node " << i;
  }
  // The partial copies the other nodes received are released.
  EXPECT_TRUE(Eventually([&] { return ShardCopies(cluster, "cut").empty(); }, 30s));
  EXPECT_EQ(cluster.Process(home).Terminate(), 0) << "and it shuts down cleanly";
}

TEST(ClusterTest, JoiningNodeReceivesItsShareAndReadsGoOn) {
  // node-4 is listed but down past the grace period, so the data lands on three nodes.
  LocalCluster::Options o = Nodes(4, /*start=*/3);
  o.grace_period_s = 1;
  LocalCluster cluster(o);
  ASSERT_TRUE(Eventually([&] { return cluster.Map(0).nodes.size() == 3; }, 20s))
      << "node-4 leaves the map; node-1's map has " << cluster.Map(0).nodes.size() << " nodes";
  auto client = cluster.Connect(0);
  Status error;
  ASSERT_EQ(IngestReplicated(*client, "grow", 4000, 2, WritePolicy::kSync, &error).dataset.samples, 4000u)
      << error.ToString();
  // A coordinator that is not a holder keeps its own copy until the holders have theirs.
  ASSERT_TRUE(Eventually(
      [&] {
        const auto copies = ShardCopies(cluster, "grow");
        return std::all_of(copies.begin(), copies.end(), [](const auto& c) { return c.second == 2; });
      },
      30s))
      << cluster.Process(0).Log() << cluster.Process(1).Log() << cluster.Process(2).Log();
  const auto want = RunRanks(cluster, 0, "grow", 2, 20);

  cluster.Start(3);  // joins
  std::vector<Steps> during;
  std::jthread reader([&] { during = RunRanks(cluster, 0, "grow", 2, 20); });
  // Placement now gives node-4 about half of the shards' second copies; it pulls them
  // and the previous holders release theirs.
  ASSERT_TRUE(Eventually(
      [&] {
        const auto copies = ShardCopies(cluster, "grow");
        // The folder appears with node-4's first pulled shard, so it may not exist yet.
        std::error_code ec;
        const bool pulled = !std::filesystem::is_empty(cluster.DataDir(3) + "/shards/grow/v1", ec) && !ec;
        return pulled && std::all_of(copies.begin(), copies.end(), [](const auto& c) { return c.second == 2; });
      },
      60s));
  reader.join();
  ExpectSameAndExactlyOnce(during, want, 4000);
  ExpectSameAndExactlyOnce(RunRanks(cluster, 3, "grow", 2, 20), want, 4000);
}

TEST(ClusterTest, APeerWhosePingsAnswerSlowerThanTheHeartbeatStaysUp) {
  // node-1 reaches node-2 through a link that holds every chunk 300 ms each
  // way, so each ping's answer comes at least 600 ms after it left: more than
  // the heartbeat interval (200 ms), within the failure timeout. (With the
  // heartbeat interval as a ping's deadline, node-1 took node-2 for down after
  // every failure timeout.) node-2 reaches node-1 directly. node-2 starts
  // first: a node that is not listening yet is rightly down once node-1's
  // first failure timeout has passed (seen under ASan, whose start takes
  // 2 s, with node-2 started second and a 3 s timeout).
  LocalCluster::Options o = Nodes(2, /*start=*/0);
  o.failure_timeout_ms = 5000 * kSlowBuild;
  LocalCluster cluster(o);
  SlowLink link(cluster.Address(1), 300ms);
  cluster.Via(0, 1, link.address());
  cluster.Start(1);
  cluster.Start(0);
  ASSERT_TRUE(cluster.Settled());
  // Past node-1's start-up optimism (a peer not heard from yet is up for one
  // failure timeout), by two more heartbeats and then some.
  std::this_thread::sleep_for(std::chrono::milliseconds(o.failure_timeout_ms) + 2s);
  EXPECT_GT(link.bytes(), 0u) << "node-1's pings went through the slow link";
  EXPECT_EQ(cluster.UpIn(0), 2);
  const std::string log = cluster.Process(0).Log();
  EXPECT_EQ(log.find("node-2 is down"), std::string::npos) << log;
}

TEST(ClusterTest, EtcdLeaseExpiryRemovesANodeAndARestartBringsItBack) {
  if (auto why = EtcdProcess::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto etcd = EtcdProcess::Start();
  ASSERT_NE(etcd, nullptr);
  LocalCluster::Options o = Nodes(3);
  o.etcd = etcd->endpoint();
  o.grace_period_s = 3;
  LocalCluster cluster(o);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  const uint64_t epoch = cluster.Map(0).epoch;
  cluster.Kill(2);  // no revoke: only the lease's expiry tells
  ASSERT_TRUE(Eventually(
      [&] {
        const auto map = cluster.Map(0);
        const auto* n = FindNodeForTest(map, "node-3");
        return n != nullptr && n->state == NodeState::kDown;
      },
      20s))
      << "down once the lease expires";
  ASSERT_TRUE(Eventually([&] { return cluster.Map(0).nodes.size() == 2; }, 20s)) << "removed after the grace period";
  EXPECT_GT(cluster.Map(0).epoch, epoch);
  cluster.Start(2);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3 && cluster.UpIn(1) == 3; }, 20s)) << "back after restart";
}

}  // namespace
}  // namespace strata::testing

namespace strata::testing {
namespace {

TEST(ClusterRepairTest, ANodeGonePastItsGracePeriodIsReReplicatedAndStatusShowsIt) {
  LocalCluster::Options o;
  o.nodes = 3;
  o.grace_period_s = 1;
  LocalCluster cluster(o);
  auto client = cluster.Connect(0);
  Status error;
  ASSERT_EQ(IngestReplicated(*client, "heal", 3000, 2, WritePolicy::kSync, &error).dataset.samples, 3000u)
      << error.ToString();
  cluster.Kill(2);
  // node-3 leaves the map after its grace period; its shards get a second copy on the others.
  auto status_json = [&] {
    CommandResult r =
        RunCommand({StrataCliBinary(), "status", "--json", "--server", cluster.Address(0) + "," + cluster.Address(1)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  };
  ASSERT_TRUE(Eventually(
      [&] {
        const auto s = status_json();
        if (s.is_null() || s["map"]["nodes"].size() != 2) return false;
        const auto& h = s["datasets"][0];
        return h["healthy"] == h["shards"] && h["under_replicated"] == 0 && h["missing"] == 0;
      },
      60s));
  const auto s = status_json();
  uint64_t copied = 0;
  for (const auto& n : s["nodes"]) copied += std::stoull(n["repair"].value("files_copied", std::string("0")));
  EXPECT_GT(copied, 0u) << s.dump(2);
  for (const auto& [seq, n] : ShardCopies(cluster, "heal")) {
    (void)seq;
    EXPECT_GE(n, 2);
  }
  // The human form names the nodes and the health table.
  CommandResult text = RunCommand({StrataCliBinary(), "status", "--server", cluster.Address(1)});
  EXPECT_NE(text.out.find("replica health"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("node-1"), std::string::npos);
  EXPECT_TRUE(Eventually([&] { return RunRanks(cluster, 1, "heal", 2, 30).size() == 2; }, 30s));
}

}  // namespace
}  // namespace strata::testing
