// Sealed dataset versions opened for reading: their shape (for the epoch plan)
// and lazily opened shard readers, shared by every stream of that version,
// with a bound on how many readers they keep open between uses.
//
// Thread-safety: DatasetCache, OpenVersion and ReaderBudget are safe for
// concurrent use.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/dataset_ref.h"
#include "common/id_ranges.h"
#include "common/mutex.h"
#include "plan/epoch_plan.h"
#include "plan/stratum_index.h"
#include "server/storage/catalog.h"
#include "server/storage/data_dir.h"
#include "server/storage/shard_format.h"

namespace strata {

class OpenVersion;

// How many shard readers the versions of one DatasetCache keep open between
// uses, and the bound on them. A reader holds a file descriptor and a
// mapping, both limited per process (RLIMIT_NOFILE, vm.max_map_count): a node
// that had streamed the shards of many datasets once kept them all open, and
// then failed to open a file or to accept a connection (EMFILE) until it was
// restarted. Past the bound, the readers used least recently are let go (one
// a step in flight still holds closes once the step is sent), and the next
// use opens the file again.
class ReaderBudget {
 public:
  // At most `limit` readers kept; 0: no bound.
  explicit ReaderBudget(size_t limit) : limit_(limit) {}

  size_t limit() const { return limit_; }
  // Readers the versions keep now (those that steps or cached blocks still
  // hold after they were let go are not counted: ShardReader::OpenCount
  // counts every open one).
  size_t kept() const { return kept_.load(std::memory_order_relaxed); }
  // The stamp of a use, later for every call: the readers whose last use has
  // the earliest stamps go first.
  uint64_t Tick() { return clock_.fetch_add(1, std::memory_order_relaxed); }

  // Called with the readers a trim let go of, before they are dropped: the
  // block cache's idle blocks of them hold them open (stratad evicts those).
  void OnRelease(std::function<void(std::vector<const ShardReader*>)> fn);
  // A version whose readers count (each registers as it opens its first).
  void Register(std::weak_ptr<const OpenVersion> version);
  // A reader was opened (true: the budget is now over its bound, and the
  // caller, holding no slot's lock, calls Trim) or let go.
  bool Added();
  void Removed() { kept_.fetch_sub(1, std::memory_order_relaxed); }
  // Lets go of the least recently used readers until a quarter of the bound
  // is free; with `all`, of every reader (opening a file failed for want of
  // descriptors). One trim at a time: a second caller returns at once unless
  // it asks for all.
  void Trim(bool all);

 private:
  const size_t limit_;
  std::atomic<size_t> kept_{0};
  std::atomic<uint64_t> clock_{1};
  Mutex trim_mu_;
  std::function<void(std::vector<const ShardReader*>)> on_release_ GUARDED_BY(trim_mu_);
  Mutex mu_;
  std::vector<std::weak_ptr<const OpenVersion>> versions_ GUARDED_BY(mu_);
};

class OpenVersion : public std::enable_shared_from_this<OpenVersion> {
 public:
  // `budget` bounds the readers it keeps (nullptr: no bound) if the version
  // is owned by a shared_ptr (make_shared), through which the budget's trim
  // reaches it.
  OpenVersion(v1::VersionRecord record, std::vector<v1::ShardRecord> shards, const DataDir* dir,
              std::shared_ptr<ReaderBudget> budget = nullptr);
  ~OpenVersion();
  OpenVersion(const OpenVersion&) = delete;
  OpenVersion& operator=(const OpenVersion&) = delete;

  const v1::VersionRecord& record() const { return record_; }
  const DatasetShape& shape() const { return shape_; }
  size_t num_shards() const { return shards_.size(); }

  // Reads sample `id`, verifying its record checksum, then copies its raw
  // record bytes (length prefix to checksum) into *raw, for a peer. OutOfRange
  // if id is past the end; Corruption (never the bytes) if the record or shard
  // is damaged; NotFound if this node does not hold the shard file; IOError if
  // it cannot be opened. (Streams read through Reader() and keep the reader.)
  Status ReadRaw(uint64_t id, std::string* raw) const;

  // shape() plus what a plan with `sampler` needs beyond it: for the
  // stratified and weighted samplers, the stratum member index (strata.idx),
  // mapped on first use with its header, offsets and block sums checked
  // against the catalog's record (O(strata + samples / 512)); each block of
  // ids is verified when a plan first reads it (IndexCheck::kOnUse), and a
  // damaged one fails that stream (EpochPlan::Damage). An index found damaged
  // is mapped again by the next call. FailedPrecondition if the version has no
  // index (it was ingested by an older server); Unavailable if this node does
  // not hold the file (a client then fails over to another node); Corruption
  // if it is damaged.
  Result<DatasetShape> PlanShape(const v1::SamplerSpec& sampler) const;
  // Up to `max_bytes` of this node's copy of the stratum index file from
  // `offset` (empty past its end) and, in *file_bytes and *checksum, the size
  // and trailer checksum the catalog recorded. FailedPrecondition if the version has none; Unavailable if this
  // node holds no copy. The bytes are not checked here: the reader verifies
  // the whole file.
  Result<std::string> ReadStratumIndex(uint64_t offset, size_t max_bytes, uint64_t* file_bytes,
                                       uint64_t* checksum) const;
  // Samplers shared by the streams of this version (see SamplerCache).
  SamplerCache* samplers() const { return &samplers_; }

