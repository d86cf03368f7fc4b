// A real stratad on loopback: ingest over gRPC, stream an epoch on several
// ranks, and check what arrives against what was sent.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "strata/v1/data.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"

namespace strata::testing {
namespace {

constexpr uint64_t kSamples = 2003;  // not divisible by any global batch below
constexpr uint32_t kLabels = 7;

class StreamEpochTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    node_ = new SingleNode();
    IngestSynthetic(node_->client(), "synth", kSamples, kLabels);
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(node_->Stop(), 0) << "stratad exits 0 after SIGTERM";
    delete node_;
  }
  static SingleNode* node_;
};
SingleNode* StreamEpochTest::node_ = nullptr;

StreamOptions Options(uint32_t rank, uint32_t world, uint32_t batch, uint64_t seed = 5, uint64_t epoch = 0) {
  StreamOptions o;
  o.dataset = "synth";
  o.rank = rank;
  o.world = world;
  o.batch_size = batch;
  o.seed = seed;
  o.epoch = epoch;
  return o;
}

// A request for the whole of "synth" on one rank, as a bare gRPC stub sends it.
v1::StreamRequest BareRequest(uint32_t batch) {
  v1::StreamRequest request;
  request.set_dataset("synth");
  request.set_world(1);
  request.set_batch_size(batch);
  return request;
}

TEST_F(StreamEpochTest, EveryIdExactlyOnceAcrossRanksWithItsPayloadAndLabel) {
  for (uint32_t world : {1u, 3u, 4u}) {
    std::map<uint64_t, int> seen;
    for (uint32_t rank = 0; rank < world; ++rank) {
      RankRun run = StreamAll(node_->client(), Options(rank, world, 16));
      ASSERT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
      uint64_t expect_step = 0;
      for (const Batch& b : run.batches) {
        EXPECT_EQ(b.step(), expect_step++);
        EXPECT_EQ(b.rank(), rank);
        for (size_t i = 0; i < b.size(); ++i) {
          const uint64_t id = b.ids()[i];
          ++seen[id];
          EXPECT_EQ(b.sample(i), SyntheticPayload(id)) << "id " << id;
          EXPECT_EQ(b.labels()[i], SyntheticLabel(id, kLabels));
          EXPECT_EQ(b.field(i, "bin"), SyntheticPayload(id));
        }
      }
    }
    ASSERT_EQ(seen.size(), kSamples) << "world " << world;
    for (const auto& [id, n] : seen) ASSERT_EQ(n, 1) << "world " << world << " id " << id;
  }
}

TEST_F(StreamEpochTest, SameGlobalBatchesForWorldOneTwoFourEight) {
  // Global batch 32 throughout: (32 x 1), (16 x 2), (8 x 4), (4 x 8).
  std::vector<std::vector<std::set<uint64_t>>> by_world;
  for (uint32_t world : {1u, 2u, 4u, 8u}) {
    std::vector<std::set<uint64_t>> steps;
    for (uint32_t rank = 0; rank < world; ++rank) {
      RankRun run = StreamAll(node_->client(), Options(rank, world, 32 / world));
      ASSERT_EQ(run.end.code(), Code::kOutOfRange);
      for (const Batch& b : run.batches) {
        if (steps.size() <= b.step()) steps.resize(b.step() + 1);
        steps[b.step()].insert(b.ids().begin(), b.ids().end());
      }
    }
    by_world.push_back(steps);
  }
  for (size_t w = 1; w < by_world.size(); ++w) EXPECT_EQ(by_world[w], by_world[0]) << "world index " << w;
}

TEST_F(StreamEpochTest, ResumedStreamEqualsTheUninterruptedOne) {
  RankRun full = StreamAll(node_->client(), Options(1, 2, 10, 9, 3));
  ASSERT_EQ(full.end.code(), Code::kOutOfRange);
  // Stop after 17 steps, then continue from the resume token in a new stream.
  StreamOptions first = Options(1, 2, 10, 9, 3);
  first.max_steps = 17;
  auto stream = node_->client().OpenStream(first);
  ASSERT_TRUE(stream.ok());
  std::vector<Batch> got;
  for (;;) {
    Batch b;
    Status s = stream.value()->Next(&b);
    if (!s.ok()) break;
    got.push_back(std::move(b));
  }
  ASSERT_EQ(got.size(), 17u);
  const ResumeToken token = stream.value()->resume_token();
  EXPECT_EQ(token.step, 17u);
  auto decoded = ResumeToken::Decode(token.Encode());
  ASSERT_TRUE(decoded.ok());
  auto resumed = node_->client().ResumeStream(decoded.value(), Options(1, 2, 10));
  ASSERT_TRUE(resumed.ok());
  for (;;) {
    Batch b;
    Status s = resumed.value()->Next(&b);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), Code::kOutOfRange) << s.ToString();
      break;
    }
    got.push_back(std::move(b));
  }
  ASSERT_EQ(got.size(), full.batches.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].step(), full.batches[i].step());
    EXPECT_EQ(got[i].ids(), full.batches[i].ids()) << "step " << i;
    EXPECT_EQ(got[i].payload(), full.batches[i].payload());
  }
}

