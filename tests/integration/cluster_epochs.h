// Helpers of the cluster tests: ingest with replication, one epoch on every
// rank (threads) with its payloads checked, and the check that two epochs
// delivered the same batches with every sample exactly once.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {

using Steps = std::vector<std::vector<uint64_t>>;  // per step, the rank's ids in order

inline IngestSummary IngestReplicated(Client& client, const std::string& dataset, uint64_t n, uint32_t replication,
                                      WritePolicy policy = WritePolicy::kSync, Status* error = nullptr) {
  SyntheticIngest how{.labels = 5, .replication = replication, .shard_target_bytes = 16 << 10};  // many shards
  how.options.write_policy = policy;
  auto reply = TryIngestSynthetic(client, dataset, n, how);
  if (!reply.ok()) {
    if (error) *error = reply.status();
    return {};
  }
  return reply.value();
}

// Streams one epoch on `world` ranks (threads); `at_step(rank, step)` runs after
// each batch. Checks payloads on the way, and that every rank reached the
// epoch's end (OutOfRange) unless `end` is given: it then gets each rank's
// final status.
inline std::vector<Steps> RunRanks(LocalCluster& cluster, int seed_node, const std::string& dataset, uint32_t world,
                                   uint32_t batch, const std::function<void(uint32_t, uint64_t)>& at_step = {},
                                   SamplerSpec::Kind sampler = SamplerSpec::Kind::kShuffle,
                                   std::vector<Status>* end = nullptr) {
  std::vector<Steps> out(world);
  std::vector<Status> ends(world);
  std::vector<std::jthread> threads;
  for (uint32_t r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      auto client = cluster.Connect(seed_node);
      ASSERT_NE(client, nullptr);
      StreamOptions o;
      o.dataset = dataset;
      o.rank = r;
      o.world = world;
      o.batch_size = batch;
      o.seed = 3;
      o.sampler.kind = sampler;
      auto stream = client->OpenStream(o);
      ASSERT_TRUE(stream.ok()) << stream.status().ToString();
      for (;;) {
        Batch b;
        Status s = stream.value()->Next(&b);
        if (!s.ok()) {
          ends[r] = s;
          break;
        }
        for (size_t i = 0; i < b.size(); ++i) {
          EXPECT_EQ(b.sample(i), SyntheticPayload(b.ids()[i])) << "id " << b.ids()[i];
        }
        out[r].push_back(b.ids());
        if (at_step) at_step(r, b.step());
      }
    });
  }
  for (auto& t : threads) t.join();
  if (end) *end = ends;
  for (uint32_t r = 0; r < world && !end; ++r) {
    EXPECT_EQ(ends[r].code(), Code::kOutOfRange) << "rank " << r << ": " << ends[r].ToString();
  }
  return out;
}

inline void ExpectSameAndExactlyOnce(const std::vector<Steps>& got, const std::vector<Steps>& want, uint64_t n) {
  ASSERT_EQ(got.size(), want.size());
  std::map<uint64_t, int> seen;
  for (size_t r = 0; r < got.size(); ++r) {
    ASSERT_EQ(got[r].size(), want[r].size()) << "rank " << r;
    for (size_t k = 0; k < got[r].size(); ++k) {
      EXPECT_EQ(got[r][k], want[r][k]) << "rank " << r << " step " << k;
      for (uint64_t id : got[r][k]) ++seen[id];
    }
  }
  ASSERT_EQ(seen.size(), n);
  for (const auto& [id, count] : seen) ASSERT_EQ(count, 1) << "id " << id;
}

inline LocalCluster::Options Nodes(int n, int start = -1) {
  LocalCluster::Options o;
  o.nodes = n;
  o.start = start;
  return o;
}

inline StreamOptions EpochOf(const std::string& dataset, uint32_t batch) {
  StreamOptions o;
  o.dataset = dataset;
  o.batch_size = batch;
  return o;
}

}  // namespace strata::testing
