// VersionSync: version metadata between nodes. Every node keeps the catalog
// of every version (sealed or aborted); a coordinator broadcasts a version
// when it seals or aborts it, peers import what they are sent, and the repair
// loop's anti-entropy exports and imports what a node missed.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <string>

#include "common/status.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/peer_clients.h"
#include "server/storage/catalog.h"
#include "server/storage/data_dir.h"
#include "server/storage/local_files.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

class VersionSync {
 public:
  // Every pointer must outlive the VersionSync.
  VersionSync(Catalog* catalog, DataDir* dir, LocalFiles* files, PeerClients* peers, const ClusterView* view);

  // Merges a version from another node; removes local files of a version that
  // arrives aborted. Returns whether the catalog changed. InvalidArgument for
  // an unparsable record.
  Result<bool> Import(const v1::VersionMeta& meta);
  // This node's versions (sealed and aborted), optionally with shard records.
  Status Export(const v1::ListVersionsRequest& request, v1::ListVersionsReply* reply) const;
  // Sends a version's metadata to every other node that is up (best effort:
  // anti-entropy catches up the rest). Blocks for the calls (5 s deadline each).
  void Broadcast(const std::string& name, uint64_t version) const;
  // Broadcasts the versions this node coordinated and aborted (while it was
  // down, say), so that the others drop them too.
  void BroadcastOwnAborted() const;

 private:
  Catalog* const catalog_;
  DataDir* const dir_;
  LocalFiles* const files_;
  PeerClients* const peers_;
  const ClusterView* const view_;
};

}  // namespace strata