  // Where sample `id` lives. REQUIRES: id < shape().num_samples.
  struct Location {
    size_t shard;     // index into the version's shard list
    uint32_t seq;     // the shard's sequence number
    uint64_t record;  // record index within the shard
  };
  Location Locate(uint64_t id) const;
  const v1::ShardRecord& shard(size_t i) const { return shards_[i]; }
  // The index of the shard with sequence number `seq`, if the version has
  // one. An index is not a seq: a version written by several writers numbers
  // writer w's shards from w * PartSeqSpan (server/ingest/ingest_session.h).
  std::optional<size_t> IndexOf(uint32_t seq) const;
  // The open reader of shard i, opened on first use (NotFound if this node
  // does not hold the file, Corruption if its layout is damaged,
  // ResourceExhausted if the process is out of file descriptors even after
  // the budget let go of every reader no step holds).
  Result<std::shared_ptr<const ShardReader>> Reader(size_t shard) const;
  // Opens the readers of those of `shards` (indexes, repeats allowed) not
  // open yet, several at once, and returns when all have been tried. Opening
  // a reader reads its file's header, trailer and footer, so a stream's
  // first step that opened a large version's shards one after another
  // waited for one read from storage after another (17 shards of 10M samples:
  // 3-4 ms of a 30 ms first batch, page cache dropped). A hint: errors are
  // left for Reader to report, and where no thread can be started the
  // shards open one by one on their first Reader.
  void OpenReaders(std::vector<size_t> shards) const;
  // Forgets the open reader of shard i (after its file was quarantined).
  void Invalidate(size_t shard) const;
  // For ReaderBudget::Trim: the shards whose reader is kept, each with the
  // stamp of its last use.
  struct Kept {
    uint64_t used;
    size_t shard;
  };
  void AppendKept(std::vector<Kept>* out) const;
  // Lets go of shard i's reader if it was not used since the use stamped `used`, and
  // returns it (nullptr if it kept it or had none).
  std::shared_ptr<const ShardReader> Release(size_t shard, uint64_t used) const;
  // Copies of each shard this version keeps (its recorded replication, or the
  // default for `members` nodes when it recorded none).
  uint32_t Replication(size_t members) const;
  // Set once the version was deleted (DatasetCache::Forget): a stream on it
  // ends at the next step it builds, with FailedPrecondition.
  bool deleted() const { return deleted_.load(std::memory_order_acquire); }
  void MarkDeleted() const { deleted_.store(true, std::memory_order_release); }

 private:
  // The reader of sample `id`'s shard and its record index there (OutOfRange
  // past the end, or Reader's errors).
  Result<std::pair<std::shared_ptr<const ShardReader>, uint64_t>> RecordOf(uint64_t id) const;

  // Threads OpenReaders opens readers on at most.
  static constexpr size_t kOpeningThreads = 8;

  // Reader's work: the slot's reader, opened if it has none (*opened set then).
  Result<std::shared_ptr<const ShardReader>> ReaderOnce(size_t shard, bool* opened) const;

  struct Slot {
    Mutex mu;
    std::shared_ptr<const ShardReader> reader GUARDED_BY(mu);
    std::atomic<uint64_t> used{0};  // the budget's stamp of its last use
  };

  v1::VersionRecord record_;
  std::vector<v1::ShardRecord> shards_;
  IdRanges ids_;                // which shard holds an id
  std::vector<uint32_t> seqs_;  // each shard's sequence number (shards_[i].info().seq())
  DatasetShape shape_;
  const DataDir* dir_;
  mutable std::vector<Slot> slots_;
  const std::shared_ptr<ReaderBudget> budget_;
  mutable Mutex members_mu_;
  mutable std::shared_ptr<const StratumMembers> members_ GUARDED_BY(members_mu_);
  mutable SamplerCache samplers_;
  mutable std::atomic<bool> deleted_{false};
  mutable std::atomic<bool> registered_{false};  // with budget_
};

class DatasetCache {
 public:
  // `catalog` and `dir` must outlive the cache. It keeps at most
  // `max_kept_readers` shard readers open between uses (0: no bound).
  DatasetCache(const Catalog* catalog, const DataDir* dir, size_t max_kept_readers = 0)
      : catalog_(catalog), dir_(dir), budget_(std::make_shared<ReaderBudget>(max_kept_readers)) {}

  // The sealed version `ref` names (the latest sealed one when it names no
  // version). NotFound if the dataset or version does not exist;
  // FailedPrecondition if the version is not sealed.
  Result<std::shared_ptr<const OpenVersion>> Open(const DatasetRef& ref);
  // Drops the cached entry of name@version and marks it deleted (streams
  // holding it end at their next step). No-op if it is not open.
  void Forget(const std::string& name, uint64_t version);
  ReaderBudget& readers() const { return *budget_; }

 private:
  const Catalog* catalog_;
  const DataDir* dir_;
  const std::shared_ptr<ReaderBudget> budget_;
  Mutex mu_;
  // Sealed versions are immutable, so cached entries go stale only when the
  // version is deleted (Forget).
  std::map<std::pair<std::string, uint64_t>, std::shared_ptr<const OpenVersion>> open_ GUARDED_BY(mu_);
};

}  // namespace strata
