#include "server/cluster/file_placement.h"

#include <algorithm>

#include "common/placement.h"
#include "server/cluster/membership.h"
#include "server/storage/ec_stripes.h"

namespace strata {

std::vector<v1::FileRef> DesiredFiles(const Catalog& catalog, const std::string& self, const v1::ClusterMap& map) {
  std::vector<v1::FileRef> out;
  const PlacementSet members(PlacementMembers(map));
  const auto versions = catalog.ListVersions(false).value_or({});
  const auto mine = [&](const v1::DatasetInfo& info, const v1::FileRef& file) {
    const auto holders = FileHolders(info, file, members);
    return std::find(holders.begin(), holders.end(), self) != holders.end();
  };
  for (const auto& v : versions) {
    const auto& info = v.info();
    // Versions from before the stratum index existed have none.
    if (v.has_strata_index()) out.push_back(IndexRef(info.name(), info.version()));
    const auto shards = catalog.ListShards(info.name(), info.version()).value_or({});
    for (const auto& s : shards) {
      const v1::FileRef file = ShardRef(info.name(), info.version(), s.info().seq());
      if (mine(info, file)) out.push_back(file);
    }
    if (!IsErasureCoded(info)) continue;
    const uint32_t k = info.ec_data(), m = info.ec_parity();
    for (uint32_t g = 0; g < StripeCount(shards.size(), k); ++g) {
      for (uint32_t p = 0; p < m; ++p) {
        const v1::FileRef file = StripeFile(info.name(), info.version(), g, k + p, k, m);
        if (mine(info, file)) out.push_back(file);
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
    if (f.kind() != v1::FileRef::SHARD && f.kind() != v1::FileRef::PARITY) continue;
    auto record = catalog.GetVersion(f.dataset(), f.version());
    if (!record.ok() || record->info().state() != v1::VERSION_SEALED) continue;  // not ours to judge yet
    const auto holders = FileHolders(record->info(), f, members);
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
