// A real cluster: 3 and 5 stratad processes on loopback. Streaming survives
// kill -9 and SIGSTOP with every sample exactly once on the rank it belongs to;
// ingest survives a dying holder; a joining node gets its share; a flipped bit
// is repaired; etcd membership follows leases.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/placement.h"
#include "plan/stratum_index.h"
#include "server/storage/shard_format.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;
using Steps = std::vector<std::vector<uint64_t>>;  // per step, the rank's ids in order

IngestSummary IngestReplicated(Client& client, const std::string& dataset, uint64_t n, uint32_t replication,
                               WritePolicy policy = WritePolicy::kSync, Status* error = nullptr) {
  SyntheticIngest how{.labels = 5, .replication = replication, .shard_target_bytes = 16 << 10};  // many shards
  how.options.write_policy = policy;
  auto reply = TryIngestSynthetic(client, dataset, n, how);
  if (!reply.ok()) {
    if (error) *error = reply.status();
    return {};
  }
  return reply.value();
}

// Streams one epoch on `world` ranks (threads); `at_step(rank, step)` runs after
// each batch. Checks payloads and labels on the way.
std::vector<Steps> RunRanks(LocalCluster& cluster, int seed_node, const std::string& dataset, uint32_t world,
                            uint32_t batch, const std::function<void(uint32_t, uint64_t)>& at_step = {},
                            SamplerSpec::Kind sampler = SamplerSpec::Kind::kShuffle) {
  std::vector<Steps> out(world);
  std::vector<std::jthread> threads;
  for (uint32_t r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      auto client = cluster.Connect(seed_node);
      ASSERT_NE(client, nullptr);
      StreamOptions o;
      o.dataset = dataset;
      o.rank = r;
      o.world = world;
      o.batch_size = batch;
      o.seed = 3;
      o.sampler.kind = sampler;
      auto stream = client->OpenStream(o);
      ASSERT_TRUE(stream.ok()) << stream.status().ToString();
      for (;;) {
        Batch b;
        Status s = stream.value()->Next(&b);
        if (!s.ok()) {
          EXPECT_EQ(s.code(), Code::kOutOfRange) << "rank " << r << ": " << s.ToString();
          break;
        }
        for (size_t i = 0; i < b.size(); ++i) {
          EXPECT_EQ(b.sample(i), SyntheticPayload(b.ids()[i])) << "id " << b.ids()[i];
        }
        out[r].push_back(b.ids());
        if (at_step) at_step(r, b.step());
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

void ExpectSameAndExactlyOnce(const std::vector<Steps>& got, const std::vector<Steps>& want, uint64_t n) {
  ASSERT_EQ(got.size(), want.size());
  std::map<uint64_t, int> seen;
  for (size_t r = 0; r < got.size(); ++r) {
    ASSERT_EQ(got[r].size(), want[r].size()) << "rank " << r;
    for (size_t k = 0; k < got[r].size(); ++k) {
      EXPECT_EQ(got[r][k], want[r][k]) << "rank " << r << " step " << k;
      for (uint64_t id : got[r][k]) ++seen[id];
    }
  }
  ASSERT_EQ(seen.size(), n);
  for (const auto& [id, count] : seen) ASSERT_EQ(count, 1) << "id " << id;
}

LocalCluster::Options Nodes(int n, int start = -1) {
  LocalCluster::Options o;
  o.nodes = n;
  o.start = start;
  return o;
}

StreamOptions EpochOf(const std::string& dataset, uint32_t batch) {
  StreamOptions o;
  o.dataset = dataset;
  o.batch_size = batch;
  return o;
}

// One shard file of `dir` (empty if there is none), with the byte at
// `fraction` of its size XORed with 0x10: damage only a checksum can find.
std::string DamageOneShard(const std::string& dir, double fraction) {
  std::string victim;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".shard") victim = e.path().string();
  }
  if (!victim.empty()) {
    FlipByte(victim, static_cast<uint64_t>(static_cast<double>(std::filesystem::file_size(victim)) * fraction), 0x10);
  }
  return victim;
}

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
  if (error.ok()) {
    // Acknowledged: every sample is there with two durable copies, even with the victim gone.
    ASSERT_EQ(reply.dataset.samples, 20000u);
    for (const auto& [seq, n] : ShardCopies(cluster, "during")) EXPECT_GE(n, 2) << "shard " << seq;
    RankRun run = StreamAll(*cluster.Connect(home), EpochOf("during", 100));
    EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
    uint64_t total = 0;
    for (const auto& b : run.batches) total += b.size();
    EXPECT_EQ(total, 20000u);
  } else {
    // Not acknowledged: the version is absent, not half there.
    auto d = cluster.Connect(home)->Describe("during@1");
    EXPECT_FALSE(d.ok() && d->dataset.state == VersionState::kSealed) << error.ToString();
  }
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
  ASSERT_TRUE(Eventually([&] { return cluster.Map(0).nodes.size() == 3; }, 20s)) << "node-4 leaves the map";
  auto client = cluster.Connect(0);
  ASSERT_EQ(IngestReplicated(*client, "grow", 4000, 2).dataset.samples, 4000u);
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

TEST(ClusterTest, FlippedBitIsNeverServedAndIsRepaired) {
  LocalCluster cluster(Nodes(3));
  auto client = cluster.Connect(0);
  ASSERT_EQ(IngestReplicated(*client, "flip", 3000, 2).dataset.samples, 3000u);
  // Flip a bit in the middle of one shard on node-1.
  const std::string victim = DamageOneShard(cluster.DataDir(0) + "/shards/flip/v1", 0.5);
  ASSERT_FALSE(victim.empty());
  // Every epoch reads correct bytes (RunRanks checks every payload).
  const auto want = RunRanks(cluster, 0, "flip", 1, 50);
  ExpectSameAndExactlyOnce(RunRanks(cluster, 0, "flip", 1, 50), want, 3000);
  // The bad copy is found (by a read or the scrubber), quarantined and replaced by a good one.
  ASSERT_TRUE(Eventually(
      [&] {
        auto s = client->GetNodeStatus(cluster.Address(0));
        if (!s.ok() || s->repair.corruptions_found < 1 || s->repair.files_copied < 1) return false;
        auto reader = ShardReader::Open(victim);
        return reader.ok() && reader.value()->VerifyFile().ok();
      },
      60s));
  EXPECT_FALSE(std::filesystem::is_empty(cluster.DataDir(0) + "/quarantine"));
}

// A node that found its copies damaged fetches those samples from other
// nodes while repair brings good copies, then, within the same stream, reads
// its own again: a holder lagging in its view of the others (a missed
// heartbeat) then never leaves it without a source.
TEST(ClusterTest, ARepairedCopyIsReadAgainWithinTheStream) {
  LocalCluster cluster(Nodes(3));
  auto client = cluster.Connect(0);
  // Samples large enough that the nodes cannot send a share of the epoch
  // ahead of the trainer (flow control stops them).
  const auto payload = [](uint64_t id) {
    return std::string(16 << 10, static_cast<char>('a' + id % 26)) + std::to_string(id);
  };
  SyntheticIngest how{.replication = 2, .shard_target_bytes = 1 << 20, .payload = payload};
  auto ingested = TryIngestSynthetic(*client, "heal", 2000, how);
  ASSERT_TRUE(ingested.ok()) << ingested.status().ToString();
  // Every copy on node-1 cut in half: opening one fails its layout check.
  const std::string dir = cluster.DataDir(0) + "/shards/heal/v1";
  std::vector<std::string> victims;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".shard") continue;
    victims.push_back(e.path().string());
    std::filesystem::resize_file(e.path(), std::filesystem::file_size(e.path()) / 2);
  }
  ASSERT_FALSE(victims.empty());
  // One stream served by the nodes (one call each for the whole epoch).
  auto reader = cluster.Connect(2, 30000, /*plan_on_client=*/false);
  StreamOptions o = EpochOf("heal", 16);
  auto stream = reader->OpenStream(o);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  std::map<uint64_t, int> seen;
  Batch b;
  Status end;
  for (int k = 0; k < 5 && (end = stream.value()->Next(&b)).ok(); ++k) {
    for (size_t i = 0; i < b.size(); ++i) ++seen[b.ids()[i]];
  }
  ASSERT_TRUE(end.ok()) << end.ToString();
  const std::string metrics = cluster.Process(0).metrics_address();
  // Every copy of node-1 replaced (by the repair its reads and the scrubber start).
  ASSERT_TRUE(Eventually(
      [&] {
        return std::all_of(victims.begin(), victims.end(), [](const std::string& v) {
          auto shard = ShardReader::Open(v);
          return shard.ok() && shard.value()->VerifyFile().ok();
        });
      },
      60s));
  // Past the time a missing or damaged copy keeps the stream fetching (and
  // once the fetches of steps built before have all come back: the count
  // stands still), every step node-1 builds reads its own copies.
  double proxied = Metric(metrics, "strata_proxied_records_total");
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(1500ms);
    const double now = Metric(metrics, "strata_proxied_records_total");
    if (now == proxied) break;
    proxied = now;
  }
  EXPECT_GE(proxied, 1) << "node-1 fetched the samples of its damaged copies";
  while ((end = stream.value()->Next(&b)).ok()) {
    for (size_t i = 0; i < b.size(); ++i) {
      ++seen[b.ids()[i]];
      EXPECT_EQ(b.sample(i), payload(b.ids()[i])) << "id " << b.ids()[i];
    }
  }
  EXPECT_EQ(end.code(), Code::kOutOfRange) << end.ToString();
  EXPECT_EQ(seen.size(), 2000u);
  for (const auto& [id, n] : seen) ASSERT_EQ(n, 1) << "id " << id;
  EXPECT_EQ(Metric(metrics, "strata_proxied_records_total"), proxied) << "node-1 reads its repaired copies";
}

