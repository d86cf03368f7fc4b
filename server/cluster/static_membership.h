// Static membership: the node list from the config, with liveness from
// heartbeats. See membership.h.
//
// The heartbeat is a PeriodicTask on the executor it is given: each run pings
// every other node at once (asynchronous calls, waited for up to the
// heartbeat interval) and recomputes the map. A reply's disk figures become
// the replier's NodeInfo.disk_*; this node's own come from its DiskSpace.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <map>
#include <vector>

#include "common/mutex.h"
#include "server/base/periodic_task.h"
#include "server/cluster/membership.h"

namespace strata {

class StaticMembership final : public Membership {
 public:
  // `executor` runs the heartbeat; a run blocks for up to the heartbeat
  // interval (the pings' deadline). `disk`: see Membership::Create.
  StaticMembership(const NodeConfig& config, const v1::NodeInfo& self, PeerClients* peers,
                   boost::asio::any_io_executor executor, const DiskSpace* disk = nullptr);
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

  void PingAll();
  // Rebuilds the map from the peers' liveness; notifies on change.
  void Recompute() EXCLUDES(mu_);

  const ClusterConfig config_;
  const v1::NodeInfo self_;
  PeerClients* const peers_;
  const DiskSpace* const disk_;
  const std::chrono::steady_clock::time_point started_;

  mutable Mutex mu_;
  std::map<std::string, Peer> others_ GUARDED_BY(mu_);
  v1::ClusterMap map_ GUARDED_BY(mu_);
  std::vector<std::function<void(const v1::ClusterMap&)>> subs_ GUARDED_BY(mu_);
  PeriodicTask heartbeat_;  // last: stopped before the rest goes
};

}  // namespace strata
