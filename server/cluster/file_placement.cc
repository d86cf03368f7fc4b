#include "server/cluster/file_placement.h"

#include <algorithm>

#include "common/placement.h"
#include "server/cluster/membership.h"

namespace strata {

std::vector<v1::FileRef> DesiredFiles(const Catalog& catalog, const std::string& self, const v1::ClusterMap& map) {
  std::vector<v1::FileRef> out;
  const PlacementSet members(PlacementMembers(map));
  const auto versions = catalog.ListVersions(false).value_or({});
  for (const auto& v : versions) {
    const auto& info = v.info();
    // Versions from before the stratum index existed have none.
    if (v.has_strata_index()) out.push_back(IndexRef(info.name(), info.version()));
    const uint32_t r = info.replication() != 0 ? info.replication() : DefaultReplication(members.size());
    const auto shards = catalog.ListShards(info.name(), info.version()).value_or({});
    for (const auto& s : shards) {
      const auto holders = members.HolderIds(ShardFileKey(info.name(), info.version(), s.info().seq()), r);
      if (std::find(holders.begin(), holders.end(), self) != holders.end()) {
        out.push_back(ShardRef(info.name(), info.version(), s.info().seq()));
      }
    }
  }
  return out;
}

std::vector<v1::FileRef> ExtraFiles(const Catalog& catalog, const LocalFiles& files, const std::string& self,
                                    const v1::ClusterMap& map) {
  std::vector<v1::FileRef> out;
  const PlacementSet members(PlacementMembers(map));
  for (const v1::FileRef& f : files.List("", 0)) {
    if (f.kind() != v1::FileRef::SHARD) continue;
    auto record = catalog.GetVersion(f.dataset(), f.version());
    if (!record.ok() || record->info().state() != v1::VERSION_SEALED) continue;  // not ours to judge yet
    const uint32_t r = ReplicationOf(catalog, f.dataset(), f.version(), map);
    const auto holders = members.HolderIds(ShardFileKey(f.dataset(), f.version(), f.seq()), r);
    if (std::find(holders.begin(), holders.end(), self) == holders.end()) out.push_back(f);
  }
  return out;
}

uint32_t ReplicationOf(const Catalog& catalog, const std::string& name, uint64_t version, const v1::ClusterMap& map) {
  auto record = catalog.GetVersion(name, version);
  const uint32_t r = record.ok() ? record->info().replication() : 0;
  return r != 0 ? r : DefaultReplication(static_cast<size_t>(map.nodes_size()));
}

}  // namespace strata
