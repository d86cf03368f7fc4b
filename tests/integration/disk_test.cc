// Disk watermarks with real stratad processes. Each node is told how much
// free space to report (stratad's test-only --test-disk-free-bytes), so no
// disk is filled: below the low watermark ingests are refused with
// RESOURCE_EXHAUSTED naming the node and its free space (and so are
// replicas sent to it); a node below the high
// watermark gets no new replicas while the others do (under static and etcd
// membership, which carry the disk figures); `strata status` shows
// free and total bytes. Also `strata status` against a node killed with kill -9.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "common/placement.h"
#include "strata/v1/cluster.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

nlohmann::json StatusJson(const std::string& servers) {
  CommandResult r = RunCommand({StrataCliBinary(), "status", "--json", "--server", servers});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

TEST(DiskTest, IngestIsRefusedBelowTheLowWatermark) {
  TempDir dir;
  StratadProcess::Options o;
  o.data_dir = dir.Join("data");
  o.node_id = "tight";
  o.extra_args = {"--test-disk-free-bytes", "3MiB", "--disk-low-watermark", "64MiB", "--disk-high-watermark", "128MiB"};
  auto node = StratadProcess::Start(o);
  ASSERT_NE(node, nullptr);
  auto client = Client::Connect(node->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  IngestOptions io;
  io.dataset = "refused";
  Status error;
  auto writer = client.value()->StartIngest(io);
  if (writer.ok()) {
    Sample s;
    s.key = "k";
    s.fields.push_back({"bin", "x"});
    error = writer.value()->Write(s);
    if (error.ok()) error = writer.value()->Commit().status();
  } else {
    error = writer.status();
  }
  EXPECT_EQ(error.code(), Code::kResourceExhausted) << error.ToString();
  EXPECT_NE(error.message().find("tight refuses the ingest of refused"), std::string::npos) << error.ToString();
  EXPECT_NE(error.message().find("3.0 MiB free of"), std::string::npos) << error.ToString();
  EXPECT_NE(error.message().find("below disk_low_watermark (64.0 MiB)"), std::string::npos) << error.ToString();
  auto listed = client.value()->ListDatasets();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty()) << "nothing of the refused ingest is listed";

  // An incoming replica (the peer service's PutFile) is refused the same way.
  {
    auto peer = v1::PeerService::NewStub(grpc::CreateChannel(node->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    v1::PutFileReply put;
    auto stream = peer->PutFile(&context, &put);
    v1::FileChunk chunk;
    chunk.mutable_file()->set_dataset("elsewhere");
    chunk.mutable_file()->set_version(1);
    chunk.mutable_file()->set_seq(0);
    chunk.set_size(4);
    chunk.set_data("abcd");
    stream->Write(chunk);
    stream->WritesDone();
    const grpc::Status refused = stream->Finish();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
    EXPECT_NE(refused.error_message().find("tight refuses a replica of elsewhere@1/"), std::string::npos)
        << refused.error_message();
  }

  // strata status shows the figures and the state.
  const nlohmann::json s = StatusJson(node->address());
  ASSERT_FALSE(s.is_null());
  const auto& me = s["nodes"][0];
  EXPECT_EQ(me.value("disk_free_bytes", std::string()), std::to_string(3 << 20)) << me.dump(2);
  EXPECT_GT(std::stoull(me.value("disk_total_bytes", std::string("0"))), 3ull << 20) << me.dump(2);
  EXPECT_EQ(me.value("disk_state", std::string()), "refusing writes");
  CommandResult text = RunCommand({StrataCliBinary(), "status", "--server", node->address()});
  EXPECT_NE(text.out.find("3.00 MiB of "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("refusing writes"), std::string::npos) << text.out;

  // And /metrics has the same figures.
  CommandResult metrics = RunCommand({"/usr/bin/curl", "-s", "http://" + node->metrics_address() + "/metrics"});
  auto gauge = [&](const std::string& name) {
    std::smatch m;
    if (!std::regex_search(metrics.out, m, std::regex(name + R"(\{node="tight"\} (\S+))"))) return -1.0;
    return std::stod(m[1]);
  };
  EXPECT_EQ(gauge("strata_disk_free_bytes"), 3.0 * (1 << 20)) << metrics.out;
  EXPECT_EQ(gauge("strata_disk_low_watermark_bytes"), 64.0 * (1 << 20)) << metrics.out;
  EXPECT_EQ(gauge("strata_disk_high_watermark_bytes"), 128.0 * (1 << 20)) << metrics.out;
}

// A dataset whose home (ingest coordinator) is not `avoid`, among `members`.
std::string DatasetHomedAwayFrom(const std::vector<std::string>& members, const std::string& avoid) {
  for (int i = 0;; ++i) {
    const std::string name = "spread" + std::to_string(i);
    if (RankMembers(DatasetHomeKey(name), members).front() != avoid) return name;
  }
}

// With `o`'s membership: the others learn from it that node-3 is full (static:
// its heartbeat's reply; etcd: its registration).
void ExpectNoNewReplicasOnTheFullNode(LocalCluster::Options o) {
  o.nodes = 3;
  // Watermarks the host's real free space is above, whatever its disk...
  o.node_args[0] = o.node_args[1] = {"--disk-low-watermark", "1MiB", "--disk-high-watermark", "2MiB"};
  // ...but node-3 has room (above the low watermark) but is below the high one.
  o.node_args[2] = {"--test-disk-free-bytes", "100MiB", "--disk-low-watermark", "10MiB",
                    "--disk-high-watermark",  "1TiB"};
  LocalCluster cluster(o);
  const std::vector<std::string> members = {cluster.Id(0), cluster.Id(1), cluster.Id(2)};
  // The others learn that node-3 is full: wait until both say so.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Eventually(
        [&] {
          const auto s = StatusJson(cluster.Address(i));
          if (s.is_null()) return false;
          for (const auto& n : s["nodes"]) {
            if (n.is_object() && n.value("node_id", std::string()) == cluster.Id(i)) {
              for (const auto& f : n.value("full_nodes", nlohmann::json::array())) {
                if (f == cluster.Id(2)) return true;
              }
            }
          }
          return false;
        },
        30s))
        << cluster.Id(i) << " never heard that node-3 is full";
  }
  auto client = cluster.Connect(0);
  const std::string dataset = DatasetHomedAwayFrom(members, cluster.Id(2));
  IngestOptions io;
  io.dataset = dataset;
  io.replication = 2;
  io.write_policy = WritePolicy::kSync;
  io.shard_target_bytes = 16 << 10;
  auto writer = client->StartIngest(io);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  for (uint64_t i = 0; i < 2000; ++i) {
    Sample s;
    s.key = "k" + std::to_string(i);
    s.label = SyntheticLabel(i, 5);
    s.fields.push_back({"bin", SyntheticPayload(i)});
    ASSERT_TRUE(writer.value()->Write(s).ok());
  }
  auto reply = writer.value()->Commit();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  const uint32_t shards = reply->dataset.shards;
  ASSERT_GT(shards, 4u);

  // Placement alone would give node-3 some of these shards.
  uint32_t homed_on_3 = 0;
  for (uint32_t seq = 0; seq < shards; ++seq) {
    const auto h = Holders(ShardFileKey(dataset, reply->dataset.version, seq), members, 2);
    homed_on_3 += std::find(h.begin(), h.end(), cluster.Id(2)) != h.end();
  }
  ASSERT_GT(homed_on_3, 0u);

  // node-3's repair loop sees what it lacks (so a round has run) and pulls
  // none of it; the shards are not short of copies for that (the copies it
  // would hold are on the other two nodes, as that loop's count finds).
  ASSERT_TRUE(Eventually(
      [&] {
        const auto s = StatusJson(cluster.Address(2));
        if (s.is_null()) return false;
        const auto me = s.value("node", nlohmann::json::object());
        return std::stoull(me.value("repair", nlohmann::json::object()).value("files_missing", std::string("0"))) > 0 &&
               std::stoull(me.value("shards_under_replicated", std::string("0"))) == 0;
      },
      30s));

  std::map<std::string, std::set<uint32_t>> held;
  for (int i = 0; i < 3; ++i) {
    auto files = client->ListNodeFiles(cluster.Address(i));
    ASSERT_TRUE(files.ok()) << files.status().ToString();
    for (const auto& f : files.value()) {
      if (f.dataset == dataset && f.kind == FileRef::Kind::kShard) held[cluster.Id(i)].insert(f.seq);
    }
  }
  EXPECT_TRUE(held[cluster.Id(2)].empty()) << "node-3 holds " << held[cluster.Id(2)].size() << " shards";
  for (uint32_t seq = 0; seq < shards; ++seq) {
    EXPECT_TRUE(held[cluster.Id(0)].count(seq) && held[cluster.Id(1)].count(seq)) << "shard " << seq;
  }
  // Every sample is still served.
  StreamOptions so;
  so.dataset = dataset;
  so.batch_size = 64;
  const RankRun run = StreamAll(*client, so);
  uint64_t samples = 0;
  for (const auto& b : run.batches) samples += b.size();
  EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  EXPECT_EQ(samples, 2000u);

  // Three copies need node-3: the ingest is refused before any sample is
  // sent, and says which node cannot take a copy and why.
  SyntheticIngest three;
  three.replication = 3;
  three.options.write_policy = WritePolicy::kSync;
  auto refused = TryIngestSynthetic(*client, dataset, 50, three);  // homed away from node-3, as above
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kResourceExhausted) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("needs 3 durable copies but only 2 of the cluster's 3 nodes can take one"),
            std::string::npos)
      << refused.status().ToString();
  EXPECT_NE(refused.status().message().find(cluster.Id(2) + " is full (free space below its disk_high_watermark)"),
            std::string::npos)
      << refused.status().ToString();
}