// Damage in a shard no stream reads is found by the scrubber alone (paced
// piece by piece), quarantined, and replaced by a good copy.
TEST(ClusterTest, ScrubberFindsDamageNobodyReads) {
  LocalCluster cluster(Nodes(3));
  auto client = cluster.Connect(0);
  ASSERT_EQ(IngestReplicated(*client, "scrub", 3000, 2).dataset.samples, 3000u);
  const std::string victim = DamageOneShard(cluster.DataDir(2) + "/shards/scrub/v1", 1.0 / 3);
  ASSERT_FALSE(victim.empty());
  ASSERT_FALSE(ShardReader::Open(victim).value()->VerifyFile().ok());
  ASSERT_TRUE(Eventually(
      [&] {
        auto s = client->GetNodeStatus(cluster.Address(2));
        if (!s.ok() || s->repair.corruptions_found < 1) return false;
        auto reader = ShardReader::Open(victim);
        return reader.ok() && reader.value()->VerifyFile().ok();
      },
      90s))
      << "the scrubber quarantines the copy and a good one is fetched";
  EXPECT_FALSE(std::filesystem::is_empty(cluster.DataDir(2) + "/quarantine"));
}

// A stratum index damaged on one node before any stream read it: that node's
// stratified stream fails when it reads the damaged block, the client fails
// over to the other nodes (every sample still once), and the copy is
// quarantined and fetched again; the next epoch is the same one in full.
TEST(ClusterTest, DamagedStratumIndexFailsOverAndIsRepaired) {
  LocalCluster cluster(Nodes(3));
  auto client = cluster.Connect(0);
  Status error;
  ASSERT_EQ(IngestReplicated(*client, "sidx", 3000, 2, WritePolicy::kSync, &error).dataset.samples, 3000u)
      << error.ToString();
  const std::string victim = cluster.DataDir(1) + "/shards/sidx/v1/" + kStratumIndexFileName;
  // The index goes to every node, and the seal does not wait for it.
  ASSERT_TRUE(Eventually([&] { return StratumIndexFile::Open(victim).ok(); }, 20s));
  // One byte of the ids (5 strata: 6 offsets), in the middle of the index.
  FlipByte(victim, kStratumIndexHeaderSize + 6 * 8 + 1500 * 8 + 2, 0x08);
  ASSERT_FALSE(StratumIndexFile::Open(victim).ok());
  const auto failed_over = RunRanks(cluster, 0, "sidx", 1, 50, {}, SamplerSpec::Kind::kStratified);
  ASSERT_TRUE(Eventually(
      [&] {
        auto s = client->GetNodeStatus(cluster.Address(1));
        return s.ok() && s->repair.corruptions_found >= 1 && StratumIndexFile::Open(victim).ok();
      },
      60s))
      << "the damaged index is quarantined and fetched again";
  EXPECT_FALSE(std::filesystem::is_empty(cluster.DataDir(1) + "/quarantine"));
  const auto repaired = RunRanks(cluster, 0, "sidx", 1, 50, {}, SamplerSpec::Kind::kStratified);
  ExpectSameAndExactlyOnce(failed_over, repaired, 3000);
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
