// Membership: which nodes form the cluster and which are up, as a ClusterMap
// (strata/v1/cluster.proto) that every node and client shares.
//
// Two implementations:
//  - static: the node list from the config (the embedded default: one node
//    needs no coordinator). Liveness comes from heartbeats (PeerService.Ping):
//    a node that has not answered for failure_timeout_ms is NODE_DOWN, and one
//    down for grace_period_s leaves this node's map. Views may differ between
//    nodes for a moment; shards are immutable and copies idempotent, so a
//    difference costs at most an extra copy, never data.
//  - etcd: each node registers under a lease (/strata/<cluster>/nodes/<id>);
//    the map lives under one key (/strata/<cluster>/map) whose revision is the
//    map epoch. Any node rewrites the map with a compare-and-swap transaction
//    when registrations change (a lease expired: NODE_DOWN; down past the grace
//    period: removed; registered again: NODE_UP). Nodes watch the map key.
//    etcd provides the consensus; strata has none of its own.
//
// Each node's disk figures (NodeInfo.disk_*: free, total, below the high
// watermark) travel with membership: static, in the heartbeat's PingReply;
// etcd, in the node's registration, written again under the same lease when
// its figures move (by 1% of the total, or across the watermark). They are
// not written into the etcd map key and change no epoch; a change of them
// alone is still passed to the subscribers. A node not heard from yet reports
// total 0 and is not full.
//
// Thread-safety: Current() and Subscribe() are safe from any thread; callbacks
// run on the membership's executor and must not block for long.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "common/file_placement.h"  // PlacementMembers
#include "common/placement.h"
#include "common/status.h"
#include "server/base/config.h"
#include "server/cluster/peer_clients.h"
#include "server/storage/disk_space.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

class Membership {
 public:
  // Picks the implementation from config.cluster.membership. `self` describes
  // this node (id, advertised address, metrics address). `peers` must outlive
  // the membership. `executor` runs its periodic work (heartbeats, etcd
  // reconciliation), which blocks on network calls for up to their deadline:
  // the daemon's background pool. `disk` (nullable; else it must outlive the
  // membership) is this node's disk, whose last sample its NodeInfo reports;
  // the membership only reads it (PeerDisks samples it).
  static Result<std::unique_ptr<Membership>> Create(const NodeConfig& config, const v1::NodeInfo& self,
                                                    PeerClients* peers, boost::asio::any_io_executor executor,
                                                    const DiskSpace* disk = nullptr);

  virtual ~Membership() = default;

  // Joins (etcd: registers under a lease and starts keeping it alive) and
  // starts following the cluster. Unavailable if etcd cannot be reached.
  virtual Status Start() = 0;
  // Leaves (etcd: revokes the lease, so the others see it at once) and stops
  // its threads. Idempotent.
  virtual void Stop() = 0;

  // The latest map. Before Start() it holds this node alone.
  virtual v1::ClusterMap Current() const = 0;

  // `fn` runs after every change of the map, with the new map.
  virtual void Subscribe(std::function<void(const v1::ClusterMap&)> fn) = 0;
};

// The map's placement members (every listed node) and the nodes that are not
// up, as id lists (for placement and StreamRequest.members/excluded).
std::vector<std::string> MapMembers(const v1::ClusterMap& map);
std::vector<std::string> MapDownNodes(const v1::ClusterMap& map);
// The node with id `id`, or nullptr.
const v1::NodeInfo* FindNode(const v1::ClusterMap& map, const std::string& id);

// Disk figures in a NodeInfo: `disk`'s last sample into `node`; the disk
// fields of `from` into `to`; cleared.
void SetDisk(const DiskSpace& disk, v1::NodeInfo* node);
void CopyDisk(const v1::NodeInfo& from, v1::NodeInfo* to);
void ClearDisk(v1::NodeInfo* node);
// The listed nodes that report their disk below the high watermark.
std::set<std::string> FullNodes(const v1::ClusterMap& map);
// The nodes of `map` that take no new copies, and why, for errors: "node-2
// is down; node-3 is full (free space below its disk_high_watermark)", the
// nodes in `full` counting as full. Empty if every node is up and not full.
std::string PassedOverForCopies(const v1::ClusterMap& map, const std::set<std::string>& full);
// True when the maps are equal but for their nodes' disk figures.
bool SameApartFromDisks(const v1::ClusterMap& a, const v1::ClusterMap& b);

}  // namespace strata
