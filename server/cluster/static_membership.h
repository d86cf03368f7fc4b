// Static membership: the node list from the config, with liveness from
// heartbeats. See membership.h.
#pragma once

#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "server/cluster/membership.h"

namespace strata {

class StaticMembership final : public Membership {
 public:
  StaticMembership(const NodeConfig& config, const v1::NodeInfo& self, PeerClients* peers);
  ~StaticMembership() override;

  Status Start() override;
  void Stop() override;
  v1::ClusterMap Current() const override;
  void Subscribe(std::function<void(const v1::ClusterMap&)> fn) override;

 private:
  struct Peer {
    v1::NodeInfo info;
    std::chrono::steady_clock::time_point last_seen;
    bool ever_seen = false;
  };

  void Run();
  void PingAll();
  // Rebuilds the map from the peers' liveness; notifies on change.
  void Recompute() EXCLUDES(mu_);

  const ClusterConfig config_;
  const v1::NodeInfo self_;
  PeerClients* const peers_;
  const std::chrono::steady_clock::time_point started_;

  mutable Mutex mu_;
  std::map<std::string, Peer> others_ GUARDED_BY(mu_);
  v1::ClusterMap map_ GUARDED_BY(mu_);
  std::vector<std::function<void(const v1::ClusterMap&)>> subs_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  CondVar wake_;
  std::thread thread_;
};

}  // namespace strata
