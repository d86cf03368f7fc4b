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
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "common/mutex.h"
#include "server/cluster/local_files.h"
#include "strata/v1/admin.pb.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

class Node;

class Repairer {
 public:
  explicit Repairer(Node* node);
  ~Repairer();

  void Start();
  void Stop();
  // Runs a round soon (the map changed, a copy was quarantined).
  void Kick();

  v1::RepairProgress Progress() const;

 private:
  void Run();
  void Round();
  void SyncCatalog(const v1::ClusterMap& map);
  void PullMissing(const v1::ClusterMap& map);
  void ReleaseExtras(const v1::ClusterMap& map);
  bool Stopping() const;

  Node* const node_;
  mutable Mutex mu_;
  CondVar wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool kicked_ GUARDED_BY(mu_) = false;
  std::thread thread_;

  // Progress figures (atomics: read by GetStatus while a round runs).
  std::atomic<uint64_t> files_missing_{0};
  std::atomic<uint64_t> files_copied_{0};
  std::atomic<uint64_t> bytes_copied_{0};
  std::atomic<uint64_t> files_released_{0};
  // When the map's member set last changed (release waits for it to settle).
  uint64_t last_epoch_ = 0;
  std::chrono::steady_clock::time_point map_changed_at_{};
};

}  // namespace strata