TEST_F(StreamEpochTest, ResumeTokenOfAnotherPlanIsRefused) {
  StreamOptions o = Options(0, 1, 10);
  o.max_steps = 1;
  RankRun one = StreamAll(node_->client(), o);
  ASSERT_EQ(one.batches.size(), 1u);
  auto stream = node_->client().OpenStream(o);
  ASSERT_TRUE(stream.ok());
  Batch b;
  ASSERT_TRUE(stream.value()->Next(&b).ok());
  ResumeToken token = stream.value()->resume_token();
  // The token carries its plan: another global batch is refused at once,
  // naming both.
  auto refused = node_->client().ResumeStream(token, Options(0, 1, 12));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("global batch"), std::string::npos) << refused.status().ToString();
  // A token without its plan (the first format) is checked by the server,
  // against the plan hash.
  token.global_batch = 0;
  auto resumed = node_->client().ResumeStream(token, Options(0, 1, 12));
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  Status s = resumed.value()->Next(&b);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
}

TEST_F(StreamEpochTest, EpochsAndSeedsReorderButKeepExactlyOnce) {
  RankRun e0 = StreamAll(node_->client(), Options(0, 1, 50, 5, 0));
  RankRun e1 = StreamAll(node_->client(), Options(0, 1, 50, 5, 1));
  ASSERT_FALSE(e0.batches.empty());
  EXPECT_NE(e0.batches[0].ids(), e1.batches[0].ids());
  std::set<uint64_t> all;
  for (const Batch& b : e1.batches) all.insert(b.ids().begin(), b.ids().end());
  EXPECT_EQ(all.size(), kSamples);
}

// The server builds a stream's steps on more than one thread, and sends them
// in step order all the same, each step's parts ending with last_part: read
// with a bare gRPC stub, which reorders nothing.
TEST_F(StreamEpochTest, TheServerSendsStepsInOrder) {
  auto stub = v1::DataService::NewStub(grpc::CreateChannel(node_->address(), grpc::InsecureChannelCredentials()));
  v1::StreamRequest request = BareRequest(7);
  request.set_seed(9);
  grpc::ClientContext context;
  auto reader = stub->StreamBatches(&context, request);
  v1::Batch part;
  uint64_t expect_step = 0;
  uint64_t samples = 0;
  while (reader->Read(&part)) {
    ASSERT_EQ(part.step(), expect_step);
    samples += static_cast<uint64_t>(part.ids_size());
    if (part.last_part()) ++expect_step;
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(expect_step, (kSamples + 6) / 7);
  EXPECT_EQ(samples, kSamples);
}

// A client that asks (StreamRequest.indexed_labels) gets each part's labels
// and strata named once; one that does not, built before the field, gets a
// string per sample. Both name every sample's own label.
TEST_F(StreamEpochTest, LabelsComeIndexedOnlyToAClientThatAsks) {
  auto stub = v1::DataService::NewStub(grpc::CreateChannel(node_->address(), grpc::InsecureChannelCredentials()));
  for (bool indexed : {false, true}) {
    SCOPED_TRACE(indexed ? "indexed" : "strings");
    v1::StreamRequest request = BareRequest(64);
    request.set_indexed_labels(indexed);
    grpc::ClientContext context;
    auto reader = stub->StreamBatches(&context, request);
    v1::Batch part;
    uint64_t samples = 0;
    while (reader->Read(&part)) {
      const int n = part.ids_size();
      samples += static_cast<uint64_t>(n);
      if (indexed) {
        ASSERT_EQ(part.labels_size(), 0);
        ASSERT_EQ(part.strata_size(), 0);
        ASSERT_EQ(part.label_index_size(), n);
        ASSERT_EQ(part.stratum_index_size(), n);
        ASSERT_LE(part.label_names_size(), static_cast<int>(kLabels));
      } else {
        ASSERT_EQ(part.labels_size(), n);
        ASSERT_EQ(part.strata_size(), n);
        ASSERT_EQ(part.label_names_size() + part.label_index_size() + part.stratum_index_size(), 0);
      }
      for (int i = 0; i < n; ++i) {
        const std::string& label = indexed ? part.label_names(static_cast<int>(part.label_index(i))) : part.labels(i);
        EXPECT_EQ(label, SyntheticLabel(part.ids(i), kLabels)) << "id " << part.ids(i);
      }
    }
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_EQ(samples, kSamples);
  }
}

// A client that asks (StreamRequest.joined_steps) gets steps joined into one
// message (Batch.following) while the node's writes are backed up, on a call
// without work; one that does not, built before the field, gets a message a
// step. A window of 8 KiB and a reader that waits after its first message
// back the writes up. Either way every step comes once, in order, with all
// its samples.
TEST_F(StreamEpochTest, StepsComeJoinedOnlyToAClientThatAsks) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 10);
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  auto stub =
      v1::DataService::NewStub(grpc::CreateCustomChannel(node_->address(), grpc::InsecureChannelCredentials(), args));
  for (bool joined : {false, true}) {
    SCOPED_TRACE(joined ? "joined" : "a message a step");
    v1::StreamRequest request = BareRequest(7);
    request.set_joined_steps(joined);
    grpc::ClientContext context;
    auto reader = stub->StreamBatches(&context, request);
    v1::Batch message;
    uint64_t expect_step = 0;
    std::set<uint64_t> ids;
    int messages = 0;
    int with_following = 0;
    while (reader->Read(&message)) {
      if (messages++ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      if (message.following_size() > 0) ++with_following;
      std::vector<const v1::Batch*> steps{&message};
      for (const v1::Batch& next : message.following()) {
        ASSERT_EQ(next.following_size(), 0) << "steps joined inside joined steps";
        steps.push_back(&next);
      }
      for (const v1::Batch* part : steps) {
        ASSERT_EQ(part->step(), expect_step);
        ASSERT_TRUE(part->last_part());
        for (uint64_t id : part->ids()) ASSERT_TRUE(ids.insert(id).second) << "id " << id << " twice";
        ++expect_step;
      }
    }
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_EQ(expect_step, (kSamples + 6) / 7);
    EXPECT_EQ(ids.size(), kSamples);
    if (joined) {
      EXPECT_GT(with_following, 0) << "the writes backed up while the reader waited: steps were joined";
      EXPECT_LT(messages, static_cast<int>(expect_step));
    } else {
      EXPECT_EQ(with_following, 0);
      EXPECT_EQ(messages, static_cast<int>(expect_step));
    }
  }
}

