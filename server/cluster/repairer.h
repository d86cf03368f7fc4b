// Repair and rebalance, pull-based: every node makes sure it holds what
// placement gives it, and nothing more.
//
// Each round (every repair_interval_ms, or at once after the map changes):
//  1. Anti-entropy: version metadata (sealed and aborted) this node lacks is
//     fetched from the nodes that are up, so a node that was down or joined
//     late learns every dataset.
//  2. Pull: for every sealed version, the shards whose holders (placement over
//     the map's members) include this node, and the version's stratum index
//     (every node holds one), are copied here from a node that has them,
//     throttled to repair_bytes_per_sec. A node that died past its grace
//     period has left the map, so its shards have new holders who pull them; a
//     joining node pulls its share the same way.
//     A node whose disk is below its high watermark pulls nothing (the
//     shards stay under-replicated, and visible as such, rather than fill it).
//  3. Release: a copy here that placement no longer gives this node (after a
//     join, or a hand-off at ingest) is deleted once every holder confirms it
//     holds the file; only while every member is up and the map has not
//     changed for a while, so nodes with briefly different views cannot
//     together delete the last copies.
// Nothing is remembered between rounds: after a crash the next round simply
// finds what is still missing. Reads go on meanwhile.
//
// Thread-safety: Progress() may be called from any thread.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <map>
#include <set>

#include "server/base/metrics.h"
#include "server/base/periodic_task.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/peer_clients.h"
#include "server/cluster/rate_limiter.h"
#include "server/cluster/version_sync.h"
#include "server/storage/catalog.h"
#include "server/storage/data_dir.h"
#include "server/storage/dataset_cache.h"
#include "server/storage/disk_space.h"
#include "server/storage/local_files.h"
#include "strata/v1/admin.pb.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

class Repairer {
 public:
  // What a repair round reads and changes. Every pointer must outlive the Repairer.
  struct Deps {
    const ClusterView* view = nullptr;
    PeerClients* peers = nullptr;
    Catalog* catalog = nullptr;
    DataDir* dir = nullptr;
    LocalFiles* files = nullptr;
    DatasetCache* cache = nullptr;  // a released shard's open reader is dropped
    VersionSync* versions = nullptr;
    Metrics* metrics = nullptr;
    const DiskSpace* disk = nullptr;  // below its high watermark the node pulls nothing; nullptr: no check
  };
  // Rounds run on `background` (a round blocks on peer calls and copies),
  // `interval` apart; copies are throttled to `bytes_per_sec` (0: unlimited).
  Repairer(Deps deps, boost::asio::any_io_executor background, std::chrono::milliseconds interval,
           uint64_t bytes_per_sec);
  ~Repairer();

  // The first round starts at once.
  void Start();
  // Ends the round in progress early and waits for it; no round starts after.
  void Stop();
  // Runs a round soon (the map changed, a copy was quarantined).
  void Kick();

  v1::RepairProgress Progress() const;

 private:
  void Round();
  void SyncCatalog(const v1::ClusterMap& map);
  void PullMissing(const v1::ClusterMap& map);
  void ReleaseExtras(const v1::ClusterMap& map);
  // Whether `node` holds `file`: its ListLocalFiles of the file's version
  // (nothing if it does not answer), asked again unless asked since
  // `asked_since`, and only before `ask_until` (after it: false, unasked).
  // Only the repair loop's thread calls it.
  bool Holds(const v1::NodeInfo& node, const v1::FileRef& file, std::chrono::steady_clock::time_point asked_since,
             std::chrono::steady_clock::time_point ask_until);
  bool Stopping() const;
  Status ReleaseFile(const v1::FileRef& file);

  const Deps d_;
  const std::chrono::milliseconds interval_;
  RateLimiter limiter_;
  std::atomic<bool> stopping_{false};  // Stop() began
  // Progress figures (atomics: read by GetStatus while a round runs).
  std::atomic<uint64_t> files_missing_{0};
  std::atomic<uint64_t> files_copied_{0};
  std::atomic<uint64_t> bytes_copied_{0};
  std::atomic<uint64_t> files_released_{0};
  bool skipped_for_disk_ = false;  // the last round pulled nothing for want of room (logged once)
  // When the map's member set last changed (release waits for it to settle).
  uint64_t last_epoch_ = 0;
  std::chrono::steady_clock::time_point map_changed_at_{};
  // Other nodes' inventories by (node, dataset@version), with when asked.
  struct Held {
    std::chrono::steady_clock::time_point asked;
    std::set<LocalFiles::Key> files;
  };
  std::map<std::pair<std::string, std::string>, Held> held_;
  // Last: stopped (and so idle) before the members its rounds use go.
  PeriodicTask task_;
};

}  // namespace strata
