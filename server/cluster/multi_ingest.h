// MultiIngests: the dataset home's side of an ingest with several writers
// (docs/design.md, "Ingest with several writers").
//
// Each writer sends its samples to a node of its own, which cuts, writes and
// copies its part's shards like any ingest (IngestSession::OpenPart) and
// leaves the catalog alone. The home keeps one entry per ingest id:
//   Join    the first writer's node creates the version (numbered as any,
//           VERSION_INGESTING here only); every later one gets the same
//           version and must bring the same options and writer count. A
//           home that does not know the ingest asks the other nodes first
//           (IngestCoordinator::JoinAsHome): the home may have moved since
//           the first writer joined;
//   Commit  a writer's part arrives once its copies meet the write policy;
//           when the last of them arrives, the home gives writer w's ids the
//           range after writer w-1's (dense ids, in writer order), records
//           every shard, builds the stratum index from the parts' strata,
//           seals the version once and broadcasts it;
//   Abort   any writer that fails aborts the version for all of them: the
//           aborted record is broadcast and every node drops its files;
//   Withdraw a writer whose client gave up waiting for its join (a slow
//           home) and never sent a sample leaves the ingest open: its node
//           undoes the join here, and the client joins again;
//   Watch   each join names the node the writer's part runs on; until the
//           part is committed the home asks that node whether it still runs
//           there (WriterWatch), and a part lost with its node aborts the
//           ingest (WriterLost).
// Entries live in memory: a home that restarts mid-ingest forgets them, the
// version stays unsealed (its files are dropped as an aborted ingest's), and
// the writers' commits are refused with FailedPrecondition.
//
// Every part comes from the network: it is checked (its writer, seqs, ids,
// sample counts and strata) before anything of it is kept, and its shard
// paths are the home's own, never the sender's.
//
// Thread-safety: safe for concurrent use. Commit and Abort write RocksDB and
// broadcast (blocking calls): run them on the peer pool.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "server/base/metrics.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/version_numbers.h"
#include "server/cluster/version_sync.h"
#include "server/ingest/ingest_session.h"
#include "server/storage/catalog.h"
#include "server/storage/data_dir.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

class IngestCoordinator;

class MultiIngests {
 public:
  struct Deps {
    const ClusterView* view = nullptr;
    Catalog* catalog = nullptr;
    const DataDir* dir = nullptr;
    VersionSync* versions = nullptr;
    Metrics* metrics = nullptr;
    const VersionNumbers* numbers = nullptr;         // nullptr: the catalog's next number
    const IngestCoordinator* coordinator = nullptr;  // the observer that copies the index and broadcasts
  };
  // Every pointer must outlive this object.
  MultiIngests(Deps deps, IngestLimits limits);

  enum class JoinMode {
    kOpenOnly,      // join an ingest open here; NotFound (nothing created) otherwise
    kOpenOrCreate,  // ... else create it, when this node is the dataset's home
  };
  // A writer joins: the version, created by the first. An ingest open here
  // is joined whichever node the map makes home now (a node that joined
  // since may rank first). FailedPrecondition when the ingest was aborted or
  // sealed, or must be created and this node is not the dataset's home;
  // InvalidArgument for options that differ from the first writer's, a
  // writer out of range, or erasure coding (one writer only).
  // `writer_node`: the node the writer's part runs on, watched until the part
  // is committed (WritersToWatch); empty: not watched (a node built before).
  Result<v1::JoinIngestReply> Join(const v1::IngestOptions& options, JoinMode mode,
                                   const std::string& writer_node = "");
  // A writer's committed part; seals the version when it is the last.
  // InvalidArgument (and the version aborted) for a part that does not add up.
  Result<v1::CommitPartReply> Commit(const v1::IngestPart& part);
  // Aborts the ingest for every writer. OK if it is unknown or already over.
  Status Abort(const std::string& ingest_id, const std::string& why);
  // Aborts the ingest writing `name`@`version` for every writer (an
  // operator's `strata rm --abort`). Whether one is known here, aborted now
  // or before; false also for one that sealed.
  Result<bool> AbortVersion(const std::string& name, uint64_t version, const std::string& why);
  // Undoes writer `writer`'s join, so that it may join again: its node
  // withdraws it when its client gave up waiting for the join before sending
  // a sample. OK if the ingest is unknown or over, or the writer is not
  // joined; FailedPrecondition if its part was committed.
  Status Withdraw(const std::string& ingest_id, uint32_t writer, const std::string& why);
  // Whether the ingest is open here (neither sealed nor aborted), and its version.
  v1::FindIngestReply Find(const std::string& ingest_id) const;

  // The writers of open ingests that joined, have not committed, and run on
  // a node that said so at its join: what the home watches (WriterWatch).
  struct WatchedWriter {
    std::string ingest_id;
    uint32_t writer = 0;
    std::string node;
  };
  std::vector<WatchedWriter> WritersToWatch() const;
  // Writer `writer`'s part is gone from its node (it restarted, or lost the
  // part without telling the home), or the node has not answered for long:
  // aborts the ingest for every writer, unless the writer has committed or
  // withdrawn since, or the ingest is over.
  void WriterLost(const std::string& ingest_id, uint32_t writer, const std::string& node, const std::string& why);

 private:
  struct Entry {
    std::string name;
    uint64_t version = 0;
    v1::IngestOptions options;  // as resolved by the first writer's join
    std::vector<bool> joined;
    std::vector<std::string> writer_nodes;             // by writer: where its part runs ("": not watched)
    std::map<uint32_t, v1::IngestPart> parts;          // committed, by writer
    std::vector<std::vector<v1::ShardRecord>> shards;  // checked, by writer (part-local ids)
    bool sealed = false;
    std::string aborted;  // why, once aborted
  };

  // The part's shards, checked against `entry`: seqs in the writer's range
  // and ascending, ids from 0 and contiguous, counts that add up.
  Result<std::vector<v1::ShardRecord>> CheckPart(const Entry& entry, const v1::IngestPart& part) const;
  Result<v1::DatasetInfo> Seal(Entry* entry) REQUIRES(mu_);
  Status AbortLocked(Entry* entry, const std::string& why) REQUIRES(mu_);

  const Deps d_;
  const IngestLimits limits_;
  mutable Mutex mu_;
  std::map<std::string, Entry> entries_ GUARDED_BY(mu_);
};

}  // namespace strata
