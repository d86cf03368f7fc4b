// How many shards of sealed versions lack copies, as one node sees them: from
// its cluster map (which holders are up), its own inventory (which of its
// files it has), and, for a shard whose placement holders are not all up,
// the inventories of the members ranked after them (where an ingest or a
// repair that found a holder down put the copies). A placement holder that is
// up is taken to hold its copy (the repair loop sees to it), so each node
// reports its own view; across the cluster take the max, not the sum.
//
// Thread-safety: reads the node's catalog and inventory, both thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "server/storage/catalog.h"
#include "server/storage/local_files.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

struct ShardHealth {
  // Shards with fewer readable copies than placement gives them holders: a
  // holder that is down (or is this node lacking the file), not made up for
  // by a copy on another node that is up.
  uint64_t under_replicated = 0;
  // Shards no node that is up can serve.
  uint64_t missing = 0;
};

// Whether node `id` (up, not this one) holds `file`, as its inventory says.
using HeldBy = std::function<bool(const std::string& id, const v1::FileRef& file)>;

// `self` is this node's id; `files` its inventory; `held_by` asks another
// node (nullptr: copies off placement on other nodes are not counted).
ShardHealth CountShardHealth(const Catalog& catalog, const LocalFiles& files, const std::string& self,
                             const v1::ClusterMap& map, const HeldBy& held_by = nullptr);

}  // namespace strata
