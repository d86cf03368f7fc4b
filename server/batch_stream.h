// One rank's batches of one epoch, read from the node's shards: the core of
// StreamBatches, testable without a network.
//
// For every step the stream computes the rank's sample ids from the epoch
// plan, reads each record (verifying its checksum) and packs the samples into
// Batch messages. A batch whose payload exceeds max_part_bytes is split into
// parts; the parts' `slots` say where each sample belongs.
//
// Thread-safety: not thread-safe; one caller at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/epoch_plan.h"
#include "server/catalog.h"
#include "server/dataset_cache.h"
#include "server/metrics.h"
#include "strata/v1/data.pb.h"

namespace strata {

struct StreamLimits {
  uint64_t max_part_bytes = 16ull << 20;
  uint32_t max_world = 1u << 16;
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
                                                   const StreamLimits& limits);

  const EpochPlan& plan() const { return plan_; }
  const OpenVersion& version() const { return *version_; }
  uint64_t next_step() const { return next_step_; }
  uint64_t end_step() const { return end_step_; }
  bool done() const { return next_step_ >= end_step_; }

  // Appends the next step's batch (one or more parts) to *parts and advances.
  // Corruption if a record is damaged (no bytes of it are sent).
  // REQUIRES: !done().
  Status BuildNext(std::vector<v1::Batch>* parts);

 private:
  BatchStream(v1::StreamRequest request, std::shared_ptr<const OpenVersion> version, EpochPlan plan,
              uint64_t start, uint64_t end, Metrics* metrics, const StreamLimits& limits);
  v1::Batch NewPart(uint64_t step, uint32_t batch_size) const;

  const v1::StreamRequest request_;
  std::shared_ptr<const OpenVersion> version_;
  const EpochPlan plan_;
  uint64_t next_step_;
  const uint64_t end_step_;
  Metrics* metrics_;
  const StreamLimits limits_;
  std::vector<uint64_t> ids_;  // scratch
};

}  // namespace strata
