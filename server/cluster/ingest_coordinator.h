// IngestCoordinator: where an ingest starts. Checks that this node
// coordinates the dataset (its home: the first member up in placement order),
// resolves the replication and write policy against the cluster as it is, and
// opens an IngestSession whose observer (IngestReplication) records and
// copies every file it writes.
//
// Thread-safety: safe for concurrent use; each session belongs to its caller.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/mutex.h"
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

class IngestReplication;
class MultiIngests;
class PeerClients;

// The dataset's home: the first member up in its placement order. It numbers
// the dataset's versions and coordinates its ingests.
Result<const v1::NodeInfo*> DatasetHome(const std::string& name, const v1::ClusterMap& map);

// `options` as the cluster `map` can meet them: the default replication
// filled in, InvalidArgument for a replication, code or quorum the cluster
// cannot meet; when too few nodes can take the copies the write policy waits
// for (up, and not full: `self`, the node that writes the shards, keeps its
// own copy even when full), Unavailable if too few are up, else
// ResourceExhausted, naming the nodes that cannot: refused before any data
// is sent rather than at the seal.
Result<v1::IngestOptions> ResolveIngestOptions(const v1::IngestOptions& options, const v1::ClusterMap& map,
                                               const std::string& self);

class IngestCoordinator {
 public:
  // What sessions write to. Every pointer must outlive the coordinator and its sessions.
  struct Deps {
    const ClusterView* view = nullptr;
    Catalog* catalog = nullptr;
    const DataDir* dir = nullptr;
    LocalFiles* files = nullptr;
    Replicator* replicator = nullptr;
    VersionSync* versions = nullptr;
    Metrics* metrics = nullptr;
    const DiskSpace* disk = nullptr;          // ingests are refused below its low watermark
    const PeerDisks* peer_disks = nullptr;    // full nodes get no copies; nullptr: none known
    const VersionNumbers* numbers = nullptr;  // numbers new versions (nullptr: the catalog's next)
    VersionDeleter* deleter = nullptr;        // retention after a seal (nullptr: keep_versions ignored)
    // Ingests with several writers: the home's registry (this node's) and the
    // peers to reach another home. nullptr: such ingests are refused.
    MultiIngests* multi = nullptr;
    PeerClients* peers = nullptr;
    // Where a join that creates a version (RocksDB) runs once the other
    // nodes have answered: the peer pool. Required with multi.
    boost::asio::thread_pool* pool = nullptr;
  };
  IngestCoordinator(Deps deps, IngestLimits limits);
  // The home's registry, made after the coordinator (it uses Observer).
  void set_multi(MultiIngests* multi) { d_.multi = multi; }

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

  // One writer of an ingest with several (options.ingest_id set): asks the
  // dataset's home for the version (JoinIngest; JoinAsHome when this node is
  // the home), then opens this writer's part session at the node the ingest
  // is open at. Any node takes a writer. `done` runs once, on this thread, a
  // gRPC thread or the pool, and must not block.
  void StartPart(const v1::IngestOptions& options, std::function<void(Result<std::unique_ptr<IngestSession>>)> done);
  // At the dataset's home (this node), one writer's join: the ingest open
  // here; else the one open at another node up, whose version this writer
  // then writes (the reply's coordinator names that node: the home has moved
  // since the first writer joined); else a new one, created here. Asks the
  // other nodes (JoinOpenIngest, at most 2 s) only for an ingest unknown
  // here. `done` runs once, on this thread, a gRPC thread or the pool, and
  // must not block; `options` is a copy, since `done` may free the request
  // it came in before the other nodes have all been asked.
  // `writer_node`: where the writer's part runs (MultiIngests::Join).
  void JoinAsHome(v1::IngestOptions options, std::string writer_node,
                  std::function<void(Result<v1::JoinIngestReply>)> done);
  // Hands a committed part to `home`, the node its writer joined at
  // (IngestSession::part_home); `done` gets the home's answer, as StartPart's.
  // A part the home refuses is aborted there, for every writer.
  void CommitPart(const v1::NodeInfo& home, v1::IngestPart part, std::function<void(Result<v1::CommitPartReply>)> done);
  // At the home (this node), a writer's part: first asks every other node up
  // whether the ingest is open there too (FindIngest, at most 2 s each). Two
  // homes can each have begun it as the cluster changed (a first writer at
  // each, or a new home that could not reach the old one), and neither would
  // ever see every writer's commit: then the ingest is aborted at both, and
  // the commit is refused with FailedPrecondition saying so. Otherwise
  // MultiIngests::Commit, on the pool. `done` as StartPart's.
  void CommitAsHome(v1::IngestPart part, std::function<void(Result<v1::CommitPartReply>)> done);

  // The observer (copies, parity, retention) a session with these resolved
  // options gets.
  std::unique_ptr<IngestReplication> Observer(const v1::IngestOptions& options) const;
  // Tells `home` (where the writer joined) to abort an ingest with several
  // writers (best effort, does not block). `told` (optional) runs once the
  // home has answered, or could not be reached (at most 30 s), on a gRPC thread.
  void AbortAtHome(const v1::NodeInfo& home, const std::string& ingest_id, const std::string& why,
                   std::function<void()> told = nullptr) const;
  // The same for one writer's withdrawal (MultiIngests::Withdraw): the
  // ingest stays open and the writer may join again.
  void WithdrawAtHome(const v1::NodeInfo& home, const std::string& ingest_id, uint32_t writer, const std::string& why,
                      std::function<void()> told) const;
  // Whether writer `writer`'s part of ingest `ingest_id` runs on this node:
  // from before its join is sent until its session ends (its commit
  // answered, or its abort told). What a home watching its writers asks
  // (FindIngest with `part`, server/cluster/writer_watch.h).
  bool PartRunsHere(const std::string& ingest_id, uint32_t writer) const;

 private:
  // The nodes up in this node's map, but this one.
  std::vector<v1::NodeInfo> OthersUp() const;
  // Sends `request` to `home`'s AbortIngest; `told` as AbortAtHome's.
  void TellHome(const v1::NodeInfo& home, v1::AbortIngestRequest request, std::function<void()> told) const;
  // The node a join's reply says the ingest is open at (the coordinator it
  // names, found in this node's map), else `home`, the node that answered.
  Result<v1::NodeInfo> Coordinator(const v1::JoinIngestReply& reply, const v1::NodeInfo& home) const;

  // Marks a part as running here until the returned token is released.
  std::shared_ptr<const void> PartStarts(const std::string& ingest_id, uint32_t writer);

  Deps d_;  // set at construction, and multi once by set_multi
  const IngestLimits limits_;
  // The parts running here, (ingest id, writer) -> how many sessions (a
  // withdrawn join and its retry may overlap a moment). Shared with the tokens.
  struct Parts {
    Mutex mu;
    std::map<std::pair<std::string, uint32_t>, int> running GUARDED_BY(mu);
  };
  const std::shared_ptr<Parts> parts_ = std::make_shared<Parts>();
};

}  // namespace strata
