// Deletion and retention on a real 3-node cluster (issue 21, item 5): `rm`
// removes a version from every listing and every holder's disk, the node that
// was down during it removes its copy when it returns, --keep-versions keeps
// the newest K, and a stream open on a deleted version ends with
// FailedPrecondition.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

// Ingests n samples as `dataset` with every shard on every node (replication 3).
IngestSummary Ingest3(Client& client, const std::string& dataset, uint64_t n, uint32_t keep_versions = 0) {
  SyntheticIngest how{.labels = 4, .replication = 3, .shard_target_bytes = 16 << 10};
  how.options.keep_versions = keep_versions;
  auto reply = TryIngestSynthetic(client, dataset, n, how);
  EXPECT_TRUE(reply.ok()) << reply.status().ToString();
  return reply.ok() ? reply.value() : IngestSummary();
}

// Regular files under node i's directory of name@version.
size_t FilesOf(LocalCluster& cluster, int i, const std::string& name, uint64_t version) {
  std::error_code ec;
  const std::string dir = cluster.DataDir(i) + "/shards/" + name + "/v" + std::to_string(version);
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    n += it->is_regular_file();
  }
  return n;
}

// The versions of `name` node i lists (sealed only).
std::set<uint64_t> Listed(LocalCluster& cluster, int i, const std::string& name) {
  std::set<uint64_t> out;
  auto client = cluster.Connect(i);
  if (client == nullptr) return out;
  auto list = client->ListDatasets();
  EXPECT_TRUE(list.ok()) << list.status().ToString();
  if (!list.ok()) return out;
  for (const auto& d : *list) {
    if (d.name == name) out.insert(d.version);
  }
  return out;
}

void WaitAllUp(LocalCluster& cluster) {
  for (int i = 0; i < cluster.size(); ++i) {
    ASSERT_TRUE(Eventually([&] { return cluster.UpIn(i) == cluster.size(); }, 30s)) << "node " << i;
  }
}

class RetentionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new LocalCluster(LocalCluster::Options{}); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { WaitAllUp(*cluster_); }
  static LocalCluster* cluster_;
};
LocalCluster* RetentionTest::cluster_ = nullptr;

TEST_F(RetentionTest, RmRemovesTheVersionFromEveryListingAndEveryDisk) {
  LocalCluster& cluster = *cluster_;
  auto client = cluster.Connect(0);
  ASSERT_NE(client, nullptr);
  // Version numbers in a cluster are unique, not consecutive (version_numbers.h).
  const uint64_t v1 = Ingest3(*client, "gone", 400).dataset.version;
  const uint64_t v2 = Ingest3(*client, "gone", 300).dataset.version;
  ASSERT_GT(v1, 0u);
  ASSERT_GT(v2, v1);
  const std::string first = "gone@" + std::to_string(v1);
  for (int i = 0; i < 3; ++i) {
    ASSERT_GT(FilesOf(cluster, i, "gone", v1), 0u) << "node " << i << " holds no copy: the test would prove nothing";
    // A sealed version reaches the other nodes by broadcast or anti-entropy.
    ASSERT_TRUE(Eventually(
        [&] {
          return Listed(cluster, i, "gone") == std::set<uint64_t>{v1, v2};
        },
        30s))
        << "node " << i;
  }

  auto deleted = client->DeleteVersion(first);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(deleted->dataset.state, VersionState::kDeleted);
  EXPECT_EQ(deleted->dataset.samples, 400u);
  EXPECT_EQ(deleted->nodes_told.size() + deleted->nodes_pending.size(), 2u);
  // The node asked, and every node told, applied it before the reply.
  std::set<std::string> told(deleted->nodes_told.begin(), deleted->nodes_told.end());
  for (int i = 0; i < 3; ++i) {
    if (i != 0 && !told.count(cluster.Id(i))) continue;
    EXPECT_EQ(Listed(cluster, i, "gone"), (std::set<uint64_t>{v2})) << "node " << i;
    EXPECT_EQ(FilesOf(cluster, i, "gone", v1), 0u) << "node " << i;
  }
  // Any other (a broadcast that failed) through anti-entropy.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(Eventually([&] { return Listed(cluster, i, "gone") == std::set<uint64_t>{v2}; }, 30s)) << i;
    EXPECT_TRUE(Eventually([&] { return FilesOf(cluster, i, "gone", v1) == 0; }, 30s)) << "node " << i;
    EXPECT_GT(FilesOf(cluster, i, "gone", v2), 0u) << "node " << i;
  }
  // With unsealed versions the tombstone shows as deleted.
  auto all = client->ListDatasets(/*include_unsealed=*/true);
  ASSERT_TRUE(all.ok());
  bool tombstone = false;
  for (const auto& d : *all) tombstone |= d.name == "gone" && d.version == v1 && d.state == VersionState::kDeleted;
  EXPECT_TRUE(tombstone);

  // The latest is now v2; the deleted number is never reused.
  auto latest = client->Describe("gone");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->dataset.version, v2);
  IngestOptions again;
  again.dataset = first;
  auto writer = client->StartIngest(again);
  Status reuse = writer.ok() ? writer.value()->Commit().status() : writer.status();
  EXPECT_EQ(reuse.code(), Code::kFailedPrecondition) << reuse.ToString();

  // Errors name what is wrong.
  auto unknown = client->DeleteVersion("gone@999");
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);
  EXPECT_NE(unknown.status().message().find("'gone' has no version 999"), std::string::npos)
      << unknown.status().ToString();
  auto nobody = cluster.Connect(1)->DeleteVersion("never@1");
  EXPECT_EQ(nobody.status().code(), Code::kNotFound) << nobody.status().ToString();
  EXPECT_EQ(client->DeleteVersion("gone").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(client->DeleteVersion("../../etc@1").status().code(), Code::kInvalidArgument);
  // Deleting it again is harmless.
  EXPECT_TRUE(client->DeleteVersion(first).ok());
}

