// The client against a node that breaks the protocol (a bug, or a hostile
// node): a node here is a small gRPC server of the test's own that answers
// the cluster map and StreamBatches with what no stratad sends. The client
// must fail the stream with an error naming the node or the step, never
// allocate what a part claims, hang, or buffer without bound.
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "strata/client.h"
#include "strata/v1/admin.grpc.pb.h"
#include "strata/v1/data.grpc.pb.h"

namespace strata {
namespace {

enum class Mode {
  kHugeBatch,    // a part claiming a batch of 2^32 - 1 slots
  kMissingSlot,  // step 0 without slot 1, marked as the node's last part of it
  kStaleFlood,   // step 0, then step 0 again and again, 1 MiB each
};

class Node final : public v1::AdminService::Service, public v1::DataService::Service {
 public:
  explicit Node(Mode mode) : mode_(mode) {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(static_cast<v1::AdminService::Service*>(this));
    builder.RegisterService(static_cast<v1::DataService::Service*>(this));
    server_ = builder.BuildAndStart();
  }
  ~Node() override { server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5)); }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  uint64_t parts_sent() const { return parts_sent_; }

  grpc::Status GetClusterMap(grpc::ServerContext*, const v1::GetClusterMapRequest*, v1::ClusterMap* map) override {
    v1::NodeInfo* n = map->add_nodes();
    n->set_id("rogue-1");
    n->set_address(address());
    n->set_state(v1::NODE_UP);
    map->set_membership("static");
    return grpc::Status::OK;
  }

  grpc::Status StreamBatches(grpc::ServerContext* context, const v1::StreamRequest* request,
                             grpc::ServerWriter<v1::Batch>* writer) override {
    const auto part = [&](uint64_t step, uint32_t batch_size) {
      v1::Batch b;
      b.set_epoch(request->epoch());
      b.set_rank(request->rank());
      b.set_step(step);
      b.set_dataset_version(1);
      b.set_steps_in_epoch(1000);
      b.set_plan_hash(77);
      b.set_batch_size(batch_size);
      b.set_last_part(true);
      return b;
    };
    const auto sample = [](v1::Batch* b, uint32_t slot, const std::string& payload) {
      b->add_slots(slot);
      b->add_ids(b->step() * 2 + slot);
      b->add_labels("x");
      b->add_sizes(payload.size());
      b->mutable_payload()->append(payload);
    };
    const auto write = [&](const v1::Batch& b) {
      if (!writer->Write(b)) return false;
      ++parts_sent_;
      return true;
    };
    switch (mode_) {
      case Mode::kHugeBatch: write(part(request->start_step(), UINT32_MAX)); break;
      case Mode::kMissingSlot:
        for (uint64_t step = 0; step < 20 && !context->IsCancelled(); ++step) {
          v1::Batch b = part(step, 2);
          sample(&b, 0, "a");
          if (step != 0) sample(&b, 1, "b");
          if (!write(b)) break;
        }
        while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        break;
      case Mode::kStaleFlood: {
        v1::Batch b = part(0, 1);
        sample(&b, 0, std::string(1 << 20, 'z'));
        while (!context->IsCancelled() && write(b)) {
        }
        break;
      }
    }
    return grpc::Status::OK;
  }

 private:
  const Mode mode_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<uint64_t> parts_sent_{0};
};

std::unique_ptr<Stream> Open(const Node& node, uint32_t batch_size) {
  ClientOptions options;
  options.stall_timeout_ms = 60000;  // no failover: what is judged here is the parts
  auto client = Client::Connect(node.address(), options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  if (!client.ok()) return nullptr;
  StreamOptions o;
  o.dataset = "any";
  o.batch_size = batch_size;
  auto stream = client.value()->OpenStream(o);
  EXPECT_TRUE(stream.ok()) << stream.status().ToString();
  return stream.ok() ? std::move(stream).value() : nullptr;
}

TEST(HostileNodeTest, APartClaimingAHugeBatchFailsTheStreamBeforeAnyAllocation) {
  Node node(Mode::kHugeBatch);
  auto stream = Open(node, 2);
  ASSERT_NE(stream, nullptr);
  Batch b;
  const Status s = stream->Next(&b);
  EXPECT_EQ(s.code(), Code::kInternal) << s.ToString();
  EXPECT_NE(s.message().find("rogue-1"), std::string::npos) << s.ToString();
}

// The node marks step 0 as its share sent without slot 1. No node owes the
// step any more: the stream fails at once, where it used to wait for ever
// (its readers held parts of later steps, so no stall was ever judged).
TEST(HostileNodeTest, AStepEveryNodeSaysItSentButIsIncompleteFailsTheStream) {
  Node node(Mode::kMissingSlot);
  auto stream = Open(node, 2);
  ASSERT_NE(stream, nullptr);
  Batch b;
  const Status s = stream->Next(&b);
  EXPECT_EQ(s.code(), Code::kInternal) << s.ToString();
  EXPECT_NE(s.message().find("step 0"), std::string::npos) << s.ToString();
}

// Parts of a step the trainer has had are dropped only when the stream's
// thread reads them; while the trainer computes, the queue's byte cap holds
// the reader back, and HTTP/2 flow control the node. Without the cap the
// client took about 930 MB/s of them into memory.
TEST(HostileNodeTest, PartsOfADeliveredStepSentAgainAndAgainAreNotBufferedWithoutBound) {
  Node node(Mode::kStaleFlood);
  auto stream = Open(node, 1);
  ASSERT_NE(stream, nullptr);
  Batch b;
  ASSERT_TRUE(stream->Next(&b).ok());
  EXPECT_EQ(b.step(), 0u);
  // The trainer away: the node sends as long as the client reads.
  uint64_t sent = 0;
  for (int i = 0; i < 40; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sent = node.parts_sent();
  }
  // 64 MiB of queue (its least byte cap), the call's receive window and the
  // sockets' buffers: at most some 100 parts of 1 MiB.
  EXPECT_LT(sent, 200u) << "the client read " << sent << " MiB of parts it drops";
  stream.reset();
}

}  // namespace
}  // namespace strata
