// Endurance: a training job that outlives every node. Real stratad processes
// on loopback: a rolling restart (every node of five killed with kill -9 and
// restarted, twice) during one epoch on four ranks; a trainer that pauses for
// seconds with no fault; a shard whose holders are all down; an ingest whose
// home node dies. Exactly once is checked id by id against an epoch streamed
// with no fault.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "common/placement.h"
#include "common/status.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;
using Steps = std::vector<std::vector<uint64_t>>;  // per step, the rank's ids in order

// Payloads large enough that a node's share of an epoch does not fit in the
// connection's buffers: its calls are still sending when it is killed.
std::string BigPayload(uint64_t i) {
  return SyntheticPayload(i) + std::string(8 << 10, static_cast<char>('A' + i % 26));
}

// Many shards, spread over the nodes. `before_commit` runs after the last
// write, before the commit.
Status Ingest(Client& client, const std::string& dataset, uint64_t n, uint32_t replication,
              const std::function<std::string(uint64_t)>& payload = SyntheticPayload,
              const std::function<void()>& before_commit = {}) {
  return TryIngestSynthetic(client, dataset, n,
                            {.labels = 5,
                             .replication = replication,
                             .shard_target_bytes = 16 << 10,
                             .payload = payload,
                             .before_commit = before_commit})
      .status();
}

// One epoch on `world` ranks (threads), each a plain stream (no resume).
// `at_step(rank, step)` runs after each batch. Returns each rank's ids, its
// final status and its stream's stats.
struct Epoch {
  std::vector<Steps> ids;
  std::vector<Status> end;
  std::vector<StreamStats> stats;
};
Epoch RunEpoch(LocalCluster& cluster, const std::string& dataset, uint32_t world, uint32_t batch,
               const std::function<void(uint32_t, uint64_t)>& at_step = {}, int64_t stall_ms = 1000,
               const std::function<std::string(uint64_t)>& payload = SyntheticPayload) {
  Epoch e;
  e.ids.resize(world);
  e.end.resize(world);
  e.stats.resize(world);
  std::vector<std::jthread> threads;
  for (uint32_t r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      ClientOptions co;
      co.stall_timeout_ms = stall_ms;
      // A window a quarter of the default (ClientOptions), so that a node's
      // calls are still sending when it is killed, not done with a small epoch.
      co.receive_window_bytes = 256 << 10;
      auto client = Client::Connect(cluster.Addresses(), co);
      ASSERT_TRUE(client.ok()) << client.status().ToString();
      StreamOptions o;
      o.dataset = dataset;
      o.rank = r;
      o.world = world;
      o.batch_size = batch;
      o.seed = 5;
      auto stream = client.value()->OpenStream(o);
      ASSERT_TRUE(stream.ok()) << stream.status().ToString();
      for (;;) {
        Batch b;
        Status s = stream.value()->Next(&b);
        if (!s.ok()) {
          e.end[r] = s;
          break;
        }
        for (size_t i = 0; i < b.size(); ++i) {
          EXPECT_EQ(b.sample(i), payload(b.ids()[i])) << "id " << b.ids()[i];
        }
        e.ids[r].push_back(b.ids());
        if (at_step) at_step(r, b.step());
      }
      e.stats[r] = stream.value()->stats();
    });
  }
  threads.clear();  // joins
  return e;
}

// Every rank ended at the end of the epoch with the same batches as `want`,
// and every one of the n samples came exactly once.
void ExpectCompleteExactlyOnce(const Epoch& got, const Epoch& want, uint64_t n) {
  std::map<uint64_t, int> seen;
  for (size_t r = 0; r < got.ids.size(); ++r) {
    EXPECT_EQ(got.end[r].code(), Code::kOutOfRange) << "rank " << r << ": " << got.end[r].ToString();
    ASSERT_EQ(got.ids[r].size(), want.ids[r].size()) << "rank " << r;
    for (size_t k = 0; k < got.ids[r].size(); ++k) {
      EXPECT_EQ(got.ids[r][k], want.ids[r][k]) << "rank " << r << " step " << k;
      for (uint64_t id : got.ids[r][k]) ++seen[id];
    }
  }
  ASSERT_EQ(seen.size(), n);
  for (const auto& [id, count] : seen) ASSERT_EQ(count, 1) << "id " << id;
}

