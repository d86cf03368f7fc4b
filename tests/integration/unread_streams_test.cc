// Streams nobody reads, against a real stratad.
//
// Hundreds of streams opened and never read, with --memory-budget: the
// server's resident memory stays within the budget, because streams share a
// bounded number of built-but-unsent bytes, and a stream that would exceed it
// is refused with RESOURCE_EXHAUSTED instead of being served from unbounded
// memory. The streams it admitted then deliver their whole epoch, every sample
// once.
//
// A libstrata stream whose trainer stops reading: the node sends what the
// client buffers ahead (max_buffered_parts steps) and one fixed HTTP/2 window
// (ClientOptions::receive_window_bytes), then waits; the epoch then arrives
// whole, every sample once. That window is for a near node: Connect measures
// the round trip, and through a slow link the client takes gRPC's growing
// window instead, and streams the epoch through it.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "strata/v1/data.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/support/slow_link.h"

namespace strata::testing {
namespace {

// 64 KiB records are sparse in the cache's 2 MiB blocks, so batches copy
// them (server/serve/batch_stream.cc): what a stream holds unsent is its own memory.
constexpr uint64_t kSamples = 800;
constexpr size_t kPayloadBytes = 64 << 10;  // 50 MiB in all; a batch of 32 is 2 MiB
constexpr uint64_t kBudget = 256ull << 20;
constexpr int kStreams = 200;

std::string Payload(uint64_t i) {
  std::string p(kPayloadBytes, static_cast<char>('a' + i % 26));
  const std::string id = std::to_string(i);
  p.replace(0, id.size(), id);
  return p;
}

uint64_t ResidentBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) << 10;
  }
  return 0;
}

