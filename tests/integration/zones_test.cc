// Failure domains on a real cluster: 6 stratad processes in 3 zones (given in
// the --peers list), R=3. Every shard gets one copy per zone, `strata describe
// --shards` names them, and a trainer that gives its zone (ClientOptions, or
// `strata stream --zone`) reads from that zone's nodes, every sample exactly
// once, also after one of them dies.
#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kSamples = 600;

LocalCluster::Options SixNodesInThreeZones() {
  LocalCluster::Options o;
  o.nodes = 6;
  o.zones = {"zone-a", "zone-a", "zone-b", "zone-b", "zone-c", "zone-c"};
  // The test counts what each node served: a live node marked down for missed
  // pings on a loaded machine would make the client open its calls again.
  o.failure_timeout_ms = 10000;
  return o;
}

std::string ZoneOfNode(const std::string& id) {
  static const std::map<std::string, std::string> kZones = {{"node-1", "zone-a"}, {"node-2", "zone-a"},
                                                            {"node-3", "zone-b"}, {"node-4", "zone-b"},
                                                            {"node-5", "zone-c"}, {"node-6", "zone-c"}};
  auto it = kZones.find(id);
  return it == kZones.end() ? "" : it->second;
}

IngestSummary Ingest(Client& client, const std::string& dataset) {
  IngestOptions o;
  o.dataset = dataset;
  o.replication = 3;
  o.shard_target_bytes = 4 << 10;  // many shards
  auto writer = client.StartIngest(o);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  if (!writer.ok()) return {};
  for (uint64_t i = 0; i < kSamples; ++i) {
    Sample s;
    s.key = "k" + std::to_string(i);
    s.label = SyntheticLabel(i, 4);
    s.fields.push_back({"bin", SyntheticPayload(i)});
    const Status st = writer.value()->Write(s);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return {};
  }
  auto reply = writer.value()->Commit();
  EXPECT_TRUE(reply.ok()) << reply.status().ToString();
  return reply.ok() ? reply.value() : IngestSummary();
}

bool OneCopyPerZone(const std::map<uint32_t, std::set<std::string>>& copies, uint32_t shards) {
  if (copies.size() != shards) return false;
  for (const auto& [seq, nodes] : copies) {
    std::set<std::string> zones;
    for (const auto& n : nodes) zones.insert(ZoneOfNode(n));
    if (nodes.size() != 3 || zones.size() != 3) return false;
  }
  return true;
}

std::map<std::string, uint64_t> ServedByNode(LocalCluster& cluster, Client& client) {
  std::map<std::string, uint64_t> out;
  for (int i = 0; i < cluster.size(); ++i) {
    auto s = client.GetNodeStatus(cluster.Address(i));
    if (s.ok()) out[cluster.Id(i)] = s->samples_served;
  }
  return out;
}

// Served samples since `before`, summed over `nodes`.
uint64_t ServedSince(const std::map<std::string, uint64_t>& before, const std::map<std::string, uint64_t>& now,
                     std::initializer_list<const char*> nodes) {
  uint64_t sum = 0;
  for (const char* n : nodes) {
    auto b = before.find(n), a = now.find(n);
    if (a != now.end()) sum += a->second - (b == before.end() ? 0 : b->second);
  }
  return sum;
}

// The counters once `nodes` have counted at least `samples` more than in
// `before`: a server counts a part when gRPC reports it written, which may be
// just after the client has it.
std::map<std::string, uint64_t> ServedOnce(LocalCluster& cluster, Client& client,
                                           const std::map<std::string, uint64_t>& before,
                                           std::initializer_list<const char*> nodes, uint64_t samples) {
  std::map<std::string, uint64_t> now;
  Eventually(
      [&] {
        now = ServedByNode(cluster, client);
        return ServedSince(before, now, nodes) >= samples;
      },
      std::chrono::seconds(10));
  return now;
}

