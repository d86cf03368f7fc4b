// The node's IngestObserver: records every file an ingest writes in the
// node's file inventory and, in a cluster, copies it to its holders
// (Replicator), holds the seal until the version's write policy is met, and
// broadcasts the sealed version's metadata, then applies the dataset's
// retention (keep_versions, version_delete.h). An aborted ingest's files go
// here at once, and on the nodes it had copied them to at their next
// anti-entropy round (the aborted record reaches them there).
//
//   sync:     every shard has `replication` durable copies
//   quorum W: every shard has W durable copies
//   async:    one durable copy (this node's); the rest follow in the background
// The stratum index goes to every node, never waited for: a node without it
// fetches it when it first serves the version.
//
// Erasure coded (SetErasureCode, ec:K+M): each data shard goes to its
// stripe's holder for its chunk (server/storage/ec_stripes.h); when a
// stripe's K shards are written (the last one at the seal) its M parity files
// are computed here and go to theirs. One copy of each file is placed:
//
//   sync:     every data shard and parity file is at its holder
//   quorum:   every data shard is at its holder (K chunks of each stripe:
//             enough to read all of it); the parity follows
//   async:    none waited for
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "server/cluster/cluster_view.h"
#include "server/cluster/replicator.h"
#include "server/cluster/version_delete.h"
#include "server/cluster/version_sync.h"
#include "server/ingest/ingest_session.h"
#include "server/storage/local_files.h"

namespace strata {

class IngestReplication final : public IngestObserver {
 public:
  // `view`'s map as the ingest starts is the cluster its files are placed
  // over; `full` the nodes whose disks were below their high watermark then:
  // they get no copies (the next nodes in placement order take them, as for a
  // node that is down). A node the view has down (or gone) when a file is
  // placed comes after the others, so the next node takes its copy at once,
  // as after a push to it had failed: a node that dies mid-ingest costs the
  // files already sent its way a hand-off, not every later one a wait. The
  // pointers must outlive the ingest.
  IngestReplication(LocalFiles* files, Replicator* replicator, const VersionSync* versions, const ClusterView* view,
                    uint32_t replication, v1::WritePolicy policy, uint32_t quorum, std::set<std::string> full = {});

  // Makes the version erasure coded, ec:k+m; parity is written in `dir`.
  // Before the first file. REQUIRES: k, m >= 1.
  void SetErasureCode(const DataDir* dir, uint32_t k, uint32_t m);
  // Retention after a seal; without one (nullptr), keep_versions is ignored.
  void set_deleter(VersionDeleter* deleter) { deleter_ = deleter; }

  void FileWritten(const v1::FileRef& file, uint64_t bytes) override;
  void BeforeSeal(std::function<void(Status)> done) override;
  void AfterSeal(const v1::VersionRecord& sealed) override;
  void AfterAbort() override;

 private:
  LocalFiles* const files_;
  Replicator* const replicator_;
  const VersionSync* const versions_;
  const ClusterView* const view_;
  const v1::ClusterMap map_;  // as the ingest started
  VersionDeleter* deleter_ = nullptr;
  const uint32_t replication_;
  const v1::WritePolicy policy_;
  const uint32_t quorum_;
  const std::set<std::string> full_;
  const std::string left_out_;  // the nodes placement passes over, and why (for errors)
  // Starts copying `file` to its placement's first `want` usable nodes.
  std::shared_ptr<Replicator::Copies> Place(const v1::FileRef& file, uint64_t bytes);
  // Writes and places the parity files of `stripe` (erasure coded).
  Status FinishStripe(uint32_t stripe);

  const DataDir* ec_dir_ = nullptr;
  uint32_t ec_k_ = 0;
  uint32_t ec_m_ = 0;
  uint64_t data_shards_ = 0;  // SHARD files written so far
  Status parity_error_;       // the first failed parity write (fails the seal)
  std::vector<std::shared_ptr<Replicator::Copies>> parity_;
  std::vector<std::shared_ptr<Replicator::Copies>> shards_;
  std::vector<v1::FileRef> written_;
};

}  // namespace strata
