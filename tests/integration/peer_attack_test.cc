// The attacks of issue 18 against a real stratad, sent as an attacker on the
// same network would: straight to the gRPC services with the generated stubs.
// Each checks the outcome on disk and in the catalog, not only the status:
// nothing is written or removed outside the data directory, no forged version
// becomes visible, a running ingest is not aborted, and oversized inputs are
// refused with the limit named and only a short prefix of the value quoted.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "common/input_limits.h"
#include "strata/v1/admin.grpc.pb.h"
#include "strata/v1/cluster.grpc.pb.h"
#include "strata/v1/data.grpc.pb.h"
#include "strata/v1/storage.pb.h"
#include "tests/integration/cluster_fixture.h"

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

class PeerAttackTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    node_ = new SingleNode();
    IngestSynthetic(node_->client(), "good", 100, 3);
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(node_->Stop(), 0);
    delete node_;
  }
  void SetUp() override {
    channel_ = grpc::CreateChannel(node_->address(), grpc::InsecureChannelCredentials());
    peer_ = v1::PeerService::NewStub(channel_);
    data_ = v1::DataService::NewStub(channel_);
    admin_ = v1::AdminService::NewStub(channel_);
  }
  void TearDown() override {
    // The server is up and the good dataset is still version 1 and streams.
    ASSERT_TRUE(node_->process().Running());
    EXPECT_EQ(LatestVersion("good"), 1u);
    StreamOptions o;
    o.dataset = "good";
    o.batch_size = 10;
    RankRun run = StreamAll(node_->client(), o);
    EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
    EXPECT_EQ(run.batches.size(), 10u);
    // No log line echoes a huge value.
    std::ifstream log(node_->process().log_path());
    std::string line;
    while (std::getline(log, line)) ASSERT_LT(line.size(), 4096u) << line.substr(0, 200);
  }

  static std::string DataPath() { return node_->dir().Join("data"); }
  // A folder beside the data directory that attacks aim at.
  static std::string Outside(const std::string& name) { return node_->dir().Join(name); }

  uint64_t LatestVersion(const std::string& name) {
    grpc::ClientContext context;
    v1::DescribeDatasetRequest request;
    request.set_dataset(name);
    v1::DescribeDatasetReply reply;
    grpc::Status s = admin_->DescribeDataset(&context, request, &reply);
    return s.ok() ? reply.dataset().version() : 0;
  }

  static v1::VersionMeta Meta(const std::string& name, uint64_t version, v1::VersionState state,
                              const std::string& coordinator, const std::vector<std::string>& shard_paths = {}) {
    v1::VersionRecord record;
    record.mutable_info()->set_name(name);
    record.mutable_info()->set_version(version);
    record.mutable_info()->set_state(state);
    record.mutable_info()->set_samples(1000);
    record.mutable_info()->set_coordinator(coordinator);
    v1::VersionMeta meta;
    meta.set_version_record(record.SerializeAsString());
    for (size_t i = 0; i < shard_paths.size(); ++i) {
      v1::ShardRecord shard;
      shard.mutable_info()->set_seq(static_cast<uint32_t>(i));
      shard.mutable_info()->set_samples(1000);
      shard.set_path(shard_paths[i]);
      meta.add_shard_records(shard.SerializeAsString());
    }
    return meta;
  }

  grpc::Status PutVersion(const v1::VersionMeta& meta) {
    grpc::ClientContext context;
    v1::PutVersionRequest request;
    *request.mutable_meta() = meta;
    v1::PutVersionReply reply;
    return peer_->PutVersion(&context, request, &reply);
  }

  grpc::Status PutFile(const v1::FileRef& file, const std::string& data) {
    grpc::ClientContext context;
    v1::PutFileReply reply;
    auto writer = peer_->PutFile(&context, &reply);
    v1::FileChunk chunk;
    *chunk.mutable_file() = file;
    chunk.set_size(data.size());
    chunk.set_data(data);
    writer->Write(chunk);
    writer->WritesDone();
    return writer->Finish();
  }

  grpc::Status Stream(const v1::StreamRequest& request) {
    grpc::ClientContext context;
    auto reader = data_->StreamBatches(&context, request);
    v1::Batch batch;
    while (reader->Read(&batch)) {
    }
    return reader->Finish();
  }

  static void ExpectLimitNamed(const grpc::Status& s, const std::string& limit) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message().substr(0, 200);
    EXPECT_NE(s.error_message().find("limit of " + limit), std::string::npos) << s.error_message().substr(0, 200);
    EXPECT_LT(s.error_message().size(), 400u) << "the error echoes the value";
  }

  static SingleNode* node_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PeerService::Stub> peer_;
  std::unique_ptr<v1::DataService::Stub> data_;
  std::unique_ptr<v1::AdminService::Stub> admin_;
};
SingleNode* PeerAttackTest::node_ = nullptr;

