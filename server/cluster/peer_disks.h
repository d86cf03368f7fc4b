// PeerDisks: how full every node's disk is, as this node last heard. Each
// tick samples this node's own DiskSpace (and logs when it crosses a
// watermark); the other nodes' figures come with membership (NodeInfo.disk_*
// in the cluster map: static membership's heartbeat, etcd registrations), so
// PeerDisks asks no node itself. Placement at ingest skips full nodes
// (IngestReplication); `strata status` lists them (NodeStatus).
//
// A node not heard from yet counts as not full: being unreachable is
// membership's concern, and a full node that is sent a replica anyway refuses
// it past its low watermark.
//
// Thread-safety: Full() is safe from any thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <set>
#include <string>

#include "server/base/periodic_task.h"
#include "server/cluster/cluster_view.h"
#include "server/storage/disk_space.h"

namespace strata {

class PeerDisks {
 public:
  // Every pointer must outlive the PeerDisks. Ticks run on `background`,
  // `interval` apart.
  PeerDisks(DiskSpace* self, const ClusterView* view, boost::asio::any_io_executor background,
            std::chrono::milliseconds interval);
  ~PeerDisks();

  // The first tick runs at once. Stop() waits for the tick in progress.
  void Start();
  void Stop();

  // The nodes (this one included, by its last sample) reported full.
  std::set<std::string> Full() const;

 private:
  void Tick();

  DiskSpace* const self_;
  const ClusterView* const view_;
  const std::chrono::milliseconds interval_;
  PeriodicTask task_;  // last: stopped before the members its ticks use go
};

}  // namespace strata
