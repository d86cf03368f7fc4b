// ClusterView: this node's latest cluster map, shared by everything that
// places or fetches files. It starts as a map of this node alone, so that the
// components built before the node joins (and calls served in that moment)
// see a consistent one-node cluster; membership feeds it updates once the
// node has joined.
//
// Thread-safety: safe for concurrent use. Subscribe before updates begin.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "server/base/metrics.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

class ClusterView {
 public:
  // `metrics` (map_epoch, nodes_up) must outlive the view.
  ClusterView(std::string self_id, Metrics* metrics);

  const std::string& self_id() const { return self_id_; }
  v1::ClusterMap Current() const;
  // Whether the current map lists `id` as up (without copying the map).
  bool IsUp(const std::string& id) const;

  // Takes `map` unless it is older than the current one of the same
  // membership kind; then calls the subscribers (outside the lock), unless
  // only the nodes' disk figures changed.
  void Update(const v1::ClusterMap& map);
  // `fn` runs after every accepted update, on the updating thread.
  void Subscribe(std::function<void()> fn);

 private:
  const std::string self_id_;
  Metrics* const metrics_;
  mutable std::mutex mu_;
  v1::ClusterMap map_;                            // GUARDED_BY(mu_)
  std::vector<std::function<void()>> on_change_;  // GUARDED_BY(mu_)
};

}  // namespace strata
