// Static membership: the node list from the config, with liveness from
// heartbeats. See membership.h.
//
// The heartbeat is a PeriodicTask on the executor it is given: each run sends
// a ping to every other node that has none out (asynchronous calls; it never
// waits for them) and recomputes the map. A ping's deadline is the failure
// timeout, not the heartbeat interval: an answer that comes late still shows
// the node alive, so a peer whose round trip exceeds the heartbeat interval
// (a loaded node, a slow link) stays up. A node is down once it has been
// silent for the failure timeout and its last ping has ended unanswered (an
// error, or its deadline passed): a node whose own callbacks run late, being
// stalled or starved, does not take that delay for its peers' silence. A
// node down for the grace period (counted from when it went down) leaves the
// map. A reply's disk figures become the replier's NodeInfo.disk_*; this
// node's own come from its DiskSpace.
#pragma once

#include <grpcpp/grpcpp.h>

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "server/base/periodic_task.h"
#include "server/cluster/membership.h"

namespace strata {

class StaticMembership final : public Membership {
 public:
  // `executor` runs the heartbeat (a run does not block). `disk`: see
  // Membership::Create.
  StaticMembership(const NodeConfig& config, const v1::NodeInfo& self, PeerClients* peers,
                   boost::asio::any_io_executor executor, const DiskSpace* disk = nullptr);
  ~StaticMembership() override;

  Status Start() override;
  // Ends the heartbeat, cancels the pings still out and returns once their
  // callbacks have run.
  void Stop() override;
  v1::ClusterMap Current() const override;
  void Subscribe(std::function<void(const v1::ClusterMap&)> fn) override;

 private:
  struct Peer {
    v1::NodeInfo info;
    std::chrono::steady_clock::time_point last_seen;  // its last answer (or this node's start)
    std::chrono::steady_clock::time_point down_at;    // when this node took it for down
    bool unanswered = false;                          // its last ping ended without an answer
  };
  struct PingCall;

  // Sends a ping to each peer with none out.
  void PingAll() EXCLUDES(mu_);
  // A ping's end: an answer refreshes the peer's last_seen and disk figures.
  void Pinged(const std::string& id, const grpc::Status& status, const v1::PingReply& reply) EXCLUDES(mu_);
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
  std::map<std::string, std::shared_ptr<PingCall>> calls_ GUARDED_BY(mu_);  // the pings out, by peer id
  bool stopped_ GUARDED_BY(mu_) = false;
  CondVar calls_done_;      // calls_ emptied
  PeriodicTask heartbeat_;  // last: stopped before the rest goes
};

}  // namespace strata
