#include "client/cli/shard_holders.h"

#include "common/placement.h"

namespace strata::cli {

std::vector<std::vector<ShardHolder>> ShardHolders(const DatasetDescription& description, const ClusterMap& map) {
  std::vector<PlacementMember> members;
  for (const NodeInfo& n : map.nodes) members.push_back({n.id, n.zone, n.rack});
  const PlacementSet set(std::move(members));
  const DatasetInfo& d = description.dataset;
  const uint32_t r = d.replication != 0 ? d.replication : DefaultReplication(map.nodes.size());
  std::vector<std::vector<ShardHolder>> out;
  out.reserve(description.shards.size());
  for (const ShardInfo& s : description.shards) {
    std::vector<ShardHolder>& holders = out.emplace_back();
    // Erasure coded: the shard's one holder, its stripe's member at its
    // position (server/storage/ec_stripes.h).
    std::vector<std::string> ids;
    if (d.ec_data != 0) {
      const auto ranked = set.RankIds(EcStripeKey(d.name, d.version, s.seq / d.ec_data));
      if (!ranked.empty()) ids.push_back(ranked[(s.seq % d.ec_data) % ranked.size()]);
    } else {
      ids = set.HolderIds(ShardFileKey(d.name, d.version, s.seq), r);
    }
    for (const std::string& id : ids) {
      std::string zone;
      for (const NodeInfo& n : map.nodes) {
        if (n.id == id) zone = n.zone;
      }
      holders.push_back({id, zone});
    }
  }
  return out;
}

std::string HoldersText(const std::vector<ShardHolder>& holders) {
  std::string out;
  for (const ShardHolder& h : holders) {
    if (!out.empty()) out += ", ";
    out += h.id;
    if (!h.zone.empty()) out += " (" + h.zone + ")";
  }
  return out;
}

nlohmann::json HoldersJson(const std::vector<ShardHolder>& holders) {
  nlohmann::json out = nlohmann::json::array();
  for (const ShardHolder& h : holders) out.push_back({{"node", h.id}, {"zone", h.zone}});
  return out;
}

}  // namespace strata::cli