// One epoch on one rank from a client in `zone`; every id once.
void StreamEpochExactlyOnce(LocalCluster& cluster, int seed_node, const std::string& zone, uint64_t epoch) {
  ClientOptions co;
  co.zone = zone;
  co.stall_timeout_ms = 30000;  // a node that dies fails its calls at once; a slow machine must not look like one
  auto client = Client::Connect(cluster.Address(seed_node), co);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  StreamOptions o;
  o.dataset = "zoned";
  o.batch_size = 16;
  o.seed = 7;
  o.epoch = epoch;
  const RankRun run = StreamAll(**client, o);
  EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  std::map<uint64_t, int> seen;
  for (const Batch& b : run.batches) {
    for (size_t i = 0; i < b.size(); ++i) {
      ++seen[b.ids()[i]];
      EXPECT_EQ(b.sample(i), SyntheticPayload(b.ids()[i]));
    }
  }
  EXPECT_EQ(seen.size(), kSamples);
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << "id " << id;
}

TEST(ZonesTest, CopiesSpanZonesAndZonedReadersReadNearby) {
  LocalCluster cluster(SixNodesInThreeZones());
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 6; }, 20s));
  const ClusterMap map = cluster.Map(0);
  for (const NodeInfo& n : map.nodes) EXPECT_EQ(n.zone, ZoneOfNode(n.id)) << n.id;

  auto client = cluster.Connect(0);
  ASSERT_NE(client, nullptr);
  const IngestSummary summary = Ingest(*client, "zoned");
  const auto shards = static_cast<uint32_t>(summary.dataset.shards);
  ASSERT_GE(shards, 12u);
  // Copies beyond the placement (the ingesting node's own) are released once
  // the holders have theirs.
  EXPECT_TRUE(Eventually([&] { return OneCopyPerZone(ShardHolders(cluster, *client, "zoned"), shards); }, 60s));
  const auto copies = ShardHolders(cluster, *client, "zoned");

  // describe --shards: the same holders, with their zones.
  const CommandResult json =
      RunCommand({StrataCliBinary(), "describe", "zoned", "--shards", "--json", "--server", cluster.Address(1)});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["shards"].size(), shards);
  for (const auto& s : j["shards"]) {
    const uint32_t seq = s.value("seq", 0u);
    std::set<std::string> listed, zones;
    for (const auto& h : s["holders"]) {
      listed.insert(h["node"].get<std::string>());
      zones.insert(h["zone"].get<std::string>());
      EXPECT_EQ(h["zone"].get<std::string>(), ZoneOfNode(h["node"].get<std::string>()));
    }
    EXPECT_EQ(zones.size(), 3u) << "shard " << seq;
    EXPECT_EQ(listed, copies.at(seq)) << "shard " << seq;
  }
  const CommandResult text =
      RunCommand({StrataCliBinary(), "describe", "zoned", "--shards", "--server", cluster.Address(1)});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("HOLDERS (ZONE)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" (zone-b)"), std::string::npos) << text.out;

  // A trainer in zone-b: every shard has a copy there, so zone-b serves all.
  auto before = ServedByNode(cluster, *client);
  StreamEpochExactlyOnce(cluster, 0, "zone-b", 0);
  auto after = ServedOnce(cluster, *client, before, {"node-3", "node-4"}, kSamples);
  EXPECT_EQ(ServedSince(before, after, {"node-3", "node-4"}), kSamples);
  EXPECT_GT(after["node-3"], before["node-3"]);
  EXPECT_GT(after["node-4"], before["node-4"]);
  for (const char* far : {"node-1", "node-2", "node-5", "node-6"}) EXPECT_EQ(after[far], before[far]) << far;

  // The same through `strata stream --zone` (a long stall timeout, as above:
  // a reopened call resends its part and the counts would include it twice).
  before = ServedByNode(cluster, *client);
  const CommandResult cli =
      RunCommand({StrataCliBinary(), "stream", "--dataset", "zoned", "--batch-size", "16", "--epoch", "2", "--zone",
                  "zone-c", "--stall-timeout", "30000", "--quiet", "--server", cluster.Address(0)});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  after = ServedOnce(cluster, *client, before, {"node-5", "node-6"}, kSamples);
  EXPECT_EQ(ServedSince(before, after, {"node-5", "node-6"}), kSamples);
  for (const char* far : {"node-1", "node-2", "node-3", "node-4"}) EXPECT_EQ(after[far], before[far]) << far;

  // node-3 dies: its samples fail over to the shards' other holders (zone-b
  // has no second copy of them), still exactly once.
  cluster.Kill(2);
  before = ServedByNode(cluster, *client);
  StreamEpochExactlyOnce(cluster, 0, "zone-b", 1);
  after = ServedOnce(cluster, *client, before, {"node-1", "node-2", "node-4", "node-5", "node-6"}, kSamples);
  EXPECT_GT(after["node-4"], before["node-4"]);
  EXPECT_GT(ServedSince(before, after, {"node-1", "node-2", "node-5", "node-6"}), 0u)
      << "node-3's shards were served by the other zones";
}