TEST(DiskTest, ANodeBelowTheHighWatermarkGetsNoNewReplicasWhileTheOthersDo) {
  ExpectNoNewReplicasOnTheFullNode(LocalCluster::Options());
}

TEST(DiskTest, UnderEtcdMembershipTheFullNodeGetsNoNewReplicasEither) {
  if (auto why = EtcdProcess::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto etcd = EtcdProcess::Start();
  ASSERT_NE(etcd, nullptr);
  LocalCluster::Options o;
  o.etcd = etcd->endpoint();
  ExpectNoNewReplicasOnTheFullNode(o);
}

TEST(StatusTest, AKilledNodeIsUnreachableAtOnceBesideMembershipsView) {
  LocalCluster::Options o;
  o.nodes = 3;
  // Membership takes a minute to call a silent node down: status must not wait for it.
  o.extra_args = {"--cluster-failure-timeout-ms", "60000"};
  LocalCluster cluster(o);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 30s));
  cluster.Kill(2);
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = RunCommand({StrataCliBinary(), "status", "--json", "--server", cluster.Address(0)});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = nlohmann::json::parse(r.out);
  ASSERT_EQ(s["map"]["nodes"].size(), 3u);
  // Membership still has it up; the status asked it and got no answer.
  EXPECT_EQ(s["map"]["nodes"][2].value("state", std::string()), "NODE_UP") << s["map"].dump(2);
  EXPECT_TRUE(s["nodes"][2].contains("unreachable")) << s["nodes"][2].dump(2);
  EXPECT_TRUE(s["nodes"][0].contains("disk_total_bytes")) << s["nodes"][0].dump(2);
  EXPECT_LT(took, 30s);
  CommandResult text = RunCommand({StrataCliBinary(), "status", "--server", cluster.Address(0)});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  std::smatch row;
  ASSERT_TRUE(std::regex_search(text.out, row, std::regex(cluster.Id(2) + R"(\s+(\S+)\s+(\S+))"))) << text.out;
  EXPECT_EQ(row[1], "up") << text.out;
  EXPECT_EQ(row[2], "unreachable") << text.out;
}

}  // namespace
}  // namespace strata::testing
