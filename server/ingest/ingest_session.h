// One ingest: samples in, shard files and a sealed dataset version out.
//
// The session creates the version (VERSION_INGESTING), assigns dense ids in
// arrival order, cuts a shard whenever the current one reaches the target size
// (each shard is fsynced and renamed into place before the catalog records
// it), counts labels, strata and exact duplicates, and on Commit seals the
// version durably. Anything short of a successful Commit aborts: the version's
// files are removed and it is marked aborted, so unacknowledged data is absent,
// never half there.
//
// Thread-safety: not thread-safe; one session per Ingest call, driven by one
// thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/checksum.h"
#include "common/mutex.h"
#include "plan/stratum_index.h"
#include "server/base/metrics.h"
#include "server/ingest/stratum_index_writer.h"
#include "server/ingest/stratum_key.h"
#include "server/ingest/version_options.h"
#include "server/storage/catalog.h"
#include "server/storage/data_dir.h"
#include "server/storage/path_guard.h"
#include "server/storage/shard_format.h"
#include "strata/v1/cluster.pb.h"
#include "strata/v1/data.pb.h"

namespace strata {

// What happens to the files an ingest writes, beyond this node's catalog: in a
// cluster they are copied to their holders (server/cluster/ingest_replication).
class IngestObserver {
 public:
  virtual ~IngestObserver() = default;
  // A file of the version is complete and durable here.
  virtual void FileWritten(const v1::FileRef& file, uint64_t bytes) = 0;
  // Called before sealing: calls `done` once the version's write policy is
  // met (enough durable copies), or with why it cannot be. It does not block:
  // `done` runs at once on the calling thread, or later on another.
  virtual void BeforeSeal(std::function<void(Status)> done) = 0;
  // Called once the version is sealed here.
  virtual void AfterSeal(const v1::VersionRecord& sealed) = 0;
  // Called once an aborted version's files are gone.
  virtual void AfterAbort() = 0;
};

// One writer's part of a version that several write (docs/design.md, "Ingest
// with several writers"). A part session writes and copies its shards like any
// other, with seqs from seq_base and ids counted from 0, but leaves the
// catalog alone: the dataset's home records and seals the whole version once
// every writer has committed (server/cluster/multi_ingest.h).
struct IngestPartOptions {
  std::string ingest_id;
  uint32_t writer = 0;
  uint32_t writers = 1;
  // The dataset's home when this writer joined: the ingest lives in its
  // memory, so the part's commit and abort go to it, wherever the cluster map
  // puts the home by then (a node joined, or one seemed down for a moment).
  v1::NodeInfo home;
  // Called once if the part is aborted (with why), so that the home aborts the
  // version for every writer. It must not block; it calls `told` (when not
  // empty) once the home has recorded the abort, or could not be told.
  std::function<void(const std::string& why, std::function<void()> told)> on_abort;
  // The same for Withdraw: the home undoes this writer's join instead.
  std::function<void(const std::string& why, std::function<void()> told)> on_withdraw;
  // Held while the part lives: the node answers a home that asks whether the
  // part still runs here (IngestCoordinator::PartRunsHere).
  std::shared_ptr<const void> running;
};

inline constexpr uint32_t kMaxIngestWriters = 1024;
inline constexpr uint64_t kMaxPartSamples = 32ull << 20;  // its ordinals (4 bytes each) in one message
// Shard seqs of a part: the seqs a version may have, shared out evenly,
// writer w taking [w * span, (w + 1) * span) (976 shards each for 1024 writers).
inline uint32_t PartSeqSpan(uint32_t writers) { return (kMaxShardSeq + 1) / writers; }

class IngestSession {
 public:
  // Validates the options and creates the version. The collaborators must
  // outlive the session.
  // `observer` (optional) is owned by the session. `coordinator` names this
  // node in the version's record.
  static Result<std::unique_ptr<IngestSession>> Open(const v1::IngestOptions& options, Catalog* catalog,
                                                     const DataDir* dir, Metrics* metrics, const IngestLimits& limits,
                                                     std::unique_ptr<IngestObserver> observer = nullptr,
                                                     const std::string& coordinator = "");
  // A part of a multi-writer version: `options.dataset` is "name@N", a
  // version the home has created; this node's catalog is not touched.
  static Result<std::unique_ptr<IngestSession>> OpenPart(const v1::IngestOptions& options, Catalog* catalog,
                                                         const DataDir* dir, Metrics* metrics,
                                                         const IngestLimits& limits,
                                                         std::unique_ptr<IngestObserver> observer,
                                                         IngestPartOptions part);
  ~IngestSession();  // aborts unless committed
  IngestSession(const IngestSession&) = delete;
  IngestSession& operator=(const IngestSession&) = delete;

  // Adds one sample. InvalidArgument (naming the sample's key) for a sample
  // that breaks the limits; IOError if the shard cannot be written. After an
  // error the session is aborted.
  Status Add(const v1::Sample& sample);

