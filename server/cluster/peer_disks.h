// PeerDisks: how full every node's disk is, as this node last heard. Each
// tick samples this node's own DiskSpace and pings the other nodes that are
// up (in parallel, with a short deadline): a PingReply carries the replier's
// disk figures and whether it is below its high watermark ("full").
// Placement at ingest skips full nodes (IngestReplication).
//
// A node not heard from yet, or that did not answer the last tick, counts as
// not full: being unreachable is membership's concern, and a full node that
// is sent a replica anyway refuses it past its low watermark.
//
// Thread-safety: Full() and All() are safe from any thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <map>
#include <set>
#include <string>

#include "common/mutex.h"
#include "server/base/periodic_task.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/peer_clients.h"
#include "server/storage/disk_space.h"

namespace strata {

class PeerDisks {
 public:
  struct Report {
    DiskFigures figures;
    bool full = false;
  };
  // Every pointer must outlive the PeerDisks. Ticks run on `background`,
  // `interval` apart.
  PeerDisks(DiskSpace* self, const ClusterView* view, PeerClients* peers, boost::asio::any_io_executor background,
            std::chrono::milliseconds interval);
  ~PeerDisks();

  // The first tick runs at once. Stop() waits for the tick in progress.
  void Start();
  void Stop();

  // The nodes (this one included) last reported full.
  std::set<std::string> Full() const;
  // Every node's last report, by id (this node's own included).
  std::map<std::string, Report> All() const;

 private:
  void Tick();

  DiskSpace* const self_;
  const ClusterView* const view_;
  PeerClients* const peers_;
  const std::chrono::milliseconds interval_;
  mutable Mutex mu_;
  std::map<std::string, Report> reports_ GUARDED_BY(mu_);
  PeriodicTask task_;  // last: stopped before the members its ticks use go
};

}  // namespace strata
