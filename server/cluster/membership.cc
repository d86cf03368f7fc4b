#include "server/cluster/membership.h"

#include "server/cluster/etcd_membership.h"
#include "server/cluster/static_membership.h"

namespace strata {

Result<std::unique_ptr<Membership>> Membership::Create(const NodeConfig& config, const v1::NodeInfo& self,
                                                       PeerClients* peers, boost::asio::any_io_executor executor) {
  if (config.cluster.membership == "etcd") return NewEtcdMembership(config, self, std::move(executor));
  if (config.cluster.membership == "static") {
    return std::unique_ptr<Membership>(std::make_unique<StaticMembership>(config, self, peers, std::move(executor)));
  }
  return Status::InvalidArgument("unknown membership '" + config.cluster.membership + "'");
}

std::vector<std::string> MapMembers(const v1::ClusterMap& map) {
  std::vector<std::string> out;
  for (const auto& n : map.nodes()) out.push_back(n.id());
  return out;
}

std::vector<PlacementMember> PlacementMembers(const v1::ClusterMap& map) {
  return PlacementMembers(map, [](const v1::NodeInfo&) { return true; });
}

std::vector<PlacementMember> PlacementMembers(const v1::ClusterMap& map,
                                              const std::function<bool(const v1::NodeInfo&)>& keep) {
  std::vector<PlacementMember> out;
  for (const auto& n : map.nodes()) {
    if (keep(n)) out.push_back({n.id(), n.zone(), n.rack()});
  }
  return out;
}

std::vector<std::string> MapDownNodes(const v1::ClusterMap& map) {
  std::vector<std::string> out;
  for (const auto& n : map.nodes()) {
    if (n.state() != v1::NODE_UP) out.push_back(n.id());
  }
  return out;
}

const v1::NodeInfo* FindNode(const v1::ClusterMap& map, const std::string& id) {
  for (const auto& n : map.nodes()) {
    if (n.id() == id) return &n;
  }
  return nullptr;
}

}  // namespace strata