TEST_F(PeerAttackTest, PutFileCannotWriteOutsideTheDataDirectory) {
  v1::FileRef file;
  file.set_dataset("../../escaped");
  file.set_version(1);
  file.set_kind(v1::FileRef::SHARD);
  grpc::Status s = PutFile(file, "not a shard");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_FALSE(fs::exists(Outside("escaped"))) << "a folder was created outside the data directory";

  // A well-formed reference with bad content: refused, and no folder is made for it.
  file.set_dataset("planted");
  s = PutFile(file, "not a shard");
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(fs::exists(DataPath() + "/shards/planted")) << "a folder was made for rejected content";
}

TEST_F(PeerAttackTest, GetFileCannotReadOutsideTheDataDirectory) {
  WriteFile(Outside("secret/v1/000000.shard"), "secret");
  grpc::ClientContext context;
  v1::GetFileRequest request;
  request.mutable_file()->set_dataset("../../secret");
  request.mutable_file()->set_version(1);
  auto reader = peer_->GetFile(&context, request);
  v1::FileChunk chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
}

TEST_F(PeerAttackTest, AbortedPutVersionCannotRemoveOutsideTheDataDirectory) {
  WriteFile(Outside("victim/v1/keep.txt"), "keep me");
  grpc::Status s = PutVersion(Meta("../../victim", 1, v1::VERSION_ABORTED, "node-1"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_TRUE(fs::exists(Outside("victim/v1/keep.txt"))) << "a folder outside the data directory was removed";
}

TEST_F(PeerAttackTest, PutVersionCannotPointAShardAtAnArbitraryPath) {
  grpc::Status s = PutVersion(Meta("passwd", 1, v1::VERSION_SEALED, "node-1", {"/etc/passwd"}));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  s = PutVersion(Meta("passwd", 1, v1::VERSION_SEALED, "node-1", {"shards/good/v1/../../../../../etc/passwd"}));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(LatestVersion("passwd"), 0u);
}

TEST_F(PeerAttackTest, AForgedVersionNeverBecomesVisible) {
  const std::string shard = "shards/good/v99/000000.shard";
  // Claimed by this node itself, by a node that is not a member, by nobody.
  for (const std::string coordinator : {"node-1", "node-7", ""}) {
    grpc::Status s = PutVersion(Meta("good", 99, v1::VERSION_SEALED, coordinator, {shard}));
    EXPECT_FALSE(s.ok()) << "coordinator '" << coordinator << "'";
    EXPECT_EQ(LatestVersion("good"), 1u) << "a forged good@99 became the latest version";
  }
  // Nor can a peer abort a sealed version.
  grpc::Status s = PutVersion(Meta("good", 1, v1::VERSION_ABORTED, "node-1"));
  EXPECT_FALSE(s.ok());
}

TEST_F(PeerAttackTest, AForgedTombstoneDeletesNothing) {
  // A tombstone is believed only from the member it names as its deleter, and
  // only if that member holds it: this node itself, a stranger and nobody fail.
  for (const std::string deleter : {"node-1", "node-7", ""}) {
    v1::VersionMeta meta = Meta("good", 1, v1::VERSION_DELETED, "node-1");
    v1::VersionRecord record;
    ASSERT_TRUE(record.ParseFromString(meta.version_record()));
    record.set_deleted_by(deleter);
    meta.set_version_record(record.SerializeAsString());
    grpc::Status s = PutVersion(meta);
    EXPECT_FALSE(s.ok()) << "deleter '" << deleter << "'";
    EXPECT_FALSE(fs::is_empty(DataPath() + "/shards/good/v1")) << "a forged tombstone removed good@1's files";
  }
  v1::VersionMeta escape = Meta("../../victim", 1, v1::VERSION_DELETED, "node-1");
  EXPECT_EQ(PutVersion(escape).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(PeerAttackTest, ARunningIngestIsNotAborted) {
  IngestOptions options;
  options.dataset = "running";
  auto writer = node_->client().StartIngest(options);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  for (uint64_t i = 0; i < 50; ++i) {
    Sample sample;
    sample.key = std::to_string(i);
    sample.fields.push_back(Field{"bin", SyntheticPayload(i)});
    ASSERT_TRUE(writer.value()->Write(sample).ok());
  }
  // Wait until the server has created the version (the client sends the open
  // message with the first samples).
  bool ingesting = false;
  for (int tries = 0; tries < 2000 && !ingesting; ++tries) {
    grpc::ClientContext context;
    v1::ListDatasetsRequest request;
    request.set_include_unsealed(true);
    v1::ListDatasetsReply reply;
    ASSERT_TRUE(admin_->ListDatasets(&context, request, &reply).ok());
    for (const auto& d : reply.datasets()) ingesting |= d.name() == "running" && d.version() == 1;
    if (!ingesting) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(ingesting) << "the ingest never reached the server";
  for (const std::string coordinator : {"node-1", "node-2"}) {
    grpc::Status s = PutVersion(Meta("running", 1, v1::VERSION_ABORTED, coordinator));
    EXPECT_FALSE(s.ok()) << coordinator;
  }
  auto committed = writer.value()->Commit();
  ASSERT_TRUE(committed.ok()) << "the running ingest was aborted: " << committed.status().ToString();
  EXPECT_EQ(committed->dataset.samples, 50u);
  EXPECT_EQ(LatestVersion("running"), 1u);
}

TEST_F(PeerAttackTest, AForgedIngestPartIsRefusedAndAbortsItsIngest) {
  // Ingest with several writers: a part is checked field by field before the
  // home keeps anything of it, and its shard paths are never the sender's.
  auto join = [&](const std::string& id, uint32_t writers, uint32_t writer, v1::JoinIngestReply* reply) {
    grpc::ClientContext context;
    v1::JoinIngestRequest request;
    request.mutable_options()->set_dataset("forged");
    request.mutable_options()->set_ingest_id(id);
    request.mutable_options()->set_writers(writers);
    request.mutable_options()->set_writer(writer);
    return peer_->JoinIngest(&context, request, reply);
  };
  // What a home asks the other nodes: joins only an ingest open there.
  auto join_open = [&](const std::string& id, v1::JoinIngestReply* reply) {
    grpc::ClientContext context;
    v1::JoinIngestRequest request;
    request.mutable_options()->set_dataset("forged");
    request.mutable_options()->set_ingest_id(id);
    request.mutable_options()->set_writers(2);
    request.mutable_options()->set_writer(1);
    return peer_->JoinOpenIngest(&context, request, reply);
  };
  auto commit = [&](const v1::IngestPart& part) {
    grpc::ClientContext context;
    v1::CommitPartReply reply;
    return peer_->CommitPart(&context, part, &reply);
  };
  v1::JoinIngestReply joined;
  EXPECT_EQ(join_open("atk", &joined).error_code(), grpc::StatusCode::NOT_FOUND) << "nothing is created";
  EXPECT_EQ(join_open("../atk", &joined).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(join("atk", 2, 2, &joined).error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "writer out of range";
  EXPECT_EQ(join("../atk", 2, 0, &joined).error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "a path as ingest id";
  ASSERT_TRUE(join("atk", 2, 0, &joined).ok());
  // Whether it is open here (a home's question before it takes a part).
  auto find = [&](const std::string& id, v1::FindIngestReply* reply) {
    grpc::ClientContext context;
    v1::FindIngestRequest request;
    request.set_ingest_id(id);
    return peer_->FindIngest(&context, request, reply);
  };
  v1::FindIngestReply found;
  EXPECT_EQ(find("../atk", &found).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(find("atk", &found).ok());
  EXPECT_TRUE(found.open());
  EXPECT_EQ(found.version(), joined.version());
  ASSERT_TRUE(find("never-joined", &found).ok());
  EXPECT_FALSE(found.open());
  // A forged withdrawal: a writer out of range, or one that never joined, changes nothing.
  auto withdraw = [&](uint32_t writer) {
    grpc::ClientContext context;
    v1::AbortIngestRequest request;
    request.set_ingest_id("atk");
    request.set_withdraw(true);
    request.set_writer(writer);
    v1::AbortIngestReply reply;
    return peer_->AbortIngest(&context, request, &reply);
  };
  EXPECT_TRUE(withdraw(7).ok());
  EXPECT_TRUE(withdraw(1).ok());
  EXPECT_EQ(join("atk", 2, 0, &joined).error_code(), grpc::StatusCode::ALREADY_EXISTS) << "writer 0 is still joined";
  // An abort by version (an operator's, forwarded): a bad or unversioned name
  // is refused; one of a version no ingest writes finds nothing.
  auto abort_version = [&](const std::string& id, const std::string& dataset, v1::AbortIngestReply* reply) {
    grpc::ClientContext context;
    v1::AbortIngestRequest request;
    request.set_ingest_id(id);
    request.set_dataset(dataset);
    return peer_->AbortIngest(&context, request, reply);
  };
  v1::AbortIngestReply aborted;
  EXPECT_EQ(abort_version("", "../forged@1", &aborted).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(abort_version("", "forged", &aborted).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(abort_version("atk", "forged@1", &aborted).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(abort_version("", "", &aborted).error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "names nothing";
  ASSERT_TRUE(abort_version("", "forged@" + std::to_string(joined.version() + 7), &aborted).ok());
  EXPECT_FALSE(aborted.found());
  ASSERT_TRUE(find("atk", &found).ok());
  EXPECT_TRUE(found.open()) << "no abort by version touched it";

  v1::IngestPart part;
  part.set_ingest_id("atk");
  part.set_dataset("forged");
  part.set_version(joined.version());
  part.set_writer(0);
  part.set_samples(5);
  part.add_strata("x");
  part.set_stratum_ordinals(std::string(20, '\0'));
  auto* label = part.add_label_counts();
  label->set_key("x");
  label->set_count(5);
  v1::ShardRecord shard;
  shard.set_path("../../outside/000000.shard");
  shard.mutable_info()->set_seq(999999);  // writer 1's range, not writer 0's
  shard.mutable_info()->set_samples(5);
  part.add_shard_records(shard.SerializeAsString());
  EXPECT_EQ(commit(part).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // The ingest is aborted for every writer; nothing of it is visible or outside.
  EXPECT_EQ(join("atk", 2, 1, &joined).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(join_open("atk", &joined).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(find("atk", &found).ok());
  EXPECT_FALSE(found.open()) << "an aborted ingest is not open";
  EXPECT_EQ(node_->client().Describe("forged").status().code(), Code::kNotFound);
  EXPECT_FALSE(fs::exists(Outside("outside")));
  // A part of an ingest this home never heard of.
  part.set_ingest_id("never-joined");
  EXPECT_EQ(commit(part).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(PeerAttackTest, OversizedStreamRequestsAreRefusedWithTheLimit) {
  v1::StreamRequest request;
  request.set_dataset("good");
  request.set_batch_size(10);
  request.set_world(1);
  request.set_job_id(std::string(8 << 20, 'j'));
  ExpectLimitNamed(Stream(request), "256");
  request.clear_job_id();
  for (int i = 0; i < 100000; ++i) request.add_members("n");
  ExpectLimitNamed(Stream(request), "4096");
  request.clear_members();
  request.set_dataset(std::string(8 << 20, 'd'));
  ExpectLimitNamed(Stream(request), "160");
  request.set_dataset("good");
  for (int i = 0; i < 70000; ++i) (*request.mutable_sampler()->mutable_weights())["s" + std::to_string(i)] = 1;
  ExpectLimitNamed(Stream(request), "65536");
  request.mutable_sampler()->clear_weights();
  // Zones and racks: bounded, and only the characters a node's config allows.
  request.add_members("node-1");
  request.add_member_zones(std::string(8 << 20, 'z'));
  ExpectLimitNamed(Stream(request), "64");
  request.set_member_zones(0, "zone\x1b[2J");
  const grpc::Status escape = Stream(request);
  EXPECT_EQ(escape.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(escape.error_message().find("use letters, digits"), std::string::npos) << escape.error_message();
  request.clear_member_zones();
  request.add_member_racks(std::string(100, 'r'));
  ExpectLimitNamed(Stream(request), "64");
  request.clear_member_racks();
  request.set_zone(std::string(65, 'z'));
  ExpectLimitNamed(Stream(request), "64");
}

TEST_F(PeerAttackTest, OversizedAdminAndIngestRequestsAreRefusedWithTheLimit) {
  {
    grpc::ClientContext context;
    v1::DescribeDatasetRequest request;
    request.set_dataset(std::string(8 << 20, 'd'));
    v1::DescribeDatasetReply reply;
    ExpectLimitNamed(admin_->DescribeDataset(&context, request, &reply), "160");
  }
  {
    grpc::ClientContext context;
    v1::IngestReply reply;
    auto writer = data_->Ingest(&context, &reply);
    v1::IngestRequest open;
    open.mutable_open()->set_dataset("fine");
    for (int i = 0; i < 1000; ++i) open.mutable_open()->add_stratify_by("label");
    writer->Write(open);
    writer->WritesDone();
    ExpectLimitNamed(writer->Finish(), "16");
  }
  {
    grpc::ClientContext context;
    v1::ReadRecordsRequest request;
    request.mutable_file()->set_dataset("good");
    request.mutable_file()->set_version(1);
    for (uint64_t i = 0; i < 100000; ++i) request.add_indexes(i);
    v1::ReadRecordsReply reply;
    ExpectLimitNamed(peer_->ReadRecords(&context, request, &reply), "65536");
  }
}

// One 3 MiB record asked for 65,536 times (a count within the limit) would be
// a 192 GiB reply, built in the server's memory: the reply stops at the byte
// bound, a prefix of the request, and every record in it is the one asked.
TEST_F(PeerAttackTest, ARecordAskedForManyTimesGetsAReplyBoundedInBytes) {
  SyntheticIngest how{.labels = 1};
  how.payload = [](uint64_t i) { return std::string(size_t{3} << 20, static_cast<char>('a' + i)); };
  auto ingested = TryIngestSynthetic(node_->client(), "large", 2, how);
  ASSERT_TRUE(ingested.ok()) << ingested.status().ToString();
  grpc::ClientContext context;
  v1::ReadRecordsRequest request;
  request.mutable_file()->set_kind(v1::FileRef::SHARD);
  request.mutable_file()->set_dataset("large");
  request.mutable_file()->set_version(1);
  request.mutable_file()->set_seq(0);
  for (size_t i = 0; i < InputLimits::kMaxRecordsPerRead; ++i) request.add_indexes(1);
  v1::ReadRecordsReply reply;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // as a node's peer channels
  auto peer =
      v1::PeerService::NewStub(grpc::CreateCustomChannel(node_->address(), grpc::InsecureChannelCredentials(), args));
  const grpc::Status s = peer->ReadRecords(&context, request, &reply);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_GT(reply.records_size(), 0);
  size_t bytes = 0;
  for (const std::string& r : reply.records()) {
    EXPECT_EQ(r, reply.records(0));
    bytes += r.size();
  }
  EXPECT_LT(bytes, InputLimits::kMaxReadReplyBytes + (size_t{4} << 20));
  EXPECT_GE(bytes, InputLimits::kMaxReadReplyBytes);
  EXPECT_NE(reply.records(0).find(std::string(1000, 'b')), std::string::npos) << "record 1's payload";
}

}  // namespace
}  // namespace strata::testing
