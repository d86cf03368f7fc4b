// One rank's batches of one epoch, read from the node's shards: the core of
// StreamBatches, testable without a network.
//
// For every step the stream computes the rank's sample ids from the epoch
// plan, reads each record (verifying its checksum) and packs the samples into
// Batch parts (server/serve/wire_part.h) whose payloads point into the mapped shard
// files: no payload byte of a large record is copied until gRPC writes it to
// the socket. (With a block cache, that holds for records in blocks the step
// reads densely; a record alone in its block is copied into the part, so that
// a batch waiting to be sent does not hold a whole block for it.) A batch
// whose payload exceeds max_part_bytes is split into parts; the parts' `slots`
// say where each sample belongs.
//
// In a cluster (request.members non-empty) every server computes the same
// plan and sends only the samples it serves: for each sample, one of its
// shard's holders not in request.excluded (common/placement.h). Every server
// sends at least one part per step, the last one marked last_part, so the
// client can tell a finished share from a late one. A sample this node should
// serve but holds no good copy of (a new holder before repair reached it, a
// quarantined copy) is fetched from another holder through a RecordFetcher.
//
// A client that plans (request.work) names the samples this node owes at
// each step and their slots: the stream serves exactly those, computes none
// of the plan's ids, and leaves placement to the client. Its plan still gives
// the steps' batch sizes, the plan hash and the epoch's length. Such a stream
// can be given more work as it goes (AddWork, for ServeWork's long-lived
// calls): it is done once it has claimed every step given so far, and goes on
// when more come. It keeps only the work of the steps not yet begun.
//
// With a block cache (server/storage/block_cache.h) the stream plans read_ahead_steps
// steps ahead of the one it builds: it computes their sample ids once, pins the
// shard blocks they will read (so the cache reads them in on the I/O pool and
// keeps them until they are used), and unpins a step's blocks once the step is
// built. The first step is planned alone, so that the first batch does not
// wait for the plan of the ones after it.
//
// A step is built in two parts: Claim takes the next step in order (its
// ids, its pinned blocks, the steps ahead planned) and Build reads its records
// into parts. Claimed steps may be built on several threads at once, so that
// one stream's batches are built on more than one core.
//
// Thread-safety: Claim, AddWork, BuildNext, next_step(), end_step() and
// done() are not thread-safe (one caller at a time); Build, BuildOrDefer and
// FinishDeferred may run concurrently with each other, Claim and AddWork.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/placement.h"
#include "plan/epoch_plan.h"
#include "server/base/config.h"
#include "server/base/metrics.h"
#include "server/serve/composition_recorder.h"
#include "server/serve/wire_part.h"
#include "server/storage/block_cache.h"
#include "server/storage/catalog.h"
#include "server/storage/dataset_cache.h"
#include "strata/v1/data.pb.h"

namespace strata {

// Defaults are the node configuration's (server/base/config.h), which the
// daemon passes on; only tests keep them.
struct StreamLimits {
  uint64_t max_part_bytes = NodeConfig{}.max_part_bytes;
  uint32_t max_world = 1u << 16;
  uint32_t read_ahead_steps = NodeConfig{}.read_ahead_steps;  // with a block cache: steps planned and read in ahead
};

// Where a stream finds records this node does not hold, or holds damaged.
class RecordFetcher {
 public:
  virtual ~RecordFetcher() = default;
  // Asks another node that holds `shard` for the verified raw records
  // `indexes` and returns without waiting; `done` runs once with them, in
  // order, or with Unavailable if no holder can provide them, on a thread of
  // gRPC's or of the fetcher's own, so it must not block.
  using FetchDone = std::function<void(Status, std::vector<std::string>)>;
  virtual void FetchAsync(const v1::FileRef& shard, std::vector<uint64_t> indexes, FetchDone done) = 0;
  // Sets a damaged local copy aside so that it is never read again and
  // repair replaces it.
  virtual void Quarantine(const v1::FileRef& shard) = 0;
};

// Who is serving: this node's id, its fetcher (nullptr on a single node) and
// its block cache (nullptr: streams read the shard mappings directly and the
// kernel alone decides what stays in memory).
struct StreamServer {
  std::string node_id;
  RecordFetcher* fetcher = nullptr;
  BlockCache* blocks = nullptr;
};

class BatchStream {
 public:
  // Validates the request, opens the dataset version and builds the plan.
  // InvalidArgument for bad parameters (rank >= world, batch size 0, start step
  // past the end), NotFound for an unknown dataset, FailedPrecondition for a
  // plan hash that does not match expect_plan_hash. With job_id and resume set,
  // a matching cursor in the catalog gives the start step.
  static Result<std::unique_ptr<BatchStream>> Open(const v1::StreamRequest& request, DatasetCache* cache,
                                                   const Catalog* catalog, Metrics* metrics, const StreamLimits& limits,
                                                   StreamServer server = {});

