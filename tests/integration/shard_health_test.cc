// The per-node shard health (strata_shards_under_replicated,
// strata_shards_missing, `strata status`'s UNDER-REPL and MISSING) against
// the copies the nodes actually hold. An ingest while a node is down puts
// that node's copies on the next members in placement order: a node that
// counted placement holders alone reported those shards under-replicated, and
// once a second node went down, missing, while every sample could be read.
#include <gtest/gtest.h>

#include <map>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

// Shard seq -> copies over the nodes listed, from their inventories.
std::map<uint32_t, int> Copies(LocalCluster& cluster, const std::vector<int>& nodes, const std::string& name,
                               uint64_t version) {
  std::map<uint32_t, int> copies;
  auto client = cluster.Connect(nodes[0]);
  for (int i : nodes) {
    auto files = client->ListNodeFiles(cluster.Address(i));
    EXPECT_TRUE(files.ok()) << files.status().ToString();
    if (!files.ok()) continue;
    for (const FileRef& f : *files) {
      if (f.dataset == name && f.version == version && f.kind == FileRef::Kind::kShard) ++copies[f.seq];
    }
  }
  return copies;
}

// Whether node i reports `under` under-replicated and `missing` missing shards.
bool Reports(LocalCluster& cluster, int i, uint64_t under, uint64_t missing) {
  auto client = cluster.Connect(i);
  auto status = client->GetNodeStatus(cluster.Address(i));
  return status.ok() && status->shards_under_replicated == under && status->shards_missing == missing;
}

TEST(ShardHealthTest, CopiesOffPlacementCount) {
  LocalCluster cluster(LocalCluster::Options{});
  cluster.Kill(2);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 2 && cluster.UpIn(1) == 2; }, 30s));
  auto client = cluster.Connect(1);
  SyntheticIngest how{.labels = 4, .replication = 2, .shard_target_bytes = 16 << 10};
  auto ingested = TryIngestSynthetic(*client, "health", 6000, how);
  ASSERT_TRUE(ingested.ok()) << ingested.status().ToString();
  const uint64_t version = ingested->dataset.version;
  const uint64_t shards = ingested->dataset.shards;
  ASSERT_GE(shards, 20u);

  // Two nodes up: every shard has its two copies on them (none is short).
  std::map<uint32_t, int> copies = Copies(cluster, {0, 1}, "health", version);
  ASSERT_EQ(copies.size(), shards);
  uint64_t under = 0;
  for (const auto& [seq, n] : copies) under += n < 2;
  EXPECT_EQ(under, 0u) << "the ingest left shards short of copies";
  for (int i : {0, 1}) {
    EXPECT_TRUE(Eventually([&] { return Reports(cluster, i, under, 0); }, 30s))
        << "node " << i << ": " << cluster.Connect(i)->GetNodeStatus(cluster.Address(i)).value().shards_under_replicated
        << " under-replicated of " << shards;
  }

  // One node up: what it holds is readable (one copy of two), the rest missing.
  cluster.Kill(0);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(1) == 1; }, 30s));
  copies = Copies(cluster, {1}, "health", version);
  const uint64_t held = copies.size();
  ASSERT_GT(held, 0u);
  EXPECT_TRUE(Eventually([&] { return Reports(cluster, 1, held, shards - held); }, 30s))
      << "node 1 holds " << held << " of " << shards << " shards";
}

}  // namespace
}  // namespace strata::testing