TEST_F(RetentionTest, KeepVersionsKeepsTheNewestK) {
  LocalCluster& cluster = *cluster_;
  auto client = cluster.Connect(1);
  ASSERT_NE(client, nullptr);
  const uint64_t v1 = Ingest3(*client, "keep", 100).dataset.version;
  const uint64_t v2 = Ingest3(*client, "keep", 100).dataset.version;
  ASSERT_GT(v1, 0u);
  ASSERT_GT(v2, v1);
  for (int i = 0; i < 3; ++i) ASSERT_GT(FilesOf(cluster, i, "keep", v1), 0u);
  auto third = Ingest3(*client, "keep", 100, /*keep_versions=*/2);
  const uint64_t v3 = third.dataset.version;
  ASSERT_GT(v3, v2);
  EXPECT_EQ(third.dataset.keep_versions, 2u);
  // Retention runs as the version seals, before the ingest's reply; a node
  // whose broadcast failed catches up through anti-entropy.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(Eventually([&] { return Listed(cluster, i, "keep") == std::set<uint64_t>{v2, v3}; }, 30s)) << i;
    EXPECT_TRUE(Eventually([&] { return FilesOf(cluster, i, "keep", v1) == 0; }, 30s)) << "node " << i;
    EXPECT_GT(FilesOf(cluster, i, "keep", v2), 0u) << "node " << i;
  }
  const uint64_t v4 = Ingest3(*client, "keep", 100, /*keep_versions=*/1).dataset.version;
  ASSERT_GT(v4, v3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(Eventually([&] { return Listed(cluster, i, "keep") == std::set<uint64_t>{v4}; }, 30s)) << i;
    EXPECT_TRUE(Eventually([&] { return FilesOf(cluster, i, "keep", v2) + FilesOf(cluster, i, "keep", v3) == 0; }, 30s))
        << "node " << i;
  }
}

