// NodeStatus: the figures `strata status` shows for one node, gathered from
// the components that own them.
//
// Thread-safety: Get() is safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "server/base/active_work.h"
#include "server/base/config.h"
#include "server/base/metrics.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/peer_disks.h"
#include "server/cluster/repairer.h"
#include "server/storage/catalog.h"
#include "server/storage/data_dir.h"
#include "server/storage/disk_space.h"
#include "strata/v1/admin.pb.h"

namespace strata {

class NodeStatus {
 public:
  // Every pointer must outlive the NodeStatus.
  struct Deps {
    const Catalog* catalog = nullptr;
    const DataDir* dir = nullptr;
    const ClusterView* view = nullptr;
    const Repairer* repairer = nullptr;
    const ActiveWork* streams = nullptr;
    const ActiveWork* ingests = nullptr;
    Metrics* metrics = nullptr;
    const DiskSpace* disk = nullptr;        // nullptr: no disk figures
    const PeerDisks* peer_disks = nullptr;  // nullptr: no full nodes known
  };
  // Reads the node's id, addresses and data directory from `config`.
  NodeStatus(const NodeConfig& config, Deps deps);

  v1::StatusReply Get() const;

 private:
  const std::string node_id_;
  const std::string listen_;
  const std::string metrics_listen_;
  const std::string data_dir_;
  const int64_t started_unix_ms_;
  const Deps d_;
};

}  // namespace strata