// A trainer in zone-a reads every sample from node-1, the one node there. One
// of node-1's shards is damaged: node-1 detects it on the read, sets the copy
// aside, and serves that shard's samples with records fetched from node-2 (a
// peer fetch inside the batch build, asynchronous on the server), so the
// epoch is whole and exact without the client failing over.
TEST(ZonesTest, ADamagedCopyNearTheReaderIsServedFromAFarCopy) {
  LocalCluster::Options o;
  o.nodes = 2;
  o.zones = {"zone-a", "zone-b"};
  o.failure_timeout_ms = 10000;
  LocalCluster cluster(o);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 2 && cluster.UpIn(1) == 2; }, 20s));
  auto client = cluster.Connect(0);
  ASSERT_NE(client, nullptr);
  SyntheticIngest how;
  how.replication = 2;
  how.shard_target_bytes = 16 << 10;
  auto summary = TryIngestSynthetic(*client, "near", kSamples, how);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_TRUE(
      Eventually([&] { return ShardHolders(cluster, *client, "near").size() == summary->dataset.shards; }, 30s));
  // Damage the middle of one of node-1's shard files.
  std::string victim;
  for (const auto& e : std::filesystem::directory_iterator(cluster.DataDir(0) + "/shards/near/v1")) {
    if (e.path().extension() == ".shard") victim = e.path().string();
  }
  ASSERT_FALSE(victim.empty());
  FlipByte(victim, std::filesystem::file_size(victim) / 2, 0x10);

  ClientOptions co;
  co.zone = "zone-a";
  co.stall_timeout_ms = 30000;
  StreamOptions so;
  so.dataset = "near";
  so.batch_size = 20;
  auto opened = cluster.Open(0, co, so);
  ASSERT_NE(opened.stream, nullptr);
  std::map<uint64_t, int> seen;
  Batch b;
  Status end;
  while ((end = opened.stream->Next(&b)).ok()) {
    for (size_t i = 0; i < b.size(); ++i) {
      ++seen[b.ids()[i]];
      EXPECT_EQ(b.sample(i), SyntheticPayload(b.ids()[i])) << "id " << b.ids()[i];
    }
  }
  EXPECT_EQ(end.code(), Code::kOutOfRange) << end.ToString();
  EXPECT_EQ(seen.size(), kSamples);
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << "id " << id;
  EXPECT_EQ(opened.stream->stats().failovers, 0u) << "node-1 served its share itself";
  const std::string metrics = cluster.Process(0).metrics_address();
  EXPECT_GE(Metric(metrics, "strata_checksum_failures_total"), 1) << "node-1 read the damaged record";
  EXPECT_GE(Metric(metrics, "strata_proxied_records_total"), 1) << "and served it with a record from node-2";
}

// libstrata's own messages (here: a zone no node is in) go to stderr, through
// the spdlog logger named "strata", never to the trainer's stdout, which it
// keeps for its own output. They went to spdlog's default logger, on stdout.
TEST(ZonesTest, TheClientWarnsOnStderrNotStdout) {
  LocalCluster::Options o;
  o.nodes = 2;
  o.zones = {"zone-a", "zone-b"};
  LocalCluster cluster(o);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 2 && cluster.UpIn(1) == 2; }, 20s));
  auto client = cluster.Connect(0);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(TryIngestSynthetic(*client, "told", 100, {.replication = 2}).ok());
  ClientOptions co;
  co.zone = "zone-x";
  StreamOptions so;
  so.dataset = "told";
  so.batch_size = 10;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  auto opened = cluster.Open(0, co, so);
  Batch b;
  const Status first = opened.stream != nullptr ? opened.stream->Next(&b) : Status::Internal("not opened");
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(first.ok()) << first.ToString();
  EXPECT_EQ(out.find("strata:"), std::string::npos) << out;
  EXPECT_NE(err.find("no node of the cluster is in zone 'zone-x'"), std::string::npos) << err;
}

}  // namespace
}  // namespace strata::testing
