#include "server/cluster/membership.h"

#include <google/protobuf/util/message_differencer.h>

#include "server/cluster/etcd_membership.h"
#include "server/cluster/static_membership.h"

namespace strata {

Result<std::unique_ptr<Membership>> Membership::Create(const NodeConfig& config, const v1::NodeInfo& self,
                                                       PeerClients* peers, boost::asio::any_io_executor executor,
                                                       const DiskSpace* disk) {
  if (config.cluster.membership == "etcd") return NewEtcdMembership(config, self, std::move(executor), disk);
  if (config.cluster.membership == "static") {
    return std::unique_ptr<Membership>(
        std::make_unique<StaticMembership>(config, self, peers, std::move(executor), disk));
  }
  return Status::InvalidArgument("unknown membership '" + config.cluster.membership + "'");
}

std::vector<std::string> MapMembers(const v1::ClusterMap& map) {
  std::vector<std::string> out;
  for (const auto& n : map.nodes()) out.push_back(n.id());
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

void SetDisk(const DiskSpace& disk, v1::NodeInfo* node) {
  const DiskFigures f = disk.Last();
  node->set_disk_free_bytes(f.free_bytes);
  node->set_disk_total_bytes(f.total_bytes);
  node->set_disk_full(disk.BelowHigh());
}

void CopyDisk(const v1::NodeInfo& from, v1::NodeInfo* to) {
  to->set_disk_free_bytes(from.disk_free_bytes());
  to->set_disk_total_bytes(from.disk_total_bytes());
  to->set_disk_full(from.disk_full());
}

void ClearDisk(v1::NodeInfo* node) { CopyDisk(v1::NodeInfo(), node); }

std::set<std::string> FullNodes(const v1::ClusterMap& map) {
  std::set<std::string> out;
  for (const auto& n : map.nodes()) {
    if (n.disk_full()) out.insert(n.id());
  }
  return out;
}

std::string PassedOverForCopies(const v1::ClusterMap& map, const std::set<std::string>& full) {
  std::string out;
  for (const v1::NodeInfo& n : map.nodes()) {
    const char* why = full.count(n.id())         ? " is full (free space below its disk_high_watermark)"
                      : n.state() != v1::NODE_UP ? " is down"
                                                 : nullptr;
    if (why != nullptr) out += (out.empty() ? "" : "; ") + n.id() + why;
  }
  return out;
}

bool SameApartFromDisks(const v1::ClusterMap& a, const v1::ClusterMap& b) {
  v1::ClusterMap x = a;
  v1::ClusterMap y = b;
  for (auto& n : *x.mutable_nodes()) ClearDisk(&n);
  for (auto& n : *y.mutable_nodes()) ClearDisk(&n);
  return google::protobuf::util::MessageDifferencer::Equals(x, y);
}

}  // namespace strata
