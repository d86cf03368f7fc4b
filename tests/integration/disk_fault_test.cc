// Disk faults injected into real stratad processes through the file seam
// (common/file_env.h): each node is started with STRATA_FAULTS_FILE naming one
// rules file, and a rule's text (a node's data directory, a dataset's shard
// folder) picks what fails. Reads failing with EIO are served from another
// holder; with no holder left the stream fails with a status, not a crash.
// Writes failing with ENOSPC and fsync failing with EIO fail the ingest, which
// is never acknowledged, and the server keeps serving; once the fault is gone
// the same ingest succeeds.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "common/status.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

// Sets STRATA_FAULTS_FILE for the processes started while it lives.
class FaultRules {
 public:
  explicit FaultRules(const TempDir& dir) : path_(dir.Join("faults")) {
    Set("");
    setenv("STRATA_FAULTS_FILE", path_.c_str(), 1);
  }
  ~FaultRules() { unsetenv("STRATA_FAULTS_FILE"); }
  void Set(const std::string& rules) { std::ofstream(path_, std::ios::trunc) << rules; }

 private:
  const std::string path_;
};

// Many shards, spread over the nodes.
Status Ingest(Client& client, const std::string& dataset, uint64_t n, uint32_t replication = 0) {
  return TryIngestSynthetic(client, dataset, n, {.replication = replication, .shard_target_bytes = 16 << 10}).status();
}

// Every sample of a dataset of n, exactly once, with its payload.
void ExpectWhole(const RankRun& run, uint64_t n) {
  EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  std::set<uint64_t> ids;
  for (const auto& b : run.batches) {
    for (size_t i = 0; i < b.size(); ++i) {
      EXPECT_TRUE(ids.insert(b.ids()[i]).second) << "id " << b.ids()[i] << " twice";
      EXPECT_EQ(b.sample(i), SyntheticPayload(b.ids()[i]));
    }
  }
  EXPECT_EQ(ids.size(), n);
}

bool Serving(LocalCluster& cluster, int i) { return cluster.Map(i).nodes.size() == 3; }

// The sealed version is known to every node (the seal's broadcast, or
// anti-entropy for a node it missed).
bool VisibleEverywhere(LocalCluster& cluster, const std::string& dataset) {
  for (int i = 0; i < cluster.size(); ++i) {
    auto c = Client::Connect(cluster.Address(i));
    if (!c.ok() || !c.value()->Describe(dataset).ok()) return false;
  }
  return true;
}

// Three nodes started with the fault rules, a client of all three, and
// `dataset` (2000 samples, two copies of each shard) known to every node.
class DiskFaultTest : public ::testing::Test {
 protected:
  DiskFaultTest() : faults_(dir_) {}

  void StartWith(const std::string& dataset) {
    LocalCluster::Options o;
    o.nodes = 3;
    cluster_ = std::make_unique<LocalCluster>(o);
    LocalCluster& c = *cluster_;
    ASSERT_TRUE(Eventually([&] { return c.UpIn(0) == 3 && c.UpIn(1) == 3 && c.UpIn(2) == 3; }, 30s));
    auto client = Client::Connect(c.Addresses());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
    const Status ingested = Ingest(*client_, dataset, 2000, 2);
    ASSERT_TRUE(ingested.ok()) << ingested.ToString();
    ASSERT_TRUE(Eventually([&] { return VisibleEverywhere(c, dataset); }, 30s));
  }

  TempDir dir_;
  FaultRules faults_;
  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(DiskFaultTest, ReadsFailingWithEioAreServedByAnotherHolder) {
  ASSERT_NO_FATAL_FAILURE(StartWith("eio"));
  LocalCluster& cluster = *cluster_;
  // node-2's disk cannot read the dataset's shards: the other holder of each serves it.
  faults_.Set("read EIO " + cluster.Id(1) + "/shards/eio/\n");
  ExpectWhole(StreamDataset(*client_, "eio"), 2000);
  EXPECT_TRUE(Serving(cluster, 1)) << "node-2 keeps running";
  EXPECT_NE(cluster.Process(1).Log().find("Input/output error"), std::string::npos) << "the fault was hit:\n"
                                                                                    << cluster.Process(1).Log();
}

TEST_F(DiskFaultTest, ReadsFailingOnEveryHolderEndTheStreamWithAStatus) {
  ASSERT_NO_FATAL_FAILURE(StartWith("gone"));
  LocalCluster& cluster = *cluster_;
  faults_.Set("read EIO /shards/gone/\n");
  const RankRun run = StreamDataset(*client_, "gone");
  EXPECT_TRUE(run.end.code() == Code::kDataLoss || run.end.code() == Code::kUnavailable) << run.end.ToString();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Serving(cluster, i)) << cluster.Id(i) << " keeps running";
  if (::testing::Test::HasFailure()) {
    for (int i = 0; i < 3; ++i) ADD_FAILURE() << cluster.Process(i).Log();
  }
  faults_.Set("");
  // Nothing was lost: the disks read again, and a new stream is whole.
  ExpectWhole(StreamDataset(*client_, "gone"), 2000);
}

class SingleNodeFaultTest : public ::testing::Test {
 protected:
  SingleNodeFaultTest() : faults_(dir_) { node_ = std::make_unique<SingleNode>(); }
  TempDir dir_;
  FaultRules faults_;
  std::unique_ptr<SingleNode> node_;
};

TEST_F(SingleNodeFaultTest, WritesFailingWithEnospcFailTheIngestAndNothingIsAcknowledged) {
  faults_.Set("write ENOSPC /shards/full/\n");
  Status s = Ingest(node_->client(), "full", 2000);
  EXPECT_EQ(s.code(), Code::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s.ToString();
  EXPECT_FALSE(node_->client().Describe("full").ok()) << "no version of it is visible";
  ASSERT_TRUE(Ingest(node_->client(), "other", 100).ok()) << "the server keeps running";
  faults_.Set("");
  ASSERT_TRUE(Ingest(node_->client(), "full", 2000).ok());
  ExpectWhole(StreamDataset(node_->client(), "full"), 2000);
}

TEST_F(SingleNodeFaultTest, FsyncFailingWithEioFailsTheIngest) {
  faults_.Set("fsync EIO /shards/synced/\n");
  Status s = Ingest(node_->client(), "synced", 2000);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fsync"), std::string::npos) << s.ToString();
  EXPECT_FALSE(node_->client().Describe("synced").ok()) << "no version of it is visible";
  faults_.Set("");
  ASSERT_TRUE(Ingest(node_->client(), "synced", 2000).ok());
  ExpectWhole(StreamDataset(node_->client(), "synced"), 2000);
}

}  // namespace
}  // namespace strata::testing
