// Which files placement gives a node, from the catalog and the cluster map:
// what the repair loop pulls and what it may release.
//
// Thread-safety: pure functions of their arguments (the catalog and the
// inventory are safe for concurrent use).
#pragma once

#include <string>
#include <vector>

#include "server/storage/catalog.h"
#include "server/storage/local_files.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

// The files placement gives node `self`: the shards of sealed versions whose
// holders include it, and every sealed version's stratum index.
std::vector<v1::FileRef> DesiredFiles(const Catalog& catalog, const std::string& self, const v1::ClusterMap& map);
// The local shard copies of sealed versions that placement no longer gives `self`.
std::vector<v1::FileRef> ExtraFiles(const Catalog& catalog, const LocalFiles& files, const std::string& self,
                                    const v1::ClusterMap& map);
// A version's replication factor, or the default for the map's size when the
// version is unknown or recorded none.
uint32_t ReplicationOf(const Catalog& catalog, const std::string& name, uint64_t version, const v1::ClusterMap& map);

}  // namespace strata
