// Bad input to a live stratad: each gets a clear status and message, and the
// server stays up and keeps serving.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "strata/v1/data.grpc.pb.h"
#include "tests/integration/cluster_fixture.h"

namespace strata::testing {
namespace {

class BadInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    node_ = new SingleNode();
    IngestSynthetic(node_->client(), "good", 100, 3);
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(node_->Stop(), 0);
    delete node_;
  }
  void TearDown() override {
    // The server is still up and still serves the good dataset.
    ASSERT_TRUE(node_->process().Running());
    auto status = node_->client().GetStatus();
    ASSERT_TRUE(status.ok()) << status.status().ToString();
    StreamOptions o;
    o.dataset = "good";
    o.batch_size = 10;
    RankRun run = StreamAll(node_->client(), o);
    EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
    EXPECT_EQ(run.batches.size(), 10u);
  }

  // Runs the CLI against the node.
  static CommandResult Cli(std::vector<std::string> args) {
    std::vector<std::string> argv = {StrataCliBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--server");
    argv.push_back(node_->address());
    return RunCommand(argv);
  }

  static Status FirstNext(const StreamOptions& o) {
    // Bypass the client's own checks to reach the server: open with valid
    // options, then compare with what the server says for the bad ones.
    auto stream = node_->client().OpenStream(o);
    if (!stream.ok()) return stream.status();
    Batch b;
    return stream.value()->Next(&b);
  }

  static SingleNode* node_;
};
SingleNode* BadInputTest::node_ = nullptr;

TEST_F(BadInputTest, UnknownDataset) {
  StreamOptions o;
  o.dataset = "nope";
  o.batch_size = 4;
  Status s = FirstNext(o);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find("nope"), std::string::npos) << s.message();
  CommandResult r = Cli({"describe", "nope"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("NotFound"), std::string::npos) << r.err;
}

TEST_F(BadInputTest, BatchSizeZeroAndRankNotBelowWorld) {
  StreamOptions o;
  o.dataset = "good";
  o.batch_size = 0;
  EXPECT_EQ(FirstNext(o).code(), Code::kInvalidArgument);
  o.batch_size = 4;
  o.world = 2;
  o.rank = 2;
  Status s = FirstNext(o);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("rank 2"), std::string::npos) << s.message();
  CommandResult r = Cli({"stream", "--dataset", "good", "--batch-size", "0"});
  EXPECT_NE(r.exit_code, 0);
  r = Cli({"stream", "--dataset", "good", "--batch-size", "4", "--rank", "3", "--world", "2"});
  EXPECT_EQ(r.exit_code, 2) << "a usage error";
  EXPECT_NE(r.err.find("rank"), std::string::npos) << r.err;
  EXPECT_EQ(Cli({"stream", "--dataset", "good"}).exit_code, 2) << "no batch size";
  // Negative numbers for unsigned options used to wrap to 2^64 - 1.
  for (const char* option : {"--epoch", "--seed", "--max-steps", "--start-step", "--block-window"}) {
    r = Cli({"stream", "--dataset", "good", "--batch-size", "4", option, "-1"});
    EXPECT_EQ(r.exit_code, 2) << option << ": " << r.out << r.err;
  }
  // --write-quorum and --write-policy quorum go together.
  r = Cli({"ingest", "--dataset", "q", "--write-quorum", "2", "/nonexistent"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--write-policy quorum"), std::string::npos) << r.err;
  r = Cli({"ingest", "--dataset", "q", "--write-policy", "quorum", "/nonexistent"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--write-quorum"), std::string::npos) << r.err;
}

// An empty token file is said to be empty, not sent as no token (which the
// server refuses as "pass --token-file").
TEST_F(BadInputTest, AnEmptyTokenFileSaysSo) {
  const std::string empty = ::testing::TempDir() + "/empty.token";
  std::ofstream(empty) << " \n";
  CommandResult r = Cli({"ls", "--tls-ca", empty, "--token-file", empty});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the token file " + empty + " is empty"), std::string::npos) << r.err;
}

// An --output that cannot be written is a usage error before the stream
// opens, and a file that could be is left as it was when the stream fails.
TEST_F(BadInputTest, AnOutputThatCannotBeWrittenIsRefusedFirst) {
  const std::string dir = ::testing::TempDir() + "/bad_output";
  std::filesystem::create_directories(dir);
  CommandResult r = Cli({"stream", "--dataset", "good", "--batch-size", "4", "-o", dir});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
  r = Cli({"stream", "--dataset", "good", "--batch-size", "4", "-o", dir + "/no/such/out.jsonl"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  // --plot too, before every rank is streamed for the report.
  r = Cli({"stream", "--dataset", "good", "--batch-size", "4", "--report", "--plot", dir + "/no/such/mix.png"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--plot " + dir + "/no/such/mix.png: its folder"), std::string::npos) << r.err;
  const std::string kept = dir + "/kept.jsonl";
  std::ofstream(kept) << "earlier\n";
  r = Cli({"stream", "--dataset", "good@9", "--batch-size", "4", "-o", kept});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::ifstream in(kept);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "earlier") << "a stream that never opened truncated its output";
}

TEST_F(BadInputTest, ServerRefusesWhatTheClientDidNotCheck) {
  // A raw request straight to the server, past the client's own validation.
  CommandResult r = Cli({"stream", "--dataset", "good@9", "--batch-size", "4"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("NotFound"), std::string::npos) << r.err;
  r = Cli({"stream", "--dataset", "good", "--batch-size", "4", "--start-step", "999"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("past the end"), std::string::npos) << r.err;
  // A start that would take the node hours to plan (its schedule replayed
  // step by step from 0) is refused at once; the node stays free.
  r = Cli({"stream", "--dataset", "good", "--batch-size", "1", "--sampler", "weighted", "--epoch-samples",
           "18446744073709551615", "--start-step", "2305843009213693950", "--max-steps", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("a node replays at most"), std::string::npos) << r.err;
  r = Cli({"stream", "--dataset", "good", "--batch-size", "4", "--max-steps", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(BadInputTest, TheDatasetGeneratorRefusesSizesAndExponentsItCannotUse) {
  // A 1 TiB sample died of std::bad_alloc; nan passed CLI11's range check.
  const std::string dir = node_->dir().Join("never-made");
  CommandResult r = RunCommand({STRATA_MAKE_DATASET_BINARY, "--out", dir, "--size", "1TiB", "--samples", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("above a sample's limit, 64 MiB"), std::string::npos) << r.err;
  r = RunCommand({STRATA_MAKE_DATASET_BINARY, "--out", dir, "--zipf", "nan", "--samples", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--zipf must be a number"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST_F(BadInputTest, NumbersPastTwoToTheSixtyFourAreRefusedNotClamped) {
  // CLI11 read 2^64 as 2^64 - 1: two seeds gave one plan, silently.
  for (const char* option : {"--seed", "--epoch", "--start-step", "--max-steps", "--epoch-samples"}) {
    CommandResult r = Cli({"stream", "--dataset", "good", "--batch-size", "4", option, "18446744073709551616"});
    EXPECT_EQ(r.exit_code, 2) << option << ": " << r.err;
    EXPECT_NE(r.err.find("must be an integer from 0 to 18446744073709551615"), std::string::npos) << r.err;
  }
}

// A max_steps of 2^64 - 1 ("no limit" to some callers) is the rest of the
// epoch, not a sum that wraps into an empty stream that ends as if the epoch
// were over: on the node (a raw request) and through the client.
TEST_F(BadInputTest, MaxStepsPastTheEpochStreamsTheRest) {
  StreamOptions o;
  o.dataset = "good";
  o.batch_size = 4;  // 100 samples: 25 steps
  o.start_step = 5;
  o.max_steps = UINT64_MAX;
  const RankRun run = StreamAll(node_->client(), o);
  EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  ASSERT_EQ(run.batches.size(), 20u);
  EXPECT_EQ(run.batches.front().step(), 5u);
  EXPECT_EQ(run.batches.back().step(), 24u);

  v1::StreamRequest r;
  r.set_dataset("good");
  r.set_world(1);
  r.set_batch_size(4);
  r.set_start_step(5);
  r.set_max_steps(UINT64_MAX);
  std::set<uint64_t> steps;
  const grpc::Status end =
      ReadRawStream(node_->address(), r, [&](const v1::Batch& part) { steps.insert(part.step()); });
  EXPECT_TRUE(end.ok()) << end.error_message();
  ASSERT_EQ(steps.size(), 20u);
  EXPECT_EQ(*steps.begin(), 5u);
  EXPECT_EQ(*steps.rbegin(), 24u);
}

// What a client that plans sends (StreamRequest.work, ReadStratumIndex),
// straight to the server: malformed work and index requests are refused with
// InvalidArgument, and a sound index request is answered.
TEST_F(BadInputTest, MalformedWorkAndStratumIndexRequests) {
  auto channel = grpc::CreateChannel(node_->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::DataService::NewStub(channel);
  const auto index = [&](const std::string& dataset, uint64_t offset, v1::StratumIndexChunk* chunk) {
    grpc::ClientContext context;
    v1::StratumIndexRequest r;
    r.set_dataset(dataset);
    r.set_offset(offset);
    return stub->ReadStratumIndex(&context, r, chunk).error_code();
  };
  v1::StratumIndexChunk chunk;
  EXPECT_EQ(index("good", 0, &chunk), grpc::StatusCode::INVALID_ARGUMENT) << "no version";
  EXPECT_EQ(index("../x@1", 0, &chunk), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(index("good@9", 0, &chunk), grpc::StatusCode::NOT_FOUND);
  ASSERT_EQ(index("good@1", 0, &chunk), grpc::StatusCode::OK);
  EXPECT_GT(chunk.file_bytes(), 0u);
  EXPECT_EQ(chunk.data().size(), chunk.file_bytes());
  EXPECT_NE(chunk.file_checksum(), 0u);
  ASSERT_EQ(index("good@1", uint64_t{1} << 40, &chunk), grpc::StatusCode::OK);
  EXPECT_TRUE(chunk.data().empty()) << "past the end: nothing";

  const auto stream = [&](const std::function<void(v1::StreamRequest*)>& change) {
    v1::StreamRequest r;
    r.set_dataset("good@1");
    r.set_world(1);
    r.set_batch_size(10);
    v1::WorkStep* w = r.add_work();
    w->set_step(0);
    w->add_slots(3);
    w->add_ids(7);
    change(&r);
    grpc::ClientContext context;
    auto reader = stub->StreamBatches(&context, r);
    v1::Batch part;
    while (reader->Read(&part)) {
    }
    return reader->Finish();
  };
  const grpc::Status sound = stream([](v1::StreamRequest*) {});
  EXPECT_TRUE(sound.ok()) << sound.error_message();
  const std::vector<std::pair<const char*, std::function<void(v1::StreamRequest*)>>> bad = {
      {"a slot past the batch", [](v1::StreamRequest* r) { r->mutable_work(0)->set_slots(0, 10); }},
      {"an id past the version", [](v1::StreamRequest* r) { r->mutable_work(0)->set_ids(0, 100); }},
      {"a slot without an id", [](v1::StreamRequest* r) { r->mutable_work(0)->add_slots(4); }},
      {"a job cursor", [](v1::StreamRequest* r) { r->set_job_id("job"); }},
      {"a step past the epoch",
       [](v1::StreamRequest* r) {
         r->set_start_step(10);
         r->mutable_work(0)->set_step(10);
       }},
      {"too many steps",
       [](v1::StreamRequest* r) {
         for (int i = 1; i <= 4096; ++i) r->add_work()->set_step(static_cast<uint64_t>(i));
       }},
  };
  for (const auto& [what, change] : bad) {
    const grpc::Status s = stream(change);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << what << ": " << s.error_message();
  }
}

TEST_F(BadInputTest, DatasetNamesThatCouldEscapeTheDataDirectory) {
  for (const char* name : {"a/b", "../x", "..", ".hidden"}) {
    IngestOptions o;
    o.dataset = name;
    auto w = node_->client().StartIngest(o);
    ASSERT_FALSE(w.ok()) << name;
    EXPECT_EQ(w.status().code(), Code::kInvalidArgument) << name;
    CommandResult r = Cli({"ingest", "--dataset", name, node_->dir().path()});
    EXPECT_EQ(r.exit_code, 2) << name << ": a usage error";
    EXPECT_NE(r.err.find("invalid dataset name"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(node_->dir().Join("x")));
}

TEST_F(BadInputTest, SecondIngestIntoASealedVersion) {
  IngestOptions o;
  o.dataset = "good@1";
  // The node refuses the open at once (StartIngest waits for its answer);
  // the refusal may also come with the first write or the commit.
  auto w = node_->client().StartIngest(o);
  Sample s;
  s.key = "x";
  s.fields.push_back({"bin", "x"});
  Status st = w.ok() ? w.value()->Write(s) : w.status();
  auto reply = w.ok() && st.ok() ? w.value()->Commit() : Result<IngestSummary>(st);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), Code::kFailedPrecondition) << reply.status().ToString();
  EXPECT_NE(reply.status().message().find("sealed"), std::string::npos) << reply.status().message();
  auto info = node_->client().Describe("good@1");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->dataset.samples, 100u) << "the sealed version is untouched";
}

TEST_F(BadInputTest, TruncatedTar) {
  // Build a valid WebDataset tar with the generator, then cut it mid-member.
  const std::string dir = node_->dir().Join("tars");
  CommandResult gen = RunCommand({STRATA_MAKE_DATASET_BINARY, "--out", dir, "--format", "tar", "--samples", "50"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const std::string tar = dir + "/shard-000000.tar";
  std::filesystem::resize_file(tar, std::filesystem::file_size(tar) / 2 + 100);
  CommandResult r = Cli({"ingest", "--dataset", "cut", tar});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("truncated or damaged tar"), std::string::npos) << r.err;
  auto listed = node_->client().ListDatasets(/*include_unsealed=*/true);
  ASSERT_TRUE(listed.ok());
  for (const auto& d : listed.value()) {
    if (d.name == "cut") {
      EXPECT_NE(d.state, VersionState::kSealed) << "a damaged source never seals a version";
    }
  }
}

TEST_F(BadInputTest, UnreadableFile) {
  // As root, permissions do not stop reads: a directory where the manifest
  // names a file is unreadable for everyone.
  const std::string dir = node_->dir().Join("manifest");
  WriteFile(dir + "/ok.bin", "fine");
  std::filesystem::create_directories(dir + "/dir.bin");
  WriteFile(dir + "/m.csv", "path,label\nok.bin,a\ndir.bin,b\n");
  CommandResult r = Cli({"ingest", "--dataset", "unreadable", dir + "/m.csv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("dir.bin"), std::string::npos) << r.err;
}

TEST_F(BadInputTest, EmptySource) {
  const std::string dir = node_->dir().Join("empty");
  std::filesystem::create_directories(dir);
  CommandResult r = Cli({"ingest", "--dataset", "nothing", dir});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no samples"), std::string::npos) << r.err;
  EXPECT_EQ(node_->client().Describe("nothing").status().code(), Code::kNotFound) << "no version was created";
  // Straight to the server: an ingest committed with zero samples is refused.
  IngestOptions o;
  o.dataset = "nothing";
  auto w = node_->client().StartIngest(o);
  ASSERT_TRUE(w.ok());
  auto reply = w.value()->Commit();
  EXPECT_EQ(reply.status().code(), Code::kFailedPrecondition) << reply.status().ToString();
}

TEST_F(BadInputTest, SampleWithoutFieldsOrBadFieldName) {
  IngestOptions o;
  o.dataset = "fields";
  auto w = node_->client().StartIngest(o);
  ASSERT_TRUE(w.ok());
  Sample s;
  s.key = "empty-sample";
  Status st = w.value()->Write(s);
  auto reply = st.ok() ? w.value()->Commit() : Result<IngestSummary>(st);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), Code::kInvalidArgument);
  EXPECT_NE(reply.status().message().find("empty-sample"), std::string::npos) << reply.status().message();
}

}  // namespace
}  // namespace strata::testing
