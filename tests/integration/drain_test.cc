// A node that drains (SIGTERM) and the replicas other nodes are sending it:
// a copy that had begun is waited for and committed whole, and a copy that
// begins during the drain is refused UNAVAILABLE at its first chunk (its
// sender hands it to the next node), never cut off mid-file. The copies are
// sent here by the test through the peer service's PutFile, as a peer's
// replicator sends them (server/cluster/file_transfer.cc), in chunks whose
// pace the test holds: no step of the test depends on timing.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "server/storage/data_dir.h"
#include "strata/v1/cluster.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The temporary files of copies being received (FileReceiver's staging folder).
size_t CopiesBeingReceived(const std::string& data_dir) {
  std::error_code ec;
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(data_dir + "/shards/.incoming", ec)) {
    n += e.path().filename().string().rfind(".tmp.", 0) == 0;
  }
  return n;
}

TEST(DrainTest, ACopyUnderWayIsFinishedAndANewOneIsRefused) {
  TempDir dir;
  // The sender: a node that holds a real shard (a copy is verified whole).
  StratadProcess::Options sender_options;
  sender_options.data_dir = dir.Join("sender");
  sender_options.node_id = "sender";
  auto sender = StratadProcess::Start(sender_options);
  ASSERT_NE(sender, nullptr);
  auto client = Client::Connect(sender->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto ingested = TryIngestSynthetic(*client.value(), "copied", 200, SyntheticIngest{});
  ASSERT_TRUE(ingested.ok()) << ingested.status().ToString();
  v1::FileRef shard;
  shard.set_dataset("copied");
  shard.set_version(ingested->dataset.version);
  shard.set_seq(0);
  const std::string relative = DataDir(sender_options.data_dir).ShardRelativePath("copied", shard.version(), 0);
  const std::string bytes = ReadWhole(sender_options.data_dir + "/" + relative);
  ASSERT_GT(bytes.size(), 2u) << relative;

  // The receiver, with a drain long enough never to run out here.
  const std::string config = dir.Join("receiver.yaml");
  std::ofstream(config) << "drain_timeout_ms: 120000\n";
  StratadProcess::Options receiver_options;
  receiver_options.data_dir = dir.Join("receiver");
  receiver_options.node_id = "receiver";
  receiver_options.extra_args = {"--config", config};
  auto receiver = StratadProcess::Start(receiver_options);
  ASSERT_NE(receiver, nullptr);
  auto peer = v1::PeerService::NewStub(grpc::CreateChannel(receiver->address(), grpc::InsecureChannelCredentials()));

  // A copy begins: its first chunk (the reference, the size, half the bytes)
  // is in the receiver's staging folder before the drain starts.
  grpc::ClientContext under_way_context;
  v1::PutFileReply under_way_reply;
  auto under_way = peer->PutFile(&under_way_context, &under_way_reply);
  v1::FileChunk first;
  *first.mutable_file() = shard;
  first.set_size(bytes.size());
  first.set_data(bytes.substr(0, bytes.size() / 2));
  ASSERT_TRUE(under_way->Write(first));
  ASSERT_TRUE(Eventually([&] { return CopiesBeingReceived(receiver_options.data_dir) == 1; }, 20s));

  receiver->Signal(SIGTERM);
  ASSERT_TRUE(Eventually([&] { return receiver->Log().find("draining:") != std::string::npos; }, 20s))
      << receiver->Log();
  EXPECT_NE(receiver->Log().find("1 incoming copies open"), std::string::npos) << receiver->Log();

  // A copy that begins now is refused at once, and leaves nothing behind.
  {
    grpc::ClientContext context;
    v1::PutFileReply reply;
    auto refused = peer->PutFile(&context, &reply);
    v1::FileChunk chunk;
    *chunk.mutable_file() = shard;
    chunk.mutable_file()->set_seq(1);
    chunk.set_size(bytes.size());
    chunk.set_data(bytes);
    refused->Write(chunk);
    refused->WritesDone();
    const grpc::Status status = refused->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
    EXPECT_NE(status.error_message().find("shutting down"), std::string::npos) << status.error_message();
  }
  EXPECT_TRUE(receiver->Running()) << "the drain waits for the copy under way";
  EXPECT_EQ(CopiesBeingReceived(receiver_options.data_dir), 1u);

  // The copy under way ends, is committed whole, and then the node stops.
  v1::FileChunk rest;
  rest.set_data(bytes.substr(bytes.size() / 2));
  ASSERT_TRUE(under_way->Write(rest));
  under_way->WritesDone();
  const grpc::Status finished = under_way->Finish();
  EXPECT_TRUE(finished.ok()) << finished.error_message();
  EXPECT_FALSE(under_way_reply.already_present());
  EXPECT_EQ(receiver->Terminate(), 0);
  EXPECT_EQ(ReadWhole(receiver_options.data_dir + "/" + relative), bytes);
  EXPECT_FALSE(
      std::filesystem::exists(receiver_options.data_dir + "/" +
                              DataDir(receiver_options.data_dir).ShardRelativePath("copied", shard.version(), 1)));
  EXPECT_EQ(CopiesBeingReceived(receiver_options.data_dir), 0u);
}

}  // namespace
}  // namespace strata::testing

namespace strata::testing {
namespace {

// An ingest still open when the drain's time runs out is ended by the node
// saying so: before, gRPC's shutdown cancelled it ("Cancelling all calls"),
// and the node logged that the client had ended it without a commit.
TEST(DrainTest, AnIngestOpenWhenTheDrainTimeRunsOutIsToldTheNodeIsShuttingDown) {
  SingleNode node("", {"--drain-timeout-ms", "300"});
  IngestOptions o;
  o.dataset = "cut";
  auto writer = node.client().StartIngest(o);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  Sample s;
  s.fields = {{"bin", std::string(64 << 10, 'x')}};
  // The writer keeps sending until a write fails; SIGTERM comes meanwhile.
  std::thread stop([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    node.process().Signal(SIGTERM);
  });
  Status failed;
  for (int i = 0; i < 1000000 && failed.ok(); ++i) {
    s.key = "k" + std::to_string(i);
    failed = (*writer)->Write(s);
  }
  stop.join();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.code(), Code::kUnavailable) << failed.ToString();
  EXPECT_NE(failed.message().find("stratad is shutting down"), std::string::npos) << failed.ToString();
  EXPECT_NE(failed.message().find("nothing was stored"), std::string::npos) << failed.ToString();
  EXPECT_EQ(node.process().Terminate(), 0);
  const std::string log = node.process().Log();
  EXPECT_NE(log.find("this node is shutting down (drain_timeout_ms passed before its commit)"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("the client ended the stream without a commit"), std::string::npos) << log;
}

}  // namespace
}  // namespace strata::testing
