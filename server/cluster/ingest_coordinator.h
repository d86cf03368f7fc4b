// IngestCoordinator: where an ingest starts. Checks that this node
// coordinates the dataset (its home: the first member up in placement order),
// resolves the replication and write policy against the cluster as it is, and
// opens an IngestSession whose observer (IngestReplication) records and
// copies every file it writes.
//
// Thread-safety: safe for concurrent use; each session belongs to its caller.
#pragma once

#include <memory>
#include <string>

#include "server/base/metrics.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/peer_disks.h"
#include "server/cluster/replicator.h"
#include "server/cluster/version_delete.h"
#include "server/cluster/version_numbers.h"
#include "server/cluster/version_sync.h"
#include "server/ingest/ingest_session.h"
#include "server/storage/catalog.h"
#include "server/storage/data_dir.h"
#include "server/storage/disk_space.h"
#include "server/storage/local_files.h"

namespace strata {

class IngestCoordinator {
 public:
  // What sessions write to. Every pointer must outlive the coordinator and its sessions.
  struct Deps {
    const ClusterView* view = nullptr;
    Catalog* catalog = nullptr;
    const DataDir* dir = nullptr;
    LocalFiles* files = nullptr;
    Replicator* replicator = nullptr;
    const VersionSync* versions = nullptr;
    Metrics* metrics = nullptr;
    const DiskSpace* disk = nullptr;          // ingests are refused below its low watermark
    const PeerDisks* peer_disks = nullptr;    // full nodes get no copies; nullptr: none known
    const VersionNumbers* numbers = nullptr;  // numbers new versions (nullptr: the catalog's next)
    VersionDeleter* deleter = nullptr;        // retention after a seal (nullptr: keep_versions ignored)
  };
  IngestCoordinator(Deps deps, IngestLimits limits);

  // FailedPrecondition naming the coordinator when it is another node;
  // InvalidArgument for a replication or quorum the cluster cannot meet;
  // Unavailable when too few nodes are up for the write policy;
  // ResourceExhausted (naming the node and its free space) when this node's
  // disk is below its low watermark.
  Result<std::unique_ptr<IngestSession>> Start(const v1::IngestOptions& options);
  // Before more of an open ingest is written (`samples` of it): the same
  // ResourceExhausted as Start when the disk fell below the low watermark since
  // (it reads the last sample: cheap enough per message).
  Status CheckRoom(int samples) const;

 private:
  const Deps d_;
  const IngestLimits limits_;
};

}  // namespace strata