// Copies of each shard of dataset@1 across the nodes' data directories (only node `only`'s if >= 0).
std::map<uint32_t, int> ShardCopies(const LocalCluster& cluster, const std::string& dataset, int only = -1) {
  std::map<uint32_t, int> copies;
  for (int i = 0; i < cluster.size(); ++i) {
    if (only >= 0 && i != only) continue;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(cluster.DataDir(i) + "/shards/" + dataset + "/v1", ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() == 12 && name.substr(6) == ".shard") ++copies[static_cast<uint32_t>(std::stoul(name))];
    }
  }
  return copies;
}

LocalCluster::Options Nodes(int n) {
  LocalCluster::Options o;
  o.nodes = n;
  return o;
}

// Rolling restart: each of five nodes (R=3) in turn is killed with kill -9
// and restarted, twice over, while four ranks stream one epoch. Every rank's
// plain stream completes (no resume) with every sample exactly once. Before
// nodes came back, the fifth exclusion left a stream with no node at all.
TEST(EnduranceTest, RollingRestartTwiceDuringOneEpoch) {
  LocalCluster cluster(Nodes(5));
  ASSERT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < 5; ++i) {
          if (cluster.UpIn(i) != 5) return false;
        }
        return true;
      },
      30s));
  auto client = cluster.Connect(0);
  Status ingested = Ingest(*client, "roll", 4000, 3, BigPayload);
  ASSERT_TRUE(ingested.ok()) << ingested.ToString();
  const Epoch want = RunEpoch(cluster, "roll", 4, 8, {}, 1000, BigPayload);
  ASSERT_EQ(want.ids[0].size(), 125u);

  std::atomic<bool> nemesis_done{false};
  std::atomic<int> restarts{0};
  std::jthread nemesis;
  const Epoch got = RunEpoch(
      cluster, "roll", 4, 8,
      [&](uint32_t rank, uint64_t step) {
        if (rank == 0 && step == 2) {
          nemesis = std::jthread([&] {
            for (int round = 0; round < 2; ++round) {
              for (int i = 0; i < cluster.size(); ++i) {
                cluster.Kill(i);
                std::this_thread::sleep_for(500ms);
                cluster.Start(i);  // returns once it logs "ready"
                ++restarts;
                // Let the streams take it back before the next one goes: one node down at a time.
                std::this_thread::sleep_for(1500ms);
              }
            }
            nemesis_done = true;
          });
        }
        // The trainer is slowed, and paced by the nemesis (at most 2 minutes), so
        // that the ten restarts fall between steps 5 and 115, whatever the
        // machine's speed: the epoch spans the whole rolling restart.
        std::this_thread::sleep_for(50ms);
        const int due = step < 5 ? 0 : static_cast<int>((step - 5) / 11);
        for (int i = 0; i < 1200 && restarts < due && !nemesis_done; ++i) std::this_thread::sleep_for(100ms);
      },
      1000, BigPayload);
  nemesis = {};
  ASSERT_TRUE(nemesis_done);
  EXPECT_EQ(restarts, 10);
  ExpectCompleteExactlyOnce(got, want, 4000);
  uint64_t readmissions = 0;
  for (size_t r = 0; r < got.stats.size(); ++r) {
    std::printf("rank %zu: %llu failovers (%llu stalls), %llu readmissions\n", r,
                static_cast<unsigned long long>(got.stats[r].failovers),
                static_cast<unsigned long long>(got.stats[r].stalls),
                static_cast<unsigned long long>(got.stats[r].readmissions));
    readmissions += got.stats[r].readmissions;
  }
  EXPECT_GT(readmissions, 0u) << "restarted nodes serve again";
}

// A trainer that spends 8 s on some steps (an evaluation, a checkpoint), with
// no fault: no node is judged stalled (their parts wait unread in the client,
// or their servers wait on flow control), no failover, every sample once.
TEST(EnduranceTest, SlowStepsWithoutFaultsCauseNoFailover) {
  LocalCluster cluster(Nodes(3));
  auto client = cluster.Connect(0);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3 && cluster.UpIn(1) == 3 && cluster.UpIn(2) == 3; }, 30s));
  Status ingested = Ingest(*client, "slow", 3000, 2, BigPayload);
  ASSERT_TRUE(ingested.ok()) << ingested.ToString();
  const Epoch want = RunEpoch(cluster, "slow", 2, 16, {}, 1000, BigPayload);
  const Epoch got = RunEpoch(
      cluster, "slow", 2, 16,
      [&](uint32_t rank, uint64_t step) {
        if ((rank == 0 && (step == 5 || step == 50)) || (rank == 1 && step == 30)) std::this_thread::sleep_for(8s);
      },
      /*stall_ms=*/1000, BigPayload);
  ExpectCompleteExactlyOnce(got, want, 3000);
  for (size_t r = 0; r < got.stats.size(); ++r) {
    EXPECT_EQ(got.stats[r].failovers, 0u) << "rank " << r;
    EXPECT_EQ(got.stats[r].stalls, 0u) << "rank " << r;
  }
}

