// stratad's health checks on a real process: the standard gRPC health service
// on the gRPC port, /healthz and /readyz on the metrics port, before and
// during the drain that SIGTERM starts.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

// grpc.health.v1.HealthCheckRequest{service} encoded by hand: field 1, a
// string (the message has no other field).
std::string HealthRequest(const std::string& service) {
  std::string out;
  if (service.empty()) return out;
  out.push_back(0x0a);
  out.push_back(static_cast<char>(service.size()));  // short names only
  return out + service;
}

// Calls grpc.health.v1.Health/Check; returns the gRPC status and the reply's
// serving status (field 1, an enum: 1 SERVING, 2 NOT_SERVING; 0 if absent).
std::pair<grpc::Status, int> CheckHealth(const std::string& address, const std::string& service) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  const std::string request = HealthRequest(service);
  grpc::Slice slice(request);
  grpc::ByteBuffer in(&slice, 1), out;
  grpc::Status status;
  bool done = false;
  std::mutex mu;
  std::condition_variable cv;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &in, &out, [&](grpc::Status s) {
    std::lock_guard<std::mutex> lock(mu);
    status = std::move(s);
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  if (!status.ok()) return {status, 0};
  std::vector<grpc::Slice> slices;
  std::string reply;
  if (out.Dump(&slices).ok()) {
    for (const auto& s : slices) reply.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  if (reply.size() == 2 && reply[0] == 0x08) return {status, reply[1]};
  return {status, reply.empty() ? 0 : -1};  // -1: a reply this test cannot read
}

// GET http://ADDRESS/PATH: "CODE BODY" (curl, as the other integration tests scrape).
std::string HttpGet(const std::string& address, const std::string& path) {
  CommandResult r = RunCommand({"/usr/bin/curl", "-s", "-w", " %{http_code}", "http://" + address + path}, 10);
  return r.out;
}

class HealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A long drain, so that the test can look at a node while it drains.
    const std::string config = dir_.Join("stratad.yaml");
    std::ofstream(config) << "drain_timeout_ms: 15000\n";
    StratadProcess::Options o;
    o.data_dir = dir_.Join("data");
    o.extra_args = {"--config", config};
    node_ = StratadProcess::Start(o);
    ASSERT_NE(node_, nullptr);
  }

  TempDir dir_;
  std::unique_ptr<StratadProcess> node_;
};

TEST_F(HealthTest, ServingAndReadyUntilTheDrainStarts) {
  auto [status, serving] = CheckHealth(node_->address(), "");
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(serving, 1) << "SERVING";
  EXPECT_EQ(CheckHealth(node_->address(), "no.such.Service").first.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(HttpGet(node_->metrics_address(), "/healthz"), "ok\n 200");
  EXPECT_EQ(HttpGet(node_->metrics_address(), "/readyz"), "ready\n 200");

  // An ingest left open holds the drain for drain_timeout_ms.
  auto client = Client::Connect(node_->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  IngestOptions options;
  options.dataset = "held-open";
  auto writer = client.value()->StartIngest(options);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  Sample sample;
  sample.key = "k0";
  sample.fields.push_back(Field{"", "x"});
  ASSERT_TRUE(writer.value()->Write(sample).ok());
  ASSERT_TRUE(Eventually([&] { return client.value()->GetStatus().value_or(NodeStatus{}).active_ingests == 1; },
                         std::chrono::seconds(10)));

  node_->Signal(SIGTERM);
  EXPECT_TRUE(Eventually([&] { return CheckHealth(node_->address(), "").second == 2; }, std::chrono::seconds(10)))
      << "NOT_SERVING once the drain starts";
  EXPECT_EQ(HttpGet(node_->metrics_address(), "/readyz"), "not ready: draining: shutting down\n 503");
  EXPECT_EQ(HttpGet(node_->metrics_address(), "/healthz"), "ok\n 200") << "draining is alive";
  writer.value()->Abort();
  EXPECT_EQ(node_->Terminate(), 0);
}

// A daemon is never killed by a peer that closes a connection it writes to:
// stratad ignores SIGPIPE, with the metrics endpoint off too (whose HTTP
// library ignores it when it runs). Killed, it would go without a log line or
// a core file.
TEST(StratadSignalsTest, SigpipeDoesNotStopStratad) {
  TempDir dir;
  StratadProcess::Options o;
  o.data_dir = dir.Join("data");
  o.metrics_listen = "";
  auto node = StratadProcess::Start(o);
  ASSERT_NE(node, nullptr);
  ASSERT_EQ(kill(node->pid(), SIGPIPE), 0);
  // An answer means the process ran after the signal was delivered.
  auto client = Client::Connect(node->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto status = client.value()->GetNodeStatus(node->address());
  EXPECT_TRUE(status.ok()) << status.status().ToString() << "\n" << node->Log();
  EXPECT_TRUE(node->Running());
}

}  // namespace
}  // namespace strata::testing
