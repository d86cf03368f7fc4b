// VersionSync: version metadata between nodes. Every node keeps the catalog
// of every version (sealed, aborted or deleted); a coordinator broadcasts a
// version when it seals or aborts it, the node that deletes one broadcasts its
// tombstone, peers import what they are sent, and the repair loop's
// anti-entropy exports and imports what a node missed (so a node that was
// down during a delete removes its copy when it returns).
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/peer_clients.h"
#include "server/storage/catalog.h"
#include "server/storage/data_dir.h"
#include "server/storage/dataset_cache.h"
#include "server/storage/local_files.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

class VersionSync {
 public:
  // Every pointer must outlive the VersionSync; `cache` may be null.
  VersionSync(Catalog* catalog, DataDir* dir, LocalFiles* files, PeerClients* peers, const ClusterView* view,
              DatasetCache* cache = nullptr);

  // Merges a version from another node; removes local files of a version that
  // arrives aborted or deleted (RemoveLocalCopy). Returns whether the catalog
  // changed. InvalidArgument for an unparsable record.
  Result<bool> Import(const v1::VersionMeta& meta);
  // This node's versions (sealed, aborted and deleted), optionally with shard
  // records.
  Status Export(const v1::ListVersionsRequest& request, v1::ListVersionsReply* reply) const;

  struct BroadcastResult {
    std::vector<std::string> told;     // answered OK: they applied it
    std::vector<std::string> pending;  // down or failed: anti-entropy catches them up
  };
  // Sends a version's metadata to every other node (best effort: anti-entropy
  // catches up the rest). Calls every node the view has up at once and
  // returns when all have answered (5 s deadline; a call to a node the view
  // marks down meanwhile ends then); those that failed and are still up are
  // called once more (this node may have been the one stalled).
  BroadcastResult Broadcast(const std::string& name, uint64_t version) const;
  // Imports from `peer` the versions it knows and this node lacks or holds in
  // an earlier state (sealed after unsealed, a tombstone after anything):
  // every dataset's, or `dataset`'s only. Each call has `timeout`. Returns
  // how many versions changed here; the peer's error if it did not answer.
  // Anti-entropy (the repair loop) and CatchUp use it.
  Result<size_t> Pull(const v1::NodeInfo& peer, const std::string& dataset, std::chrono::milliseconds timeout);
  // Pulls `dataset`'s versions from every node the view has up (2 s a node;
  // one that does not answer is passed over). An ingest's
  // coordinator calls it before it numbers a version: a node standing in for
  // a dataset's home while it was down numbers versions the home learns of
  // only from them, and a number below theirs would be older than versions
  // ingested before it (retention would even delete it on its seal).
  void CatchUp(const std::string& dataset);
  // Broadcasts the versions this node coordinated and aborted, and those it
  // deleted (while it was down, or before a crash), so the others drop them.
  void BroadcastOwnAborted() const;

  // Forgets the version's open readers (streams on it end at their next step,
  // DatasetCache::Forget) and removes this node's files of it: shards, stratum
  // index and the version's directory. The catalog is not touched.
  Status RemoveLocalCopy(const std::string& name, uint64_t version) const;
  // After a file arrived from another node (a replica, a repair pull): if its
  // version was deleted or aborted meanwhile (the copy was in flight during the
  // delete, or an ingest's abort), removes this node's copy of the version
  // again and returns true. The tombstone or aborted record is written before
  // files are removed, so a copy added after that removal is always caught here.
  bool DropIfDead(const v1::FileRef& file) const;
  // At startup: removes files this node still holds of aborted or deleted
  // versions (a crash between the catalog write and the removal). Returns how
  // many versions had files.
  Result<size_t> RemoveDeadCopies() const;

 private:
  Catalog* const catalog_;
  DataDir* const dir_;
  LocalFiles* const files_;
  PeerClients* const peers_;
  const ClusterView* const view_;
  DatasetCache* const cache_;
};

}  // namespace strata
