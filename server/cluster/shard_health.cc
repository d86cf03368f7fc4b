#include "server/cluster/shard_health.h"

#include "common/placement.h"
#include "server/cluster/membership.h"
#include "server/cluster/file_placement.h"

namespace strata {

ShardHealth CountShardHealth(const Catalog& catalog, const LocalFiles& files, const std::string& self,
                             const v1::ClusterMap& map) {
  ShardHealth out;
  const PlacementSet members(PlacementMembers(map));
  const auto versions = catalog.ListVersions(/*include_unsealed=*/false).value_or({});
  for (const auto& v : versions) {
    const auto& info = v.info();
    const uint32_t r = ReplicationOf(catalog, info.name(), info.version(), map);
    const auto shards = catalog.ListShards(info.name(), info.version()).value_or({});
    for (const auto& s : shards) {
      const uint32_t seq = s.info().seq();
      size_t readable = 0;
      bool short_of_copies = false;
      for (const std::string& holder : members.HolderIds(ShardFileKey(info.name(), info.version(), seq), r)) {
        const v1::NodeInfo* n = FindNode(map, holder);
        bool serves = n != nullptr && n->state() == v1::NODE_UP;
        if (serves && holder == self) serves = files.Has(ShardRef(info.name(), info.version(), seq));
        readable += serves;
        short_of_copies |= !serves;
      }
      out.under_replicated += short_of_copies;
      out.missing += readable == 0;
    }
  }
  return out;
}

}  // namespace strata