  // Unpins the blocks of the steps planned ahead.
  ~BatchStream();
  BatchStream(const BatchStream&) = delete;
  BatchStream& operator=(const BatchStream&) = delete;

  const EpochPlan& plan() const { return plan_; }
  const OpenVersion& version() const { return *version_; }
  uint64_t next_step() const { return next_step_; }
  uint64_t end_step() const { return end_step_; }
  bool done() const { return next_step_ >= end_step_; }

  struct StepOwner;
  // A step taken for building: what Build needs. Move-only; dropping it
  // unpins its blocks.
  struct StepClaim {
    uint64_t step = 0;
    std::vector<uint64_t> ids;
    std::vector<uint32_t> slots;  // with work: each id's slot; else ids[i] is slot i
    // With a block cache: the payload's owner (the step's pins), and the
    // step's blocks the cache did not admit and those it reads sparsely.
    std::shared_ptr<StepOwner> owner;
    std::vector<std::pair<const void*, uint64_t>> unmapped, sparse;
    std::chrono::steady_clock::time_point started;
  };

  // Takes the next step and advances: its sample ids and, with a block cache,
  // its pinned blocks, planning the steps ahead. Corruption if the stratum
  // index the plan read is damaged; FailedPrecondition ("... was deleted
  // while streaming") once the version was deleted (OpenVersion::deleted).
  // REQUIRES: !done().
  Status Claim(StepClaim* claim);
  // Gives a stream opened with work the steps after end_step(): `more` must
  // start there, one WorkStep per step, inside the epoch, each sample an id
  // of the version at a slot of its step that no other takes. The work given
  // and not yet begun stays within InputLimits::kMaxWorkSteps steps and
  // kMaxWorkIds samples. InvalidArgument (the stream is unchanged) otherwise,
  // or if the stream was opened without work.
  Status AddWork(v1::WorkMore more);
  // Appends a claimed step's batch (one or more parts) to *parts.
  // Corruption if a record is damaged (no bytes of it are sent). Samples this
  // node serves without a good copy are fetched from other nodes; Build
  // waits for them on its thread (BuildOrDefer does not).
  Status Build(StepClaim claim, std::vector<WirePart>* parts);

  // A step waiting for records from other nodes (opaque).
  struct DeferredStep;
  static uint64_t DeferredStepNumber(const DeferredStep& step);
  using Resume = std::function<void(std::shared_ptr<DeferredStep>)>;
  // Build without waiting for other nodes. When the step needs no records
  // from them: builds it, sets *parts and *status as Build does, and returns
  // true. Otherwise asks for them (RecordFetcher::FetchAsync) and returns
  // false; `resume` then runs once, when the last answer has come, on a
  // thread of gRPC's or the fetcher's (it must not block: post the rest), and
  // FinishDeferred completes the step. The stream must outlive that.
  bool BuildOrDefer(StepClaim claim, std::vector<WirePart>* parts, Status* status, Resume resume);
  // Completes a deferred step with what was fetched: appends its parts, or
  // returns the error (Unavailable naming the shard when no node could give
  // its records; Corruption when the local copy was damaged too).
  Status FinishDeferred(DeferredStep& step, std::vector<WirePart>* parts);
  // Claim, then Build. REQUIRES: !done().
  Status BuildNext(std::vector<WirePart>* parts);

