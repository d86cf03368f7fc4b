// Damaged copies on a real 3-node cluster: a flipped bit is never served and
// is repaired, the scrubber finds damage nobody reads, a damaged stratum
// index fails over and is fetched again, and a stream reads a repaired copy
// again instead of fetching it for the rest of the epoch.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/input_limits.h"
#include "plan/stratum_index.h"
#include "server/storage/shard_format.h"
#include "strata/v1/data.grpc.pb.h"
#include "tests/integration/cluster_epochs.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

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

TEST(DamageTest, FlippedBitIsNeverServedAndIsRepaired) {
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
TEST(DamageTest, ARepairedCopyIsReadAgainWithinTheStream) {
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
TEST(DamageTest, ScrubberFindsDamageNobodyReads) {
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

// The scrubber's thread takes what serving leaves: it is named strata-scrub,
// at nice 19 and the lowest best-effort I/O priority (ioprio 7), as the
// kernel reports them for the running stratad.
TEST(DamageTest, TheScrubberRunsAtBackgroundPriority) {
  LocalCluster cluster(Nodes(1));
  const std::string tasks = "/proc/" + std::to_string(cluster.Process(0).pid()) + "/task";
  int scrub_threads = 0;
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != "strata-scrub") continue;
    ++scrub_threads;
    // /proc/PID/task/TID/stat: the 19th field is the nice value (after the
    // command's parenthesis, which may hold spaces).
    std::ifstream stat_file(task.path() / "stat");
    const std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::vector<std::string> f{std::istream_iterator<std::string>(fields), {}};
    ASSERT_GT(f.size(), 16u) << stat;
    EXPECT_EQ(f[16], "19") << stat;  // field 19, the 17th after the command
    const long tid = std::stol(task.path().filename().string());
    EXPECT_EQ(syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, tid), (2 << 13) | 7);
  }
  EXPECT_EQ(scrub_threads, 1);
}

TEST(DamageTest, TheOnlyCopyGoneSaysNoOtherHolderWasThereToAsk) {
  // One node, one copy: its error named no node after "records of ...:".
  SingleNode node;
  IngestSynthetic(node.client(), "only", 200, 3);
  std::string victim;
  for (const auto& e : std::filesystem::directory_iterator(node.dir().Join("data/shards/only/v1"))) {
    if (e.path().extension() == ".shard") victim = e.path().string();
  }
  ASSERT_FALSE(victim.empty());
  ASSERT_TRUE(std::filesystem::remove(victim)) << victim;
  StreamOptions o;
  o.dataset = "only";
  o.batch_size = 50;
  RankRun run = StreamAll(node.client(), o);
  ASSERT_FALSE(run.end.ok());
  EXPECT_NE(run.end.message().find("does not exist"), std::string::npos) << run.end.ToString();
  EXPECT_NE(run.end.message().find("no holder but this node was in the cluster map (holders: node-1)"),
            std::string::npos)
      << run.end.ToString();
}

TEST(DamageTest, TheOnlyCopyDamagedEndsTheStreamWithCorruption) {
  // No other copy to read: the stream ends Corruption (it ended Unavailable,
  // which reads as "try again later"), and no damaged byte is delivered.
  SingleNode node;
  IngestSynthetic(node.client(), "flipped", 200, 3);
  std::string victim;
  for (const auto& e : std::filesystem::directory_iterator(node.dir().Join("data/shards/flipped/v1"))) {
    if (e.path().extension() == ".shard") victim = e.path().string();
  }
  ASSERT_FALSE(victim.empty());
  std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
  const auto middle = static_cast<std::streamoff>(std::filesystem::file_size(victim) / 2);
  f.seekg(middle);
  const char byte = static_cast<char>(f.get());
  f.seekp(middle);
  f.put(static_cast<char>(byte ^ 0x5A));
  f.close();
  StreamOptions o;
  o.dataset = "flipped";
  o.batch_size = 50;
  RankRun run = StreamAll(node.client(), o);
  EXPECT_EQ(run.end.code(), Code::kDataLoss) << run.end.ToString();
  EXPECT_NE(run.end.message().find("checksum mismatch"), std::string::npos) << run.end.ToString();
  for (const Batch& b : run.batches) {
    for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b.sample(i), SyntheticPayload(b.ids()[i]));
  }
}

