// One rank's batches of one epoch, read from the node's shards: the core of
// StreamBatches, testable without a network.
//
// For every step the stream computes the rank's sample ids from the epoch
// plan, reads each record (verifying its checksum) and packs the samples into
// Batch parts (server/wire_part.h) whose payloads point into the mapped shard
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
// With a block cache (server/block_cache.h) the stream plans read_ahead_steps
// steps ahead of the one it builds: it computes their sample ids once, pins the
// shard blocks they will read (so the cache reads them in on the I/O pool and
// keeps them until they are used), and unpins a step's blocks once the step is
// built. The first step is planned alone, so that the first batch does not
// wait for the plan of the ones after it.
//
// Thread-safety: not thread-safe; one caller at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/epoch_plan.h"
#include "server/block_cache.h"
#include "server/catalog.h"
#include "server/dataset_cache.h"
#include "server/metrics.h"
#include "server/stratum_metrics.h"
#include "server/wire_part.h"
#include "strata/v1/data.pb.h"

namespace strata {

struct StreamLimits {
  uint64_t max_part_bytes = 16ull << 20;
  uint32_t max_world = 1u << 16;
  uint32_t read_ahead_steps = 4;  // with a block cache: steps planned and read in ahead
};

// Where a stream finds records this node does not hold, or holds damaged.
class RecordFetcher {
 public:
  virtual ~RecordFetcher() = default;
  // Appends the verified raw records `indexes` of `shard`, in order, from
  // another node that holds it. Unavailable if no holder can provide them.
  virtual Status Fetch(const v1::FileRef& shard, std::span<const uint64_t> indexes,
                       std::vector<std::string>* raw) = 0;
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
                                                   const Catalog* catalog, Metrics* metrics,
                                                   const StreamLimits& limits, StreamServer server = {});

  // Unpins the blocks of the steps planned ahead.
  ~BatchStream();
  BatchStream(const BatchStream&) = delete;
  BatchStream& operator=(const BatchStream&) = delete;

  const EpochPlan& plan() const { return plan_; }
  const OpenVersion& version() const { return *version_; }
  uint64_t next_step() const { return next_step_; }
  uint64_t end_step() const { return end_step_; }
  bool done() const { return next_step_ >= end_step_; }

  // Appends the next step's batch (one or more parts) to *parts and advances.
  // Corruption if a record is damaged (no bytes of it are sent).
  // REQUIRES: !done().
  Status BuildNext(std::vector<WirePart>* parts);

 private:
  BatchStream(v1::StreamRequest request, std::shared_ptr<const OpenVersion> version, EpochPlan plan,
              uint64_t start, uint64_t end, Metrics* metrics, const StreamLimits& limits, StreamServer server);
  class PartBuilder;
  // Whether this node serves sample `id` of shard `shard`.
  bool ServesHere(size_t shard, uint64_t id);
  v1::FileRef ShardFile(size_t shard) const;
  // Whether `record` of `reader` lies in one of `blocks` (sorted (reader,
  // block) keys of this step). REQUIRES: server_.blocks.
  bool InBlocks(const ShardReader& reader, uint64_t record,
                std::span<const std::pair<const void*, uint64_t>> blocks) const;
  // The reader of `shard` for this step: OpenVersion::Reader takes a lock, so
  // each step looks each of its shards up once. ForgetStepReaders starts a step.
  const Result<std::shared_ptr<const ShardReader>>& StepReader(size_t shard);
  void ForgetStepReaders();
  // Plans steps up to next_step_ + read_ahead_steps (the first call: only
  // next_step_): their ids and pinned blocks. REQUIRES: server_.blocks.
  void PlanAhead();

  const v1::StreamRequest request_;
  std::shared_ptr<const OpenVersion> version_;
  const EpochPlan plan_;
  uint64_t next_step_;
  const uint64_t end_step_;
  Metrics* metrics_;
  const StreamLimits limits_;
  const StreamServer server_;
  // Cluster serving, per shard, computed on first use.
  struct ShardPlacement {
    bool known = false;
    bool local = true;  // until a read says this node has no good copy
    std::vector<std::string> holders;
    std::vector<std::string> ranked;
  };
  std::vector<ShardPlacement> placement_;
  std::vector<std::string> members_;
  std::vector<std::string> excluded_;
  std::vector<uint64_t> ids_;  // scratch
  std::vector<std::optional<Result<std::shared_ptr<const ShardReader>>>> step_readers_;  // per shard
  std::vector<size_t> step_shards_;  // the shards step_readers_ holds
  // The step's samples this node reads from its own shards (scratch).
  struct LocalRead {
    uint32_t slot;
    uint64_t id;
    size_t shard;
    uint64_t record;
  };
  std::vector<LocalRead> reads_;
  RecordView view_;  // scratch: its vectors keep their capacity from step to step
  // How many reads ahead BuildNext (and PlanAhead) prefetch offsets and records:
  // enough to keep several memory loads in flight, few enough that they stay cached.
  static constexpr size_t kOffsetsAhead = 16;
  static constexpr size_t kRecordsAhead = 8;
  // Steps planned ahead (with a block cache): [next_step_, planned_end_).
  struct Planned {
    std::vector<uint64_t> ids;
    std::vector<BlockCache::BlockRef> blocks;  // pinned
  };
  std::deque<Planned> ahead_;
  uint64_t planned_end_;
  bool first_planned_ = false;  // PlanAhead has run once
  std::unique_ptr<CompositionRecorder> composition_;  // with metrics: the strata of served batches
};

}  // namespace strata
