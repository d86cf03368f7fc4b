// The cluster half of `strata status`: every node's state and background work,
// and each dataset version's replica health, gathered from the nodes that are up.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "strata/client.h"

namespace strata::cli {

// A version's data shards by how whole their copies are. Replicated: a
// shard's copies against `replication`. Erasure coded (ec:K+M): the chunks of
// its stripe (its K data shards and M parity files), so a shard that has lost
// its only copy but can be rebuilt from K chunks is under-replicated, not
// missing.
struct ReplicaHealth {
  std::string dataset;       // name@version
  uint32_t replication = 0;  // 0 when erasure coded
  uint32_t ec_data = 0;      // erasure coded: K (0: replicated)
  uint32_t ec_parity = 0;    // and M
  uint64_t shards = 0;
  uint64_t healthy = 0;           // at least `replication` copies; erasure coded: every chunk of its stripe
  uint64_t under_replicated = 0;  // some copies, fewer than `replication`; erasure coded: K chunks or more, not all
  uint64_t missing = 0;           // no copy on any node that is up; erasure coded: fewer than K chunks
  uint64_t index_copies = 0;      // nodes holding the stratum index
};

struct ClusterStatus {
  ClusterMap map;
  std::vector<Result<NodeStatus>> nodes;  // in map order; an error for nodes that did not answer (unreachable)
  std::vector<ReplicaHealth> datasets;
};

// Asks every node of `client`'s map, in parallel, each with a short deadline
// (Client::GetNodeStatus). Errors only if the map itself cannot be had.
Result<ClusterStatus> GatherClusterStatus(Client& client);

void PrintClusterStatus(std::ostream& out, const ClusterStatus& status);
nlohmann::json ClusterStatusJson(const ClusterStatus& status);

}  // namespace strata::cli
