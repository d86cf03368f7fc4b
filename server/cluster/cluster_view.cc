#include "server/cluster/cluster_view.h"

#include <google/protobuf/util/message_differencer.h>

#include <map>

#include "server/cluster/membership.h"

namespace strata {

ClusterView::ClusterView(std::string self_id, Metrics* metrics) : self_id_(std::move(self_id)), metrics_(metrics) {
  map_.set_membership("static");
  v1::NodeInfo* self = map_.add_nodes();
  self->set_id(self_id_);
  self->set_state(v1::NODE_UP);
}

v1::ClusterMap ClusterView::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_;
}

bool ClusterView::IsUp(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const v1::NodeInfo* n = FindNode(map_, id);
  return n != nullptr && n->state() == v1::NODE_UP;
}

void ClusterView::Update(const v1::ClusterMap& map) {
  std::vector<std::function<void()>> subscribers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (map.epoch() < map_.epoch() && map.membership() == map_.membership()) return;  // stale
    // New disk figures alone (membership passes them every heartbeat) are
    // taken but wake no subscriber: nothing to place or repair anew.
    const bool disks_only =
        !google::protobuf::util::MessageDifferencer::Equals(map, map_) && SameApartFromDisks(map, map_);
    map_ = map;
    if (!disks_only) subscribers = on_change_;
  }
  int up = 0;
  std::map<std::string, bool> peers_up;
  for (const auto& n : map.nodes()) {
    up += n.state() == v1::NODE_UP;
    if (n.id() != self_id_) peers_up[n.id()] = n.state() == v1::NODE_UP;
  }
  metrics_->SetPeersUp(peers_up);
  metrics_->map_epoch.Set(static_cast<double>(map.epoch()));
  metrics_->nodes_up.Set(up);
  for (const auto& fn : subscribers) fn();
}

void ClusterView::Subscribe(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  on_change_.push_back(std::move(fn));
}

}  // namespace strata
