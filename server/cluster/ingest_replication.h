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
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "server/cluster/replicator.h"
#include "server/cluster/version_delete.h"
#include "server/cluster/version_sync.h"
#include "server/ingest/ingest_session.h"
#include "server/storage/local_files.h"

namespace strata {

class IngestReplication final : public IngestObserver {
 public:
  // `map` is the cluster as the ingest started; `full` the nodes whose disks
  // were below their high watermark then: they get no copies (the next nodes
  // in placement order take them, as for a node that is down). The pointers
  // must outlive the ingest.
  IngestReplication(LocalFiles* files, Replicator* replicator, const VersionSync* versions, v1::ClusterMap map,
                    uint32_t replication, v1::WritePolicy policy, uint32_t quorum, std::set<std::string> full = {});

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
  const v1::ClusterMap map_;
  VersionDeleter* deleter_ = nullptr;
  const uint32_t replication_;
  const v1::WritePolicy policy_;
  const uint32_t quorum_;
  const std::set<std::string> full_;
  std::vector<std::shared_ptr<Replicator::Copies>> shards_;
  std::vector<v1::FileRef> written_;
};

}  // namespace strata