// Retention keeps the newest sealed versions: a version named below them
// with keep_versions would be deleted by its own seal, so it is refused
// before anything is stored; one that ranks among them keeps the newest K.
TEST_F(RetentionTest, KeepVersionsRefusesAVersionItWouldNotKeep) {
  LocalCluster& cluster = *cluster_;
  auto client = cluster.Connect(0);
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(Ingest3(*client, "low@10", 50).dataset.version, 10u);
  SyntheticIngest how{.labels = 4, .replication = 3, .shard_target_bytes = 16 << 10};
  how.options.keep_versions = 1;
  auto refused = TryIngestSynthetic(*client, "low@5", 50, how);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("would not be kept"), std::string::npos) << refused.status().ToString();
  how.options.keep_versions = 2;  // 10 and 7 are the newest two: 7 is kept, nothing older exists
  ASSERT_TRUE(TryIngestSynthetic(*client, "low@7", 50, how).ok());
  how.options.keep_versions = 0;
  ASSERT_TRUE(TryIngestSynthetic(*client, "low@3", 50, how).ok());
  how.options.keep_versions = 2;  // 8 and 10 stay; 3 and 7 go
  ASSERT_TRUE(TryIngestSynthetic(*client, "low@8", 50, how).ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(Eventually([&] { return Listed(cluster, i, "low") == std::set<uint64_t>{8, 10}; }, 30s)) << i;
  }
}

TEST_F(RetentionTest, AStreamOpenOnADeletedVersionEndsWithFailedPrecondition) {
  LocalCluster& cluster = *cluster_;
  auto client = cluster.Connect(0, /*stall_ms=*/10000);
  ASSERT_NE(client, nullptr);
  const uint64_t v = Ingest3(*client, "live", 3000).dataset.version;
  ASSERT_GT(v, 0u);
  const std::string live = "live@" + std::to_string(v);
  StreamOptions o;
  o.dataset = live;
  o.batch_size = 1;  // 3000 steps: far more than any node builds ahead
  auto stream = client->OpenStream(o);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  Batch b;
  ASSERT_TRUE(stream.value()->Next(&b).ok());
  // The sealed version reaches node 2 by broadcast or anti-entropy; until it
  // has, node 2 rightly knows no such version to delete.
  ASSERT_TRUE(Eventually([&] { return Listed(cluster, 2, "live").count(v) == 1; }, 30s));
  {
    auto del = cluster.Connect(2)->DeleteVersion(live);
    ASSERT_TRUE(del.ok()) << del.status().ToString();
  }
  Status end;
  uint64_t after = 0;
  while ((end = stream.value()->Next(&b)).ok()) ++after;
  EXPECT_EQ(end.code(), Code::kFailedPrecondition) << end.ToString();
  EXPECT_NE(end.message().find("was deleted"), std::string::npos) << end.ToString();
  EXPECT_LT(after, 2999u) << "the stream ran to the end of its epoch";
  // A new stream on it is refused the same way.
  auto again = client->OpenStream(o);
  Status refused = again.ok() ? again.value()->Next(&b) : again.status();
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition) << refused.ToString();
}

// Last: it stops and restarts a node of the shared cluster.
TEST_F(RetentionTest, ANodeDownDuringRmRemovesItsCopyWhenItReturns) {
  LocalCluster& cluster = *cluster_;
  auto client = cluster.Connect(0);
  ASSERT_NE(client, nullptr);
  const uint64_t v = Ingest3(*client, "away", 300).dataset.version;
  ASSERT_GT(v, 0u);
  ASSERT_GT(FilesOf(cluster, 2, "away", v), 0u);
  ASSERT_EQ(cluster.Process(2).Terminate(), 0) << cluster.Process(2).Log();

  auto deleted = client->DeleteVersion("away@" + std::to_string(v));
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(std::set<std::string>(deleted->nodes_pending.begin(), deleted->nodes_pending.end()),
            std::set<std::string>{cluster.Id(2)});
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(Listed(cluster, i, "away").empty()) << "node " << i;
    EXPECT_EQ(FilesOf(cluster, i, "away", v), 0u) << "node " << i;
  }
  EXPECT_GT(FilesOf(cluster, 2, "away", v), 0u) << "the stopped node's copy is still on its disk";

  cluster.Start(2);
  // Anti-entropy brings it the tombstone (a repair round every 200 ms).
  EXPECT_TRUE(Eventually([&] { return FilesOf(cluster, 2, "away", v) == 0; }, 60s)) << cluster.Process(2).Log();
  EXPECT_TRUE(Eventually([&] { return Listed(cluster, 2, "away").empty(); }, 60s));
  // And it never serves or lists it again, nor pulls it back.
  WaitAllUp(cluster);
  EXPECT_TRUE(Listed(cluster, 2, "away").empty());
  EXPECT_EQ(FilesOf(cluster, 2, "away", v), 0u);
}

}  // namespace
}  // namespace strata::testing
