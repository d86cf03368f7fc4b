// IngestAborter: an operator's `strata rm --abort NAME@V`. An ingest with
// several writers stays open until every writer has committed, so one whose
// writer never came (its machine never started, its client never reached a
// node) leaves its version ingesting for ever (docs/design.md, "Ingest with
// several writers", limits). The aborter finds the node where that ingest is
// open (the dataset's home, or the node that was home when the first writer
// joined) by asking every node up, and has it abort the ingest for every
// writer, as when a writer fails: the aborted record is broadcast, every node
// drops the version's files, and the writers' commits are refused.
//
// Thread-safety: safe for concurrent use. Abort blocks (RocksDB, and up to
// 5 s for the other nodes): never call it on a gRPC thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/multi_ingest.h"
#include "server/cluster/peer_clients.h"

namespace strata {

class IngestAborter {
 public:
  // The pointers must outlive the aborter.
  IngestAborter(MultiIngests* multi, PeerClients* peers, const ClusterView* view)
      : multi_(multi), peers_(peers), view_(view) {}

  // Aborts the ingest with several writers of `name`@`version` where it is
  // open. Whether a node (this one or another up) had it, aborted now or
  // before. An error only when this node's own abort failed; a node that did
  // not answer is logged and skipped (a node that restarts aborts the
  // ingests it had open).
  Result<bool> Abort(const std::string& name, uint64_t version, const std::string& why);

 private:
  MultiIngests* const multi_;
  PeerClients* const peers_;
  const ClusterView* const view_;
};

}  // namespace strata