  // Seals the version. InvalidArgument if expected_samples differs from the
  // samples received; FailedPrecondition if there are none. Blocks while the
  // observer waits for copies: BeginCommit and FinishCommit are the same
  // without blocking.
  Result<v1::IngestReply> Commit(uint64_t expected_samples);

  // A commit in two steps, so that no thread waits for the copies: checks
  // and finishes the files, then calls `copies_done` once the observer's
  // write policy is met (or with the error that ends the commit), at once on
  // this thread or later on another. The session must not be touched from
  // the call of `copies_done` until FinishCommit(that status) is called,
  // which seals (or aborts) and returns what Commit returns.
  void BeginCommit(uint64_t expected_samples, std::function<void(Status)> copies_done);
  Result<v1::IngestReply> FinishCommit(const Status& copies);
  // For a part session, in place of FinishCommit: the part to send the home.
  // The session counts as committed after it (the home now decides).
  Result<v1::IngestPart> FinishPart(const Status& copies);
  bool is_part() const { return part_.has_value(); }
  // A part session's home (IngestPartOptions.home). REQUIRES: is_part().
  const v1::NodeInfo& part_home() const { return part_->home; }

  // Removes what was written and marks the version aborted. Idempotent.
  void Abort(const std::string& why) { Abort(why, nullptr); }
  // The same; `told` runs once the abort is known where it must be: for a
  // part, at the home (IngestPartOptions.on_abort), on its thread, and for a
  // part already aborted once the home has answered that abort; otherwise
  // (and for a session already committed or aborted) at once, on this one.
  // Abort touches the session no more once `told` may run, so `told` may
  // have the session destroyed (on any thread).
  void Abort(const std::string& why, std::function<void()> told);
  // For a part that has taken no sample: ends it as if its writer had never
  // joined. Nothing of the version is removed here (other writers' shards and
  // copies stay), and the home undoes the join (IngestPartOptions.on_withdraw),
  // so that the writer may join again; `told` as Abort's. Anything else (a
  // whole version, a part with samples, a part without on_withdraw) is aborted.
  void Withdraw(const std::string& why, std::function<void()> told);

  const std::string& name() const { return name_; }
  uint64_t version() const { return version_; }
  uint64_t samples() const { return samples_; }

 private:
  IngestSession(std::string name, uint64_t version, uint64_t shard_target, StratumKeyer keyer, Catalog* catalog,
                const DataDir* dir, Metrics* metrics, const IngestLimits& limits,
                std::unique_ptr<IngestObserver> observer);
  Status Validate(const v1::Sample& sample) const;
  Status AddValidated(const v1::Sample& sample);
  Status FinishShard();
  // Publishes strata.idx (the stratum member index) beside the shards.
  Status FinishStratumIndex();
  void FillDuplicateExamples(v1::IngestReply* reply) const;
  // A part's error, as FailedPrecondition saying so when the home has
  // aborted the version (this node's catalog holds it aborted, or deleted
  // since); else `s`.
  Status Explain(const Status& s) const;

  const std::string name_;
  const uint64_t version_;
  const uint64_t shard_target_;
  ShardWriteOptions write_options_;  // set by Open
  const StratumKeyer keyer_;
  Catalog* catalog_;
  const DataDir* dir_;
  Metrics* metrics_;
  const IngestLimits limits_;
  const std::unique_ptr<IngestObserver> observer_;

  std::unique_ptr<ShardWriter> writer_;
  // Each sample's stratum, for the stratum member index written at commit.
  std::unique_ptr<StratumIndexWriter> index_;
  v1::StratumIndexRecord index_record_;
  uint32_t next_seq_ = 0;
  uint64_t samples_ = 0;
  uint64_t payload_bytes_ = 0;
  uint64_t file_bytes_ = 0;
  std::vector<v1::ShardRecord> shards_;
  std::map<std::string, uint64_t> label_counts_;
  std::map<std::string, uint64_t> stratum_counts_;
  // Content hash -> id of the first sample with that content.
  std::unordered_map<Hash128, uint64_t, Hash128Hasher> first_by_hash_;
  uint64_t duplicates_ = 0;
  struct DuplicateExample {
    Hash128 hash;
    uint64_t first_id;
    std::vector<std::string> keys;  // of the later copies
    uint64_t count;
  };
  std::vector<DuplicateExample> examples_;  // at most a few groups
  bool committed_ = false;
  bool aborted_ = false;
  // Part sessions: the part, and each sample's stratum as an index into
  // part_strata_ (first-seen order), which the home turns into the index.
  std::optional<IngestPartOptions> part_;
  // The home's answer to this part's abort: a later Abort's `told` waits for
  // it too (a sample the node refused aborts the part at once, and the call's
  // own Abort, which ends it, comes after).
  struct HomeAnswer {
    Mutex mu;
    bool answered GUARDED_BY(mu) = false;
    std::vector<std::function<void()>> waiting GUARDED_BY(mu);
  };
  std::shared_ptr<HomeAnswer> home_answer_;
  std::vector<std::string> part_strata_;
  std::unordered_map<std::string, uint32_t> ordinal_of_;
  std::string ordinals_;  // u32 little-endian per sample
};

}  // namespace strata