// A shard with one copy whose holder is down: the stream fails with
// Unavailable naming the shard and saying its holders are down (not
// NotFound, which reads as a bad request).
TEST(EnduranceTest, HoldersDownIsUnavailableNamingTheShard) {
  LocalCluster cluster(Nodes(3));
  auto client = cluster.Connect(0);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3 && cluster.UpIn(1) == 3 && cluster.UpIn(2) == 3; }, 30s));
  Status ingested = Ingest(*client, "lone", 2000, 1);
  ASSERT_TRUE(ingested.ok()) << ingested.ToString();
  // Once the coordinator has released the copies it kept for others, node-3's shards have no other copy.
  ASSERT_TRUE(Eventually(
      [&] {
        int held = 0, total = 0;
        for (const auto& [seq, copies] : ShardCopies(cluster, "lone")) {
          if (copies != 1) return false;
          ++total;
        }
        for (const auto& [seq, copies] : ShardCopies(cluster, "lone", 2)) held += copies;
        return total > 0 && held > 0;
      },
      60s));
  cluster.Kill(2);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 2 && cluster.UpIn(1) == 2; }, 20s));
  const Epoch got = RunEpoch(cluster, "lone", 1, 50);
  ASSERT_EQ(got.end[0].code(), Code::kUnavailable) << got.end[0].ToString();
  EXPECT_NE(got.end[0].message().find("no live holder of shard lone@1/"), std::string::npos) << got.end[0].ToString();
  EXPECT_NE(got.end[0].message().find("its holders are down"), std::string::npos) << got.end[0].ToString();
}

uint64_t SamplesStreamed(LocalCluster& cluster, int node, const std::string& dataset) {
  return DistinctIdsStreamed(*cluster.Connect(node), dataset, 100).size();
}

// The re-run's payloads differ from the interrupted ingest's, so that a copy of
// an interrupted shard served in place of the re-run's is seen.
std::string RerunPayload(uint64_t i) { return "rerun:" + SyntheticPayload(i); }

// The distinct ids of the latest version of `dataset`, streamed from `node`,
// whose payloads are the re-run's (0 and a failure if any is not).
uint64_t RerunSamplesStreamed(LocalCluster& cluster, int node, const std::string& dataset) {
  auto client = cluster.Connect(node);
  const RankRun run = StreamDataset(*client, dataset, 100);
  EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  std::set<uint64_t> ids;
  for (const auto& b : run.batches) {
    for (size_t i = 0; i < b.size(); ++i) {
      if (std::string(b.sample(i)).find("rerun:") == std::string::npos) {
        ADD_FAILURE() << dataset << ": sample " << b.ids()[i] << " is not the re-run's";
        return 0;
      }
      ids.insert(b.ids()[i]);
    }
  }
  return ids.size();
}

// An ingest started just after its home node died (the map still says it is
// up), and one started 1 s after (the map may say either), goes to the next
// node in order instead of failing; the home restarts and the version is
// there, whole.
// A client outlives the node it connected to: with that node gone, a stream
// opens through the other nodes of the cluster map the client last saw or,
// having seen none yet, through the seeds it was given. (It asked only the
// node it connected to, and failed with Unavailable: the soak's churn, a
// stream opened as the nemesis killed that node.)
TEST(EnduranceTest, StreamsOpenWhenTheNodeTheClientConnectedToIsGone) {
  LocalCluster cluster(Nodes(3));
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3 && cluster.UpIn(1) == 3 && cluster.UpIn(2) == 3; }, 30s));
  ASSERT_TRUE(Ingest(*cluster.Connect(1), "gone", 2000, 3).ok());
  ASSERT_TRUE(Eventually([&] { return cluster.Connect(2)->Describe("gone").ok(); }, 30s));
  auto seen = Client::Connect(cluster.Addresses());  // node-1, which gives it a map
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  ASSERT_EQ(seen.value()->address(), cluster.Address(0));
  EXPECT_EQ(DistinctIdsStreamed(*seen.value(), "gone").size(), 2000u);
  auto fresh = Client::Connect(cluster.Addresses());  // node-1 too, no map yet
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  cluster.Kill(0);
  for (Client* client : {seen.value().get(), fresh.value().get()}) {
    SCOPED_TRACE(client == seen.value().get() ? "the client that saw a map" : "the client that saw none");
    EXPECT_EQ(DistinctIdsStreamed(*client, "gone").size(), 2000u);
  }
}

