// VersionDeleter: `strata rm NAME@V` and retention (--keep-versions K). A
// delete writes a tombstone in this node's catalog (the version leaves every
// listing at once), removes this node's files of it, and broadcasts the
// tombstone: every node that is up confirms it with this node and removes its
// copy before the call returns; a node that is down learns it through
// anti-entropy when it returns (version_sync.h), and a node restarted after a
// crash removes what it still holds at startup (VersionSync::RemoveDeadCopies).
// Streams already open on the version end at their next step with
// FailedPrecondition (docs/operations.md, "Deleting versions").
//
// Thread-safety: safe for concurrent use. Delete and ApplyRetention block for
// the broadcast (up to 5 s per unreachable node): never call them on a gRPC
// thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/version_sync.h"
#include "server/storage/catalog.h"
#include "strata/v1/types.pb.h"

namespace strata {

class VersionDeleter {
 public:
  // The pointers must outlive the deleter.
  VersionDeleter(Catalog* catalog, VersionSync* versions, const ClusterView* view)
      : catalog_(catalog), versions_(versions), view_(view) {}

  struct Deleted {
    v1::DatasetInfo info;              // state VERSION_DELETED
    std::vector<std::string> told;     // other nodes that applied it
    std::vector<std::string> pending;  // down or unreachable: they apply it when they return
  };
  // Deletes name@version (sealed or aborted; again if already deleted, which
  // finishes a delete interrupted before its files or peers). NotFound naming
  // the version if this node has no such version; FailedPrecondition if it is
  // being ingested; IOError if this node's files cannot be removed (the
  // tombstone stands: startup removes them).
  Result<Deleted> Delete(const std::string& name, uint64_t version);

  // Deletes the sealed versions of `name` older than its newest `keep` sealed
  // ones (keep 0: none) and older than `sealed`, the version whose seal
  // applies the retention (which an explicit number, or a newer version
  // sealed meanwhile, may rank below them: it and those are kept).
  // Returns the numbers deleted, in ascending order.
  Result<std::vector<uint64_t>> ApplyRetention(const std::string& name, uint32_t keep, uint64_t sealed);

  // FailedPrecondition when sealing `name`@`version` with retention `keep`
  // (0: OK) would not keep it: `keep` or more sealed versions are above it.
  Status CheckRetention(const std::string& name, uint64_t version, uint32_t keep);

 private:
  Catalog* const catalog_;
  VersionSync* const versions_;
  const ClusterView* const view_;
};

}  // namespace strata