 private:
  BatchStream(v1::StreamRequest request, std::deque<v1::WorkStep> work, std::shared_ptr<const OpenVersion> version,
              EpochPlan plan, uint64_t start, uint64_t end, Metrics* metrics, const StreamLimits& limits,
              StreamServer server);
  // Per-build scratch: one per Build running at once, kept for reuse.
  struct Scratch;
  std::unique_ptr<Scratch> TakeScratch();
  void ReturnScratch(std::unique_ptr<Scratch> scratch);
  // Reads the step's samples that this node serves from its own shards into
  // step's parts, and lists those it must fetch (step.remote).
  Status BuildLocal(const StepClaim& claim, Scratch& scratch, DeferredStep& step);
  // Whether this node serves sample `id` of shard `shard`. Thread-safe.
  bool ServesHere(size_t shard, uint64_t id);
  bool has_work() const { return has_work_; }
  // The samples of `step` this stream serves candidates for: the work's
  // (with their slots; taken from work_), else the rank's batch from the plan
  // (counted in planned_samples; slots cleared: ids[i] is slot i). Called
  // for each step once, in order.
  void StepSamples(uint64_t step, std::vector<uint64_t>* ids, std::vector<uint32_t>* slots);
  // Whether this node serves `id` of `shard`: every work sample, else ServesHere.
  bool Serves(size_t shard, uint64_t id) { return has_work() || ServesHere(shard, id); }
  // Whether this node reads `shard` itself at `now` (steady clock, ns): not
  // within kLocalRetry of finding its copy missing or damaged.
  bool Local(size_t shard, int64_t now) const;
  // Marks this node's copy of `shard` missing or damaged as of `now`.
  void SetRemote(size_t shard, int64_t now);
  v1::FileRef ShardFile(size_t shard) const;
  // Whether `record` of `reader` lies in one of `blocks` (sorted (reader,
  // block) keys of this step). REQUIRES: server_.blocks.
  bool InBlocks(const ShardReader& reader, uint64_t record,
                std::span<const std::pair<const void*, uint64_t>> blocks) const;
  // Plans steps up to next_step_ + read_ahead_steps (the first call: only
  // next_step_): their ids and pinned blocks. REQUIRES: server_.blocks.
  void PlanAhead();

  const v1::StreamRequest request_;  // without its work (in work_)
  std::shared_ptr<const OpenVersion> version_;
  const EpochPlan plan_;
  uint64_t next_step_;
  uint64_t end_step_;
  const bool has_work_;
  std::deque<v1::WorkStep> work_;  // with work: the steps given, not yet taken by StepSamples, in order
  uint64_t work_ids_ = 0;          // the samples in work_
  Metrics* metrics_;
  const StreamLimits limits_;
  const StreamServer server_;
  // Cluster serving, per shard, computed on first use (under placement_mu_).
  struct ShardPlacement {
    std::atomic<bool> known{false};
    // Until then (steady clock, ns) the shard's samples are fetched from other
    // nodes: a read found this node's copy missing or damaged. Repair may
    // bring a good copy meanwhile, so reads here are tried again after.
    std::atomic<int64_t> remote_until{0};
    std::vector<std::string> holders;
    std::vector<std::string> ranked;
    ShardServing serving;  // which of the shard's samples this node serves to this stream
  };
  std::vector<ShardPlacement> placement_;
  Mutex placement_mu_;
  const PlacementSet members_;
  const std::vector<std::string> near_;  // members in the request's zone
  std::vector<std::string> excluded_;
  std::unique_ptr<Scratch> claim_scratch_;  // PlanAhead's
  Mutex scratch_mu_;
  std::vector<std::unique_ptr<Scratch>> spare_scratch_ GUARDED_BY(scratch_mu_);
  // How many reads ahead BuildNext (and PlanAhead) prefetch offsets and records:
  // enough to keep several memory loads in flight, few enough that they stay cached.
  static constexpr size_t kOffsetsAhead = 16;
  static constexpr size_t kRecordsAhead = 8;
  static constexpr std::chrono::nanoseconds kLocalRetry = std::chrono::seconds(1);
  // Steps planned ahead (with a block cache): [next_step_, planned_end_).
  struct Planned {
    std::vector<uint64_t> ids;
    std::vector<uint32_t> slots;
    std::vector<BlockCache::BlockRef> blocks;  // pinned
    bool large = false;                        // some record spans WirePart::kZeroCopyMinBytes or more
  };
  std::deque<Planned> ahead_;
  std::optional<BlockCache::StepBlocks> step_blocks_;  // PlanAhead's, with a block cache
  uint64_t planned_end_;
  bool first_planned_ = false;  // PlanAhead has run once
  Mutex composition_mu_;
  std::unique_ptr<CompositionRecorder> composition_ GUARDED_BY(composition_mu_);  // the strata of served batches
};

}  // namespace strata
