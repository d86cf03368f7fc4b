// ServeWork against a live stratad: one long-lived call takes a client's work
// as it comes and serves each step given exactly once, at its slots, with its
// bytes; it stays open while it waits for more and ends OK once the client has
// half-closed and every step given is sent; a step that names none of its
// samples gets an empty part unless the client asked for none. Malformed
// messages end the call with InvalidArgument, and the server keeps serving.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "strata/v1/data.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"

namespace strata::testing {
namespace {

constexpr uint64_t kSamples = 200;  // "work": 20 steps of 10
// "big": 4,096 steps of one 8 KiB sample. A call that reads nothing holds
// the node to what flow control lets through (a few MiB), far fewer steps.
constexpr uint64_t kBigSamples = 4096;

class ServeWorkTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    node_ = new SingleNode();
    IngestSynthetic(node_->client(), "work", kSamples, 3);
    IngestSynthetic(node_->client(), "big", kBigSamples, 3,
                    [](uint64_t i) { return std::string(8192, static_cast<char>('a' + i % 26)); });
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(node_->Stop(), 0);
    delete node_;
  }
  void SetUp() override {
    stub_ = v1::DataService::NewStub(grpc::CreateChannel(node_->address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    // The server is still up and still serves.
    ASSERT_TRUE(node_->process().Running());
    EXPECT_EQ(DistinctIdsStreamed(node_->client(), "work", 10).size(), kSamples);
  }

  // A first message: `dataset`, world 1, batches of `batch`, with the work of `steps` from `start`.
  static v1::WorkRequest Open(const std::string& dataset, uint32_t batch, uint64_t start,
                              const std::vector<v1::WorkStep>& steps) {
    v1::WorkRequest m;
    v1::StreamRequest* r = m.mutable_open();
    r->set_dataset(dataset + "@1");
    r->set_world(1);
    r->set_batch_size(batch);
    r->set_start_step(start);
    for (const auto& w : steps) *r->add_work() = w;
    return m;
  }
  static v1::WorkRequest More(uint64_t start, const std::vector<v1::WorkStep>& steps) {
    v1::WorkRequest m;
    m.mutable_more()->set_start_step(start);
    for (const auto& w : steps) *m.mutable_more()->add_work() = w;
    return m;
  }
  // Steps [from, to) of "work": slot i of step s holds sample 10 s + (9 - i).
  static std::vector<v1::WorkStep> Steps(uint64_t from, uint64_t to, uint32_t per_step = 10) {
    std::vector<v1::WorkStep> steps;
    for (uint64_t s = from; s < to; ++s) {
      v1::WorkStep& w = steps.emplace_back();
      w.set_step(s);
      for (uint32_t i = 0; i < per_step; ++i) {
        w.add_slots(i);
        w.add_ids(s * per_step + (per_step - 1 - i));
      }
    }
    return steps;
  }

  static SingleNode* node_;
  std::unique_ptr<v1::DataService::Stub> stub_;
};
SingleNode* ServeWorkTest::node_ = nullptr;

using Stream = grpc::ClientReaderWriter<v1::WorkRequest, v1::Batch>;

// Reads parts (joined steps as parts of their own) into `steps` (step ->
// slot -> (id, payload)) until step `through` is complete; false if the call
// ended first.
bool ReadThrough(Stream* stream, uint64_t through,
                 std::map<uint64_t, std::map<uint32_t, std::pair<uint64_t, std::string>>>* steps) {
  v1::Batch message;
  while (stream->Read(&message)) {
    std::vector<v1::Batch> parts = {message};
    parts.insert(parts.end(), message.following().begin(), message.following().end());
    bool done = false;
    for (const v1::Batch& part : parts) {
      uint64_t offset = 0;
      for (int i = 0; i < part.ids_size(); ++i) {
        auto [at, fresh] =
            (*steps)[part.step()].try_emplace(part.slots(i), part.ids(i), part.payload().substr(offset, part.sizes(i)));
        EXPECT_TRUE(fresh) << "step " << part.step() << " slot " << part.slots(i) << " twice";
        offset += part.sizes(i);
      }
      done = done || (part.step() == through && part.last_part());
    }
    if (done) return true;
  }
  return false;
}

TEST_F(ServeWorkTest, OneCallServesWorkAsItComesAndEndsAfterTheHalfClose) {
  grpc::ClientContext context;
  auto stream = stub_->ServeWork(&context);
  std::map<uint64_t, std::map<uint32_t, std::pair<uint64_t, std::string>>> got;
  ASSERT_TRUE(stream->Write(Open("work", 10, 0, Steps(0, 1))));
  ASSERT_TRUE(ReadThrough(stream.get(), 0, &got));
  // Everything given is sent: the call waits, open, for more.
  auto status = node_->client().GetStatus();
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status.value().active_streams, 1u);

  ASSERT_TRUE(stream->Write(More(1, Steps(1, 5))));
  ASSERT_TRUE(ReadThrough(stream.get(), 4, &got));
  std::vector<v1::WorkStep> last = Steps(5, 6);
  last[0].mutable_slots()->Truncate(3);  // the node owes 3 samples of step 5
  last[0].mutable_ids()->Truncate(3);
  ASSERT_TRUE(stream->Write(More(5, last)));
  ASSERT_TRUE(stream->WritesDone());
  ASSERT_TRUE(ReadThrough(stream.get(), 5, &got));
  v1::Batch extra;
  EXPECT_FALSE(stream->Read(&extra)) << "nothing past the steps given";
  const grpc::Status end = stream->Finish();
  EXPECT_TRUE(end.ok()) << end.error_message();

  ASSERT_EQ(got.size(), 6u);
  for (const auto& [step, slots] : got) {
    ASSERT_EQ(slots.size(), step == 5 ? 3u : 10u) << "step " << step;
    for (const auto& [slot, sample] : slots) {
      const uint64_t id = step * 10 + (9 - slot);
      EXPECT_EQ(sample.first, id) << "step " << step << " slot " << slot;
      EXPECT_EQ(sample.second, SyntheticPayload(id)) << "id " << id;
    }
  }
}

// A step whose work names none of the node's samples gets an empty part
// marked last_part, as older clients expect, unless the client asked for
// none (StreamRequest.omit_idle_steps): then only steps with samples come.
TEST_F(ServeWorkTest, IdleStepsGetAnEmptyPartUnlessTheClientAsksForNone) {
  std::vector<v1::WorkStep> steps = Steps(0, 6);
  for (uint64_t idle : {1, 3, 4, 5}) {
    steps[idle].clear_slots();
    steps[idle].clear_ids();
  }
  for (const bool omit : {false, true}) {
    grpc::ClientContext context;
    auto stream = stub_->ServeWork(&context);
    v1::WorkRequest open = Open("work", 10, 0, steps);
    open.mutable_open()->set_omit_idle_steps(omit);
    ASSERT_TRUE(stream->Write(open));
    ASSERT_TRUE(stream->WritesDone());
    std::map<uint64_t, std::pair<int, bool>> parts;  // step -> (samples, last_part)
    v1::Batch message;
    while (stream->Read(&message)) {
      std::vector<v1::Batch> all = {message};
      all.insert(all.end(), message.following().begin(), message.following().end());
      for (const v1::Batch& part : all) {
        EXPECT_TRUE(parts.emplace(part.step(), std::make_pair(part.ids_size(), part.last_part())).second)
            << "step " << part.step() << " in two parts";
      }
    }
    const grpc::Status end = stream->Finish();
    EXPECT_TRUE(end.ok()) << end.error_message();
    std::map<uint64_t, std::pair<int, bool>> want = {{0, {10, true}}, {2, {10, true}}};
    if (!omit) {
      for (uint64_t idle : {1, 3, 4, 5}) want[idle] = {0, true};
    }
    EXPECT_EQ(parts, want) << (omit ? "omitted" : "sent");
  }
}

TEST_F(ServeWorkTest, MalformedMessagesEndTheCallWithInvalidArgument) {
  const auto call = [&](const std::vector<v1::WorkRequest>& messages) {
    grpc::ClientContext context;
    auto stream = stub_->ServeWork(&context);
    for (const auto& m : messages) {
      if (!stream->Write(m)) break;
    }
    stream->WritesDone();
    v1::Batch part;
    while (stream->Read(&part)) {
    }
    return stream->Finish();
  };
  std::vector<v1::WorkStep> bad_slot = Steps(1, 2);
  bad_slot[0].set_slots(0, 10);
  std::vector<v1::WorkStep> bad_id = Steps(1, 2);
  bad_id[0].set_ids(0, kSamples);
  std::vector<v1::WorkStep> one_each;  // "big", a sample a step
  for (uint64_t s = 0; s < 2 * kBigSamples; ++s) one_each.push_back(Steps(s, s + 1, 1)[0]);
  const std::vector<v1::WorkStep> first(one_each.begin(), one_each.begin() + kBigSamples);
  const std::vector<v1::WorkStep> beyond(one_each.begin() + kBigSamples, one_each.end());
  const std::vector<std::pair<const char*, std::vector<v1::WorkRequest>>> bad = {
      {"nothing", {}},
      {"more first", {More(0, Steps(0, 1))}},
      {"an open without work", {Open("work", 10, 0, {})}},
      {"a second open", {Open("work", 10, 0, Steps(0, 1)), Open("work", 10, 1, Steps(1, 2))}},
      {"a gap", {Open("work", 10, 0, Steps(0, 1)), More(2, Steps(2, 3))}},
      {"a step again", {Open("work", 10, 0, Steps(0, 2)), More(1, Steps(1, 2))}},
      {"a slot past the batch", {Open("work", 10, 0, Steps(0, 1)), More(1, bad_slot)}},
      {"an id past the version", {Open("work", 10, 0, Steps(0, 1)), More(1, bad_id)}},
      {"past the epoch", {Open("work", 10, 0, Steps(0, 1)), More(1, Steps(1, 21))}},
  };
  const auto rejected = [] { return Metric(node_->process().metrics_address(), "strata_requests_rejected_total"); };
  const double rejected_before = std::max(0.0, rejected());
  for (const auto& [what, messages] : bad) {
    const grpc::Status s = call(messages);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << what << ": " << s.error_message();
  }
  // The steps given and not yet begun are bounded: 4,096 given at once, and
  // 4,096 more before the node has begun them all, is refused.
  const grpc::Status over = call({Open("big", 1, 0, first), More(kBigSamples, beyond)});
  EXPECT_EQ(over.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << over.error_message();
  EXPECT_NE(over.error_message().find("not yet begun"), std::string::npos) << over.error_message();
  // Each is counted as an invalid request, the later messages' work the plan
  // refuses too ("nothing" is no request at all).
  EXPECT_GE(rejected() - rejected_before, static_cast<double>(bad.size()));
}

// A call that has sent everything it was given waits for its client, not for
// a batch: when the node drains (SIGTERM) it ends at once, telling the client
// where to resume, rather than holding the drain until gRPC cuts it off.
TEST(ServeWorkDrainTest, AWaitingCallEndsAtOnceWhenTheNodeDrains) {
  SingleNode node;
  IngestSynthetic(node.client(), "work", kSamples, 3);
  auto stub = v1::DataService::NewStub(grpc::CreateChannel(node.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto stream = stub->ServeWork(&context);
  std::map<uint64_t, std::map<uint32_t, std::pair<uint64_t, std::string>>> got;
  v1::WorkRequest open;
  v1::StreamRequest* r = open.mutable_open();
  r->set_dataset("work@1");
  r->set_world(1);
  r->set_batch_size(10);
  v1::WorkStep* w = r->add_work();
  w->set_step(0);
  w->add_slots(0);
  w->add_ids(42);
  ASSERT_TRUE(stream->Write(open));
  ASSERT_TRUE(ReadThrough(stream.get(), 0, &got));
  int exit_status = -1;
  std::thread stop([&] { exit_status = node.Stop(); });
  v1::Batch extra;
  EXPECT_FALSE(stream->Read(&extra));
  const grpc::Status end = stream->Finish();
  stop.join();
  EXPECT_EQ(exit_status, 0);
  EXPECT_EQ(end.error_code(), grpc::StatusCode::UNAVAILABLE) << end.error_message();
  EXPECT_NE(end.error_message().find("resume this stream at step 1"), std::string::npos) << end.error_message();
}

}  // namespace
}  // namespace strata::testing
