// --peer-listen: the peer service on its own port. The data port then does
// not serve it at all (a firewall can keep everyone but the nodes away from
// it), and a cluster whose nodes dial each other's peer ports replicates an
// ingest and streams an epoch exactly once, with etcd membership too.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <map>

#include "strata/v1/cluster.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

grpc::Status PingAt(const std::string& address) {
  auto stub = v1::PeerService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::PingRequest request;
  request.set_from("peer-listen-test");
  v1::PingReply reply;
  return stub->Ping(&context, request, &reply);
}

TEST(PeerListenTest, DataPortDoesNotServeThePeerService) {
  LocalCluster::Options o;
  o.nodes = 1;
  o.peer_ports = true;
  LocalCluster cluster(o);
  const grpc::Status on_data = PingAt(cluster.Address(0));
  EXPECT_EQ(on_data.error_code(), grpc::StatusCode::UNIMPLEMENTED) << on_data.error_message();
  const grpc::Status on_peer = PingAt(cluster.PeerAddress(0));
  EXPECT_TRUE(on_peer.ok()) << on_peer.error_message();
  // The data and admin services stay on the data port.
  auto client = cluster.Connect(0);
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->GetClusterMap().ok());
}

TEST(PeerListenTest, WithoutItTheDataPortServesThePeerService) {
  LocalCluster::Options o;
  o.nodes = 1;
  LocalCluster cluster(o);
  EXPECT_TRUE(PingAt(cluster.Address(0)).ok());
}

// Safe by default holds for the peer port too: a non-loopback --peer-listen
// without TLS and tokens is refused at start, naming the address.
TEST(PeerListenTest, NonLoopbackPeerPortNeedsTlsAndTokens) {
  TempDir dir;
  CommandResult r = RunCommand({StratadBinary(), "--data-dir", dir.Join("data"), "--listen", "127.0.0.1:0",
                                "--metrics-listen", "", "--peer-listen", "0.0.0.0:0"},
                               30);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("refusing to serve 0.0.0.0:0"), std::string::npos) << r.out << r.err;
}

// A port another stratad serves is in use: a second one (gRPC would share
// it through SO_REUSEPORT and take half its connections) fails to start,
// saying so, on the data port and on the peer port alike.
TEST(PeerListenTest, APortAnotherStratadServesIsRefused) {
  LocalCluster::Options o;
  o.nodes = 1;
  LocalCluster cluster(o);
  TempDir dir;
  for (const std::string flag : {"--listen", "--peer-listen"}) {
    std::vector<std::string> args = {StratadBinary(), "--node-id",        "imposter", "--data-dir",
                                     dir.Join(flag),  "--metrics-listen", ""};
    if (flag != "--listen") args.insert(args.end(), {"--listen", "127.0.0.1:0"});
    args.insert(args.end(), {flag, cluster.Address(0)});
    CommandResult r = RunCommand(args, 30);
    EXPECT_NE(r.exit_code, 0) << flag << ": " << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("cannot listen on " + cluster.Address(0)), std::string::npos)
        << flag << ": " << r.out << r.err;
  }
  EXPECT_TRUE(PingAt(cluster.Address(0)).ok());
}

// Ingests with replication 2 (shards pushed over the peer service) and streams
// one epoch on 3 ranks through node 0, which reads the shards it lacks from
// the others over the peer service: every sample exactly once.
void StreamExactlyOnce(LocalCluster& cluster, const std::string& dataset) {
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3 && cluster.UpIn(1) == 3 && cluster.UpIn(2) == 3; },
                         std::chrono::seconds(20)));
  auto client = cluster.Connect(0);
  ASSERT_NE(client, nullptr);
  IngestOptions io;
  io.dataset = dataset;
  io.replication = 2;
  io.shard_target_bytes = 16 << 10;
  io.write_policy = WritePolicy::kSync;  // every replica holds the version when Commit returns
  auto writer = client->StartIngest(io);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  constexpr uint64_t kSamples = 3000;
  for (uint64_t i = 0; i < kSamples; ++i) {
    Sample s;
    s.key = "k" + std::to_string(i);
    s.label = SyntheticLabel(i, 5);
    s.fields.push_back({"bin", SyntheticPayload(i)});
    ASSERT_TRUE(writer.value()->Write(s).ok());
  }
  auto committed = writer.value()->Commit();
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  // A node that holds no copy learns of the sealed version from the others
  // (version sync), which a slow run (a loaded machine, a sanitizer build)
  // shows takes a moment; the stream asks every node.
  for (int i = 0; i < 3; ++i) {
    auto c = cluster.Connect(i);
    ASSERT_NE(c, nullptr);
    ASSERT_TRUE(Eventually([&] { return c->Describe(dataset).ok(); }, std::chrono::seconds(30)))
        << "node " << i << " never saw the sealed version of " << dataset;
  }
  std::map<uint64_t, int> seen;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    StreamOptions so;
    so.dataset = dataset;
    so.rank = rank;
    so.world = 3;
    so.batch_size = 50;
    const RankRun run = StreamAll(*client, so);
    EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
    for (const Batch& b : run.batches) {
      for (size_t i = 0; i < b.size(); ++i) {
        ++seen[b.ids()[i]];
        EXPECT_EQ(b.sample(i), SyntheticPayload(b.ids()[i]));
      }
    }
  }
  ASSERT_EQ(seen.size(), kSamples);
  for (const auto& [id, count] : seen) ASSERT_EQ(count, 1) << "id " << id;
}

TEST(PeerListenTest, ThreeNodesOnPeerPortsStreamAnEpochExactlyOnce) {
  LocalCluster::Options o;
  o.nodes = 3;
  o.peer_ports = true;
  LocalCluster cluster(o);
  StreamExactlyOnce(cluster, "peerports");
  // Every node's data port refuses the peer service.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(PingAt(cluster.Address(i)).error_code(), grpc::StatusCode::UNIMPLEMENTED) << "node " << i;
  }
}

TEST(PeerListenTest, EtcdRecordsCarryThePeerAddress) {
  if (auto why = EtcdProcess::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto etcd = EtcdProcess::Start();
  ASSERT_NE(etcd, nullptr);
  LocalCluster::Options o;
  o.nodes = 3;
  o.peer_ports = true;
  o.etcd = etcd->endpoint();
  LocalCluster cluster(o);
  StreamExactlyOnce(cluster, "peerports_etcd");
}

}  // namespace
}  // namespace strata::testing
