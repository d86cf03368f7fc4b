// How many shards of sealed versions lack copies, as one node sees them: from
// its cluster map (which holders are up) and its own inventory (which of its
// files it has). Other nodes' inventories are not asked for, so each node
// reports its own view; across the cluster take the max, not the sum.
//
// Thread-safety: reads the node's catalog and inventory, both thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "server/storage/catalog.h"
#include "server/storage/local_files.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

struct ShardHealth {
  // Shards with a holder (by placement over the map's members) that is not
  // up, or that is this node and lacks the file.
  uint64_t under_replicated = 0;
  // Shards none of whose holders can serve them: every holder is down, or is
  // this node lacking the file.
  uint64_t missing = 0;
};

// `self` is this node's id; `files` its inventory.
ShardHealth CountShardHealth(const Catalog& catalog, const LocalFiles& files, const std::string& self,
                             const v1::ClusterMap& map);

}  // namespace strata
