// The etcd membership's class, for tests that need its knobs or a simulated
// crash; everything else uses NewEtcdMembership (etcd_membership.h).
//
// Keys, under /strata/<cluster>/:
//   nodes/<id>  serialized v1::NodeInfo (id, address, metrics_address, and
//               the disk figures, rewritten when they move), attached to the
//               node's lease: it vanishes when the node does.
//   map         serialized v1::ClusterMap (nodes, membership, cluster; epoch
//               unset; no disk figures): readers take the epoch from the key's
//               mod_revision. Current() adds each node's disk figures as last
//               read from its registration (this node's own from its disk).
//
// Every node reconciles (on each watch event, and every reconcile_interval so
// that grace periods end without events): registered nodes are NODE_UP; nodes
// in the map no longer registered are NODE_DOWN from the first time a node saw
// them gone; DOWN for grace_period_s or longer they leave the map. A change is
// written with a transaction that compares the map key's mod_revision with the
// one read; a node that loses the race re-reads and tries again. etcd orders
// the writes; strata needs no consensus of its own.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "server/base/periodic_task.h"
#include "server/cluster/etcd_client.h"
#include "server/cluster/membership.h"

namespace strata {

struct EtcdMembershipOptions {
  // Start() gives up (Unavailable) when etcd has not answered for this long.
  std::chrono::milliseconds start_timeout{5000};
  // Reconcile at least this often, events or not.
  std::chrono::milliseconds reconcile_interval{1000};
  // Deadline of each call to etcd.
  std::chrono::milliseconds call_timeout{2000};
  // This node's disk, reported in its registration (see Membership::Create);
  // nullptr: none reported.
  const DiskSpace* disk = nullptr;
};

class EtcdMembership final : public Membership {
 public:
  // REQUIRES: config.cluster.etcd_endpoints non-empty. `executor` runs the
  // reconciliation (a PeriodicTask, kicked by the watches and by a lost
  // lease); a run blocks on etcd calls for up to their deadline.
  EtcdMembership(const NodeConfig& config, const v1::NodeInfo& self, boost::asio::any_io_executor executor,
                 EtcdMembershipOptions options = {});
  ~EtcdMembership() override;  // Stop()

  // REQUIRES: called once, not concurrently with Stop().
  Status Start() override;
  void Stop() override;
  v1::ClusterMap Current() const override;
  void Subscribe(std::function<void(const v1::ClusterMap&)> fn) override;

  // Test-only: stops every thread and the keep-alive without revoking the
  // lease, as a crash or kill -9 would; the registration lingers for the
  // lease's TTL. Stop() afterwards does nothing more.
  void CrashForTesting();

 private:
  // OK when nodes/<self> is free: absent, or this node's own (same address: a
  // restart within the lease of the process it replaces). FailedPrecondition
  // when another address holds it (its lease in *held_lease): another stratad
  // with this id, or one that stopped without revoking its lease (which Start
  // waits out: the time that lease has left). Errors of etcd as they are.
  Status CheckIdFree(int64_t* held_lease);
  // Grants a lease, writes nodes/<self> under it and keeps it alive. Returns
  // the revision of the write. Revokes `previous` (0: none) once replaced.
  Result<int64_t> Register(int64_t previous_lease);
  // One reconciliation: registers again if the lease was lost, then
  // Reconcile(). Returns the delay until the next.
  std::chrono::milliseconds Step();
  // Reads the map and the registrations, publishes the map, and writes a new
  // one if it is out of date. Returns false if this node's own registration is
  // missing although its lease was thought alive.
  bool Reconcile();
  // Makes `map` (epoch = its revision) the current one; notifies on a change
  // of content. REQUIRES: mu_ not held; called from a run of task_.
  void Publish(const v1::ClusterMap& map) EXCLUDES(mu_);
  // Takes the disk figures read from the registrations (by id); notifies on
  // a change once a map has been read.
  void PublishDisks(std::map<std::string, v1::NodeInfo> disks) EXCLUDES(mu_);
  // `map` with every node's disk figures as last heard.
  v1::ClusterMap WithDisks(const v1::ClusterMap& map) const REQUIRES(mu_);
  // What this node writes under nodes/<id> now: self_ and its disk figures.
  v1::NodeInfo RegistrationNow() const;
  void Shutdown(bool revoke);

  const ClusterConfig config_;
  const v1::NodeInfo self_;  // as registered: id, address, metrics_address
  const EtcdMembershipOptions options_;
  const std::string prefix_;  // /strata/<cluster>/
  const std::string nodes_prefix_;
  const std::string node_key_;
  const std::string map_key_;
  EtcdClient client_;

  // Owned by the thread that runs Start(), then by the runs of task_, then
  // by the thread that runs Stop(); never two at once.
  EtcdLease lease_;
  bool registered_ = false;
  v1::NodeInfo registered_as_;  // as last written under nodes/<self>
  bool etcd_ok_ = true;         // for logging transitions only
  std::unique_ptr<EtcdKeepAlive> keep_alive_;
  std::unique_ptr<EtcdWatch> nodes_watch_;
  std::unique_ptr<EtcdWatch> map_watch_;

  mutable Mutex mu_;
  CondVar cv_;
  v1::ClusterMap map_ GUARDED_BY(mu_);                         // as in etcd: no disk figures
  std::map<std::string, v1::NodeInfo> disks_ GUARDED_BY(mu_);  // by id, from the registrations
  std::vector<std::function<void(const v1::ClusterMap&)>> subs_ GUARDED_BY(mu_);
  bool started_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool lease_lost_ GUARDED_BY(mu_) = false;  // the keep-alive gave up
  bool first_pass_ GUARDED_BY(mu_) = false;  // task_ has reconciled once
  // Declared last: built after what its runs use. Stopped by Shutdown().
  PeriodicTask task_;
};

}  // namespace strata