TEST(DamageTest, ACopyGoneFromDiskIsFetchedAgain) {
  // The node's inventory still lists the copy, so only the scrubber, which
  // finds the file missing, can have it fetched again.
  LocalCluster cluster(Nodes(3));
  auto client = cluster.Connect(0);
  ASSERT_EQ(IngestReplicated(*client, "gone", 3000, 2).dataset.samples, 3000u);
  // Once the node has released the copies it is not a holder of, a shard it holds.
  const std::string dir = cluster.DataDir(2) + "/shards/gone/v1";
  std::string victim;
  ASSERT_TRUE(Eventually(
      [&] {
        auto files = client->ListNodeFiles(cluster.Address(2));
        if (!files.ok()) return false;
        size_t listed = 0, on_disk = 0;
        for (const FileRef& f : files.value()) {
          if (f.dataset != "gone" || f.kind != FileRef::Kind::kShard) continue;
          ++listed;
          char name[32];
          std::snprintf(name, sizeof(name), "/%06u.shard", f.seq);
          victim = dir + name;
        }
        for (const auto& e : std::filesystem::directory_iterator(dir)) on_disk += e.path().extension() == ".shard";
        return listed > 0 && listed == on_disk;
      },
      30s));
  ASSERT_TRUE(std::filesystem::remove(victim)) << victim;
  ASSERT_TRUE(Eventually(
      [&] {
        auto reader = ShardReader::Open(victim);
        return reader.ok() && reader.value()->VerifyFile().ok();
      },
      90s))
      << "the scrubber drops the lost copy from the inventory and the repairer fetches it\n"
      << cluster.Process(2).Log();
}

// Node-1's copy of a one-shard dataset of `samples` samples is removed, then
// node-1 alone serves one step of every sample: each record comes from the
// other holder. Checks every sample once with its payload, and that node-1
// fetched them all.
void ExpectOneStepFetchedFromAPeer(uint64_t samples, std::function<std::string(uint64_t)> payload) {
  LocalCluster cluster(Nodes(2));
  auto client = cluster.Connect(0);
  SyntheticIngest how{.labels = 5, .replication = 2, .shard_target_bytes = 1 << 30};  // one shard
  how.payload = payload;
  auto ingested = TryIngestSynthetic(*client, "wide", samples, how);
  ASSERT_TRUE(ingested.ok()) << ingested.status().ToString();
  ASSERT_EQ(ingested->dataset.shards, 1u);
  const std::string dir = cluster.DataDir(0) + "/shards/wide/v1";
  size_t removed = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".shard") removed += std::filesystem::remove(e.path());
  }
  ASSERT_EQ(removed, 1u);
  // One step of every sample, from node-1 alone (no members: it serves all).
  v1::StreamRequest r;
  r.set_dataset("wide");
  r.set_world(1);
  r.set_batch_size(samples);
  std::map<uint64_t, int> seen;
  const grpc::Status end = ReadRawStream(cluster.Address(0), r, [&](const v1::Batch& part) {
    uint64_t offset = 0;
    for (int i = 0; i < part.ids_size(); ++i) {
      ++seen[part.ids(i)];
      EXPECT_TRUE(part.payload().substr(offset, part.sizes(i)) == payload(part.ids(i))) << "id " << part.ids(i);
      offset += part.sizes(i);
    }
  });
  ASSERT_TRUE(end.ok()) << end.error_message() << "\n" << cluster.Process(0).Log();
  EXPECT_EQ(seen.size(), samples);
  EXPECT_EQ(seen.rbegin()->first, samples - 1);
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](const auto& e) { return e.second == 1; }));
  EXPECT_GE(Metric(cluster.Process(0).metrics_address(), "strata_proxied_records_total"), static_cast<double>(samples));
}

// A peer reads at most InputLimits::kMaxRecordsPerRead records a call: more
// are asked in pieces (one big read was refused by every holder, and the
// step failed as if none were up).
TEST(DamageTest, AStepNeedingMoreRecordsOfOneShardThanAPeerReadsAtOnceIsServed) {
  ExpectOneStepFetchedFromAPeer(InputLimits::kMaxRecordsPerRead + 5000, [](uint64_t i) { return std::to_string(i); });
}

// A peer's reply stops at InputLimits::kMaxReadReplyBytes: 40 MiB of records
// come in three replies from the same holder, joined in order.
TEST(DamageTest, AStepNeedingMoreBytesOfOneShardThanAPeerSendsAtOnceIsServed) {
  ExpectOneStepFetchedFromAPeer(40, [](uint64_t i) {
    std::string p(size_t{1} << 20, static_cast<char>('a' + i % 26));
    p.replace(0, std::to_string(i).size(), std::to_string(i));
    return p;
  });
}

// A stratum index damaged on one node before any stream read it: that node's
// stratified stream fails when it reads the damaged block, the client fails
// over to the other nodes (every sample still once), and the copy is
// quarantined and fetched again; the next epoch is the same one in full.
TEST(DamageTest, DamagedStratumIndexFailsOverAndIsRepaired) {
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

}  // namespace
}  // namespace strata::testing