TEST(EnduranceTest, IngestWhoseHomeIsDownGoesToTheNextNode) {
  LocalCluster cluster(Nodes(3));
  for (const auto delay : {0ms, 1000ms}) {
    SCOPED_TRACE("started " + std::to_string(delay.count()) + " ms after the home died");
    const std::string name = "away-" + std::to_string(delay.count());
    ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3 && cluster.UpIn(1) == 3 && cluster.UpIn(2) == 3; }, 30s));
    const int home = HomeIndex(cluster, name);
    const int other = (home + 1) % 3;
    auto client = cluster.Connect(other);
    cluster.Kill(home);
    std::this_thread::sleep_for(delay);
    Status s = Ingest(*client, name, 2000, 2);
    ASSERT_TRUE(s.ok()) << s.ToString();
    cluster.Start(home);
    ASSERT_TRUE(Eventually([&] { return cluster.UpIn(home) == 3 && cluster.UpIn(other) == 3; }, 30s));
    EXPECT_EQ(SamplesStreamed(cluster, other, name), 2000u);
  }
}

// The home killed mid-ingest, several times: each interrupted ingest fails
// (never acknowledged) and its re-run succeeds under a number of its own. In
// even rounds the re-run goes to the next node while the home is down (which,
// numbering as the home did, collided with the copies of the interrupted
// version's shards it held, and was aborted by the home's restart); in odd
// rounds the home is restarted at once and the re-run goes wherever the map
// sends it. The old home's restart aborts only its own version, and no version
// acknowledged in an earlier round is lost.
TEST(EnduranceTest, HomeKilledMidIngestThenReRunSucceeds) {
  LocalCluster cluster(Nodes(3));
  std::vector<std::string> acknowledged;
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string name = "again-" + std::to_string(round);
    ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3 && cluster.UpIn(1) == 3 && cluster.UpIn(2) == 3; }, 30s));
    const int home = HomeIndex(cluster, name);
    const int other = (home + 1) % 3;
    auto client = cluster.Connect(other);
    Status first;
    // The commit waits for the kill: on a fast run the whole ingest could
    // otherwise be acknowledged before the home dies. (Bounded, so that a
    // failed assertion below, which skips the kill, does not hang the join.)
    std::promise<void> killed;
    std::shared_future<void> kill_done = killed.get_future().share();
    std::jthread ingest(
        [&] { first = Ingest(*client, name, 40000, 2, SyntheticPayload, [&] { kill_done.wait_for(300s); }); });
    // Copies of the interrupted version's shards on every node.
    ASSERT_TRUE(Eventually(
        [&] {
          for (int i = 0; i < 3; ++i) {
            if (ShardCopies(cluster, name, i).empty()) return false;
          }
          return true;
        },
        60s));
    cluster.Kill(home);
    killed.set_value();
    ingest.join();
    EXPECT_FALSE(first.ok()) << "an ingest whose home died cannot have been acknowledged";
    Status rerun;
    if (round % 2 == 0) {
      ASSERT_TRUE(Eventually([&] { return cluster.UpIn(other) == 2; }, 30s));
      rerun = Ingest(*client, name, 3000, 2, RerunPayload);
      cluster.Start(home);
    } else {
      cluster.Start(home);
      rerun = Ingest(*client, name, 3000, 2, RerunPayload);
    }
    ASSERT_TRUE(rerun.ok()) << rerun.ToString();
    acknowledged.push_back(name);
    ASSERT_TRUE(Eventually([&] { return cluster.UpIn(home) == 3 && cluster.UpIn(other) == 3; }, 30s));
    std::this_thread::sleep_for(2s);  // time for the restarted home's abort broadcast to land anywhere
    for (const std::string& done : acknowledged) {
      EXPECT_EQ(RerunSamplesStreamed(cluster, other, done), 3000u) << done;
      EXPECT_EQ(RerunSamplesStreamed(cluster, home, done), 3000u) << done << " from the restarted home";
    }
  }
}

}  // namespace
}  // namespace strata::testing