TEST(UnreadStreamsTest, TwoHundredUnreadStreamsStayWithinTheMemoryBudget) {
  TempDir dir;
  StratadProcess::Options o;
  o.data_dir = dir.Join("data");
  o.extra_args = {"--memory-budget", "256MiB", "--log-level", "info"};
  auto server = StratadProcess::Start(o);
  ASSERT_NE(server, nullptr);
  {
    auto client = Client::Connect(server->address());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    ASSERT_EQ(IngestSynthetic(*client.value(), "big", kSamples, 4, Payload).dataset.samples, kSamples);
  }

  // Like a trainer that stopped reading: the client takes no more than the
  // initial HTTP/2 window of each stream (no BDP probing to widen it), so
  // what the server builds stays in the server.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetMaxReceiveMessageSize(-1);
  auto channel = grpc::CreateCustomChannel(server->address(), grpc::InsecureChannelCredentials(), args);
  auto stub = v1::DataService::NewStub(channel);
  struct Open {
    std::unique_ptr<grpc::ClientContext> context = std::make_unique<grpc::ClientContext>();
    std::unique_ptr<grpc::ClientReader<v1::Batch>> reader;
  };
  std::vector<Open> streams(kStreams);
  v1::StreamRequest request;
  request.set_dataset("big");
  request.set_world(1);
  request.set_batch_size(32);
  for (size_t i = 0; i < streams.size(); ++i) {
    request.set_seed(i);  // each its own order: no two streams read the same records at once
    streams[i].reader = stub->StreamBatches(streams[i].context.get(), request);
  }

  // Every stream has been admitted or refused by the server...
  double admitted = -1, refused = -1;
  for (int tries = 0; tries < 3000; ++tries) {
    admitted = Metric(server->metrics_address(), "strata_active_streams");
    refused = Metric(server->metrics_address(), "strata_requests_rejected_total");
    if (admitted >= 0 && refused >= 0 && admitted + refused >= kStreams) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(admitted + refused, kStreams) << "admitted " << admitted << ", refused " << refused;
  // ...and for a while the admitted ones build what they may while nobody reads.
  uint64_t peak = 0;
  for (int i = 0; i < 300; ++i) {
    peak = std::max(peak, ResidentBytes(server->pid()));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(peak, 0u) << "the server's memory could not be read";
  std::printf("200 unread streams: %.0f admitted, %.0f refused; server VmRSS peak %llu MiB, budget %llu MiB\n",
              admitted, refused, static_cast<unsigned long long>(peak >> 20),
              static_cast<unsigned long long>(kBudget >> 20));
  EXPECT_LE(peak, kBudget) << "VmRSS peaked at " << (peak >> 20) << " MiB";
  EXPECT_GT(refused, 0) << "200 streams of 2 MiB batches cannot all fit in half of a 256 MiB budget";
  EXPECT_GT(admitted, 0);

  // Refused streams say why; admitted ones deliver the whole epoch once.
  int saw_refused = 0, saw_complete = 0;
  for (Open& s : streams) {
    v1::Batch batch;
    std::set<uint64_t> ids;
    while (s.reader->Read(&batch)) {
      for (int i = 0; i < batch.ids_size(); ++i) EXPECT_TRUE(ids.insert(batch.ids(i)).second) << batch.ids(i);
    }
    grpc::Status end = s.reader->Finish();
    if (end.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++saw_refused;
      EXPECT_TRUE(ids.empty());
      EXPECT_NE(end.error_message().find("limit of 128 MiB"), std::string::npos) << end.error_message();
    } else {
      EXPECT_TRUE(end.ok()) << end.error_message();
      EXPECT_EQ(ids.size(), kSamples);
      ++saw_complete;
    }
  }
  EXPECT_EQ(saw_refused, static_cast<int>(refused));
  EXPECT_EQ(saw_complete, static_cast<int>(admitted));
  streams.clear();
  EXPECT_EQ(server->Terminate(), 0);
}

// 64 KiB samples in batches of 8: steps of 512 KiB, 50 MiB in all. The
// trainer takes one batch and stops. With it, the stream holds 10 steps: the
// trainer's, 8 buffered ahead (max_buffered_bytes would allow 32) and one the
// reader keeps until there is room; gRPC takes at most the default window of
// 1 MiB beyond them. The node stops having sent 6 MiB here (the bound allows
// one step more); with gRPC's growing window (receive_window_bytes 0) it
// sent 12.5 to 14 MiB.
TEST(UnreadStreamsTest, AStoppedTrainerHoldsItsBufferedStepsAndOneWindow) {
  TempDir dir;
  StratadProcess::Options o;
  o.data_dir = dir.Join("data");
  auto server = StratadProcess::Start(o);
  ASSERT_NE(server, nullptr);
  auto client = Client::Connect(server->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_EQ(IngestSynthetic(*client.value(), "paused", kSamples, 4, Payload).dataset.samples, kSamples);

  const ClientOptions defaults;
  ASSERT_EQ(defaults.receive_window_bytes, 1 << 20);
  ASSERT_EQ(defaults.max_buffered_parts, 8u);
  StreamOptions so;
  so.dataset = "paused";
  so.batch_size = 8;
  auto stream = client.value()->OpenStream(so);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  std::set<uint64_t> ids;
  Batch batch;
  ASSERT_TRUE(stream.value()->Next(&batch).ok());
  for (uint64_t id : batch.ids()) EXPECT_TRUE(ids.insert(id).second) << id;

  // The node sends until the windows are full; it has stopped once its count
  // holds still for half a second.
  const auto served = [&] { return Metric(server->metrics_address(), "strata_served_bytes_total"); };
  double last = -1, now = served();
  for (int tries = 0; tries < 40 && now != last; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    last = now;
    now = served();
  }
  ASSERT_EQ(now, last) << "the node never stopped sending to a trainer that stopped reading";
  const double step = 8.0 * kPayloadBytes;
  std::printf("a stopped trainer: the node sent %.1f MiB (%.1f steps of 512 KiB)\n", now / (1 << 20), now / step);
  EXPECT_LE(now, 11 * step + defaults.receive_window_bytes) << "the node sent " << now / step << " steps";
  EXPECT_GE(now, 9 * step) << "the stream buffers 8 steps ahead of the trainer";

  // The trainer comes back: the rest of the epoch, every sample once.
  Status s;
  while ((s = stream.value()->Next(&batch)).ok()) {
    for (uint64_t id : batch.ids()) EXPECT_TRUE(ids.insert(id).second) << id;
  }
  EXPECT_EQ(s.code(), Code::kOutOfRange) << s.ToString();
  EXPECT_EQ(ids.size(), kSamples);
  EXPECT_EQ(server->Terminate(), 0);
}

// A fixed window moves at most its size per round trip: 1 MiB across a link
// that holds each chunk 20 ms (a round trip of 40 ms or more) would be 26
// MB/s. Connect measures the round trip and takes gRPC's window there; it
// keeps a fixed one the node is near enough for (64 MiB moves 1 GB/s up to a
// 67 ms round trip, which a loopback health check never takes). Nothing here
// depends on how fast anything runs: the link's delay is a floor.
TEST(UnreadStreamsTest, AFarNodeGetsGrpcsGrowingWindowAndStreamsThroughIt) {
  SingleNode node;
  constexpr uint64_t kFarSamples = 120;
  ASSERT_EQ(IngestSynthetic(node.client(), "far", kFarSamples, 4).dataset.samples, kFarSamples);
  ClientOptions wide;
  wide.receive_window_bytes = 64 << 20;
  auto near = Client::Connect(node.address(), wide);
  ASSERT_TRUE(near.ok()) << near.status().ToString();
  EXPECT_EQ(near.value()->receive_window_bytes(), 64 << 20);

  SlowLink link(node.address(), std::chrono::milliseconds(20));
  ClientOptions gRPCs;
  gRPCs.receive_window_bytes = 0;  // 0 is never measured or changed
  auto own = Client::Connect(link.address(), gRPCs);
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own.value()->receive_window_bytes(), 0);

  auto far = Client::Connect(link.address());  // the default, 1 MiB
  ASSERT_TRUE(far.ok()) << far.status().ToString();
  EXPECT_EQ(far.value()->receive_window_bytes(), 0) << "a 1 MiB window kept across a round trip of 40 ms or more";
  const uint64_t before = link.bytes();
  const RankRun run = StreamDataset(*far.value(), "far", 16);
  EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  std::set<uint64_t> ids;
  for (const Batch& b : run.batches) {
    for (uint64_t id : b.ids()) EXPECT_TRUE(ids.insert(id).second) << id;
  }
  EXPECT_EQ(ids.size(), kFarSamples);
  EXPECT_GT(link.bytes(), before) << "the stream went through the slow link";
  EXPECT_EQ(node.Stop(), 0);
}

}  // namespace
}  // namespace strata::testing
