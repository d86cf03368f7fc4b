// Shared by the multi-writer ingest tests: each writer's samples, the
// options of one writer's part, and every sample of a dataset read back.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/placement.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {

// Writer w's sample j: its own payload and label, so that a sample's id says
// which writer sent it and where.
inline std::string PartPayload(uint32_t w, uint64_t j) { return "w" + std::to_string(w) + "-" + SyntheticPayload(j); }
inline std::string PartLabel(uint32_t w, uint64_t j) { return "label" + std::to_string((w + j) % 4); }

inline IngestOptions PartOptions(const std::string& id, uint32_t writers, uint32_t writer) {
  IngestOptions o;
  o.dataset = "parts";
  o.ingest_id = id;
  o.writers = writers;
  o.writer = writer;
  o.replication = 2;
  o.shard_target_bytes = 8 << 10;  // several shards per writer
  return o;
}

inline Status WriteSamples(IngestWriter& writer, uint32_t w, uint64_t n) {
  for (uint64_t j = 0; j < n; ++j) {
    Sample s;
    s.key = "w" + std::to_string(w) + "-" + std::to_string(j);
    s.label = PartLabel(w, j);
    s.fields.push_back({"bin", PartPayload(w, j)});
    STRATA_RETURN_IF_ERROR(writer.Write(s));
  }
  return Status::OK();
}

// Writers 0..n-1 of ingest `id` of `of` writers, started through `client`,
// each sent `samples` of its samples (WriteSamples); the first error else.
inline Result<std::vector<std::unique_ptr<IngestWriter>>> StartWriters(Client& client, const std::string& id,
                                                                       uint32_t of, uint32_t n, uint64_t samples) {
  std::vector<std::unique_ptr<IngestWriter>> open;
  for (uint32_t w = 0; w < n; ++w) {
    auto started = client.StartIngest(PartOptions(id, of, w));
    if (!started.ok()) return started.status().WithContext("starting writer " + std::to_string(w));
    open.push_back(std::move(started).value());
    STRATA_RETURN_IF_ERROR(WriteSamples(*open.back(), w, samples));
  }
  return open;
}

// A cluster's nodes as the writers' placement sees them: their ids, and
// the index of a dataset's home (the first in its ranked order).
struct NodesAndHome {
  std::vector<std::string> ids;
  int home = 0;
  int IndexOf(const std::string& id) const {
    return static_cast<int>(std::find(ids.begin(), ids.end(), id) - ids.begin());
  }
};
inline NodesAndHome HomeOf(const LocalCluster& cluster, const std::string& dataset) {
  NodesAndHome n;
  for (int i = 0; i < cluster.size(); ++i) n.ids.push_back(cluster.Id(i));
  n.home = n.IndexOf(RankMembers(DatasetHomeKey(dataset), n.ids).front());
  return n;
}
// An ingest id PREFIX-K whose writer `writer` starts at a node that is not
// the home (writer w starts at the w-th node in the id's ranked order:
// Client::StartIngest), so that its node asks the home.
inline std::string IngestIdAwayFromHome(const NodesAndHome& nodes, const std::string& prefix, uint32_t writer) {
  for (int k = 0;; ++k) {
    const std::string id = prefix + "-" + std::to_string(k);
    if (nodes.IndexOf(RankMembers(id, nodes.ids)[writer]) != nodes.home) return id;
  }
}

// Every sample of `dataset` as (label, payload), in no particular order.
inline std::multiset<std::pair<std::string, std::string>> Samples(Client& client, const std::string& dataset) {
  std::multiset<std::pair<std::string, std::string>> out;
  StreamOptions o;
  o.dataset = dataset;
  o.batch_size = 64;
  const RankRun run = StreamAll(client, o);
  EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  for (const Batch& b : run.batches) {
    for (size_t i = 0; i < b.size(); ++i) out.emplace(b.labels()[i], std::string(b.sample(i)));
  }
  return out;
}

}  // namespace strata::testing