TEST_F(StreamEpochTest, MetricsCountWhatWasServed) {
  auto before = node_->client().GetStatus();
  ASSERT_TRUE(before.ok());
  RankRun run = StreamAll(node_->client(), Options(0, 1, 100));
  uint64_t bytes = 0;
  for (const Batch& b : run.batches) bytes += b.payload_bytes();
  auto after = node_->client().GetStatus();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->samples_served - before->samples_served, kSamples);
  EXPECT_EQ(after->bytes_served - before->bytes_served, bytes);
  EXPECT_EQ(after->batches_served - before->batches_served, run.batches.size());
  // And the same figures on /metrics, as Prometheus scrapes them.
  CommandResult scrape =
      RunCommand({"/usr/bin/curl", "-sf", "http://" + node_->process().metrics_address() + "/metrics"});
  ASSERT_EQ(scrape.exit_code, 0) << scrape.err;
  for (const char* family :
       {"strata_served_bytes_total", "strata_served_samples_total", "strata_served_batches_total",
        "strata_active_streams", "strata_ingested_samples_total", "strata_checksum_failures_total"}) {
    EXPECT_NE(scrape.out.find(family), std::string::npos) << family;
  }
  EXPECT_NE(scrape.out.find("strata_served_samples_total{node=\"node-1\"} " + std::to_string(after->samples_served)),
            std::string::npos)
      << scrape.out.substr(0, 2000);
}

// A batch sent in several parts (messages) counts once in batches served.
TEST(StreamPartsTest, ABatchSentInPartsCountsOnceAsServed) {
  SingleNode node("", {"--max-part-bytes", "4096"});  // the least allowed
  constexpr uint64_t kLarge = 300;
  // 1,000 bytes a sample: a batch of 16 is about four parts.
  IngestSynthetic(node.client(), "large", kLarge, kLabels, [](uint64_t i) {
    std::string payload = SyntheticPayload(i);
    payload.resize(1000, '.');
    return payload;
  });
  auto before = node.client().GetStatus();
  ASSERT_TRUE(before.ok());
  StreamOptions o = Options(0, 1, 16);
  o.dataset = "large";
  RankRun run = StreamAll(node.client(), o);
  ASSERT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  ASSERT_EQ(run.batches.size(), (kLarge + 15) / 16);
  uint64_t samples = 0;
  for (const Batch& b : run.batches) {
    samples += b.size();
    for (size_t i = 0; i < b.size(); ++i) {
      EXPECT_EQ(b.sample(i).substr(0, SyntheticPayload(b.ids()[i]).size()), SyntheticPayload(b.ids()[i]));
      EXPECT_EQ(b.sample(i).size(), 1000u);
    }
  }
  EXPECT_EQ(samples, kLarge);
  auto after = node.client().GetStatus();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->samples_served - before->samples_served, kLarge);
  EXPECT_EQ(after->bytes_served - before->bytes_served, kLarge * 1000);
  EXPECT_EQ(after->batches_served - before->batches_served, run.batches.size());
  EXPECT_EQ(node.Stop(), 0);
}

}  // namespace
}  // namespace strata::testing
