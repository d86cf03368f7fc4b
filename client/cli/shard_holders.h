// Which nodes hold each shard of a version, for `strata describe --shards`:
// the placement every node computes (common/placement.h) over the cluster map
// the client was given, with each holder's zone.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "strata/cluster.h"
#include "strata/dataset.h"

namespace strata::cli {

struct ShardHolder {
  std::string id;
  std::string zone;  // empty: the node names none
};

// Per shard of `description` (same order), its holders in rank order: the
// first R of the shard's ranked members, R being the version's replication
// (or the default for the map's size).
std::vector<std::vector<ShardHolder>> ShardHolders(const DatasetDescription& description, const ClusterMap& map);

// "node-1 (zone-a), node-4 (zone-b)"; a holder with no zone is its id alone.
std::string HoldersText(const std::vector<ShardHolder>& holders);
// [{"node": "node-1", "zone": "zone-a"}, ...]
nlohmann::json HoldersJson(const std::vector<ShardHolder>& holders);

}  // namespace strata::cli
