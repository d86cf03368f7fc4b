// The epoch plan: one pure function shared by server and client,
//
//   plan(dataset version, sampler spec, seed, epoch, global batch) -> the global
//   sequence of minibatches,
//
// and the view of that sequence that one rank of a job sees.
//
// Invariants (checked by tests/plan/epoch_plan_test.cc):
//  - Deterministic: the same inputs give the same batches, in server and client.
//  - Elastic: the global batches depend on the global batch size G only, never
//    on the number of ranks. Rank r of W receives positions r, r+W, r+2W, ... of
//    each global batch, so a job on 2 ranks of B=8 and one on 8 ranks of B=2
//    see the same global batches step by step. (The stratified samplers hand a
//    rank those samples in a keyed order rather than position order, so that
//    a rank's batch is not sorted by stratum; the sets are the same.)
//  - Exactly once: without-replacement samplers visit every sample once per
//    epoch, with no padding duplicates. The remainder policy is explicit:
//    REMAINDER_SHORT ends with a short global batch (each rank gets the floor
//    or the ceiling of its share), REMAINDER_DROP drops it.
//  - Resumable: any step can be computed directly; nothing depends on having
//    computed the steps before it.
//  - O(1) memory per sample: samplers map positions to samples with keyed
//    permutations; no n-element array is built. The stratified samplers keep
//    O(strata) state per step (see plan/stratified_sampler.h).
//
// Thread-safety: Sampler and EpochPlan are immutable after Create; every const
// method is safe to call concurrently.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "strata/v1/types.pb.h"

namespace strata {

class StratumMembers;  // plan/stratum_index.h

// What the plan needs to know about a sealed dataset version.
struct DatasetShape {
  std::string name;
  uint64_t version = 0;
  uint64_t num_samples = 0;
  // Per-stratum counts, in the canonical (sorted by key) order; they sum to
  // num_samples. Used by stratified samplers.
  std::vector<v1::StratumCount> strata;
  // Which samples are in each stratum (same order as `strata`). Required by
  // the stratified and weighted samplers, unused by SHUFFLE.
  std::shared_ptr<const StratumMembers> members;
};

// The job-wide inputs of the global sequence.
struct PlanSpec {
  v1::SamplerSpec sampler;
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t global_batch = 0;  // batch size per rank * world
  v1::Remainder remainder = v1::REMAINDER_SHORT;
};

// Largest global batch the plan accepts.
inline constexpr uint64_t kMaxGlobalBatch = uint64_t{1} << 24;

// The global sequence of minibatches of one epoch.
class Sampler {
 public:
  // Picks the implementation from spec.sampler.kind. InvalidArgument for bad
  // parameters (with a message that names them), Unimplemented for a kind this
  // build does not have.
  static Result<std::unique_ptr<Sampler>> Create(const DatasetShape& shape, const PlanSpec& spec);

  virtual ~Sampler() = default;

  virtual uint64_t num_steps() const = 0;
  // Samples in global batch `step`. REQUIRES: step < num_steps().
  virtual uint64_t batch_size(uint64_t step) const = 0;
  // Appends the sample ids at positions first, first + stride, first + 2*stride,
  // ... (below batch_size(step)) of global batch `step`: in position order for
  // SHUFFLE, in a keyed order for the stratified samplers.
  // REQUIRES: step < num_steps(), stride >= 1.
  virtual void Select(uint64_t step, uint64_t first, uint64_t stride, std::vector<uint64_t>* ids) const = 0;
  // Per stratum of the shape (same order as DatasetShape::strata): the share of
  // a full global batch the plan aims at (natural proportions for SHUFFLE and
  // STRATIFIED, the weights for WEIGHTED, adjusted by min_per_batch). Empty
  // when the shape has no stratum counts.
  virtual std::vector<double> TargetShares() const = 0;
  // OK unless the stratum index turned out damaged while Select read it
  // (StratumMembers::Damage): ids selected since then are not to be trusted.
  virtual Status Damage() const { return Status::OK(); }
  // OK when global batch `step` can be computed in bounded time from where
  // the sampler stands. A stratified schedule reaches a step by replaying it
  // from its nearest checkpoint, one step at a time: InvalidArgument when
  // that is more than a node does for a request (a few seconds of CPU).
  // A client planning its own stream pays its own CPU and need not ask.
  virtual Status CheckReachable(uint64_t step) const {
    (void)step;
    return Status::OK();
  }
};

// Samplers shared by the plans of one server: every rank of a job streaming
// from it, and a trainer that resumes while the server still holds the plan.
// A stratified schedule is then computed once per server rather than once per
// rank, and a resumed stream finds its checkpoints instead of replaying the
// schedule from the start. SHUFFLE samplers cost nothing to build and are not
// kept. Keyed by PlanHash, seed and epoch; the `capacity` most recently used
// samplers are kept (default 8). A sampler is reused only with the same
// StratumMembers object: a stratum index opened again (after damage was found
// in the one before) gets new samplers.
//
// Thread-safety: safe for concurrent use.
class SamplerCache {
 public:
  explicit SamplerCache(size_t capacity = 8) : capacity_(capacity) {}

  // Sampler::Create, or the sampler an earlier call built for the same plan.
  Result<std::shared_ptr<const Sampler>> GetOrCreate(const DatasetShape& shape, const PlanSpec& spec);

 private:
  struct Entry {
    uint64_t plan_hash, seed, epoch;
    const StratumMembers* members;
    std::shared_ptr<const Sampler> sampler;
  };
  const size_t capacity_;
  Mutex mu_;
  std::list<Entry> entries_ GUARDED_BY(mu_);  // most recently used first
};

// Hash of everything that determines the global sequence except seed and
// epoch: dataset name and version, sampler spec, global batch and remainder.
// With seed, epoch and step it forms a resume token. Never 0 (0 is "none").
uint64_t PlanHash(const DatasetShape& shape, const PlanSpec& spec);

// One rank's view of the plan.
class EpochPlan {
 public:
  // InvalidArgument when batch_size or world is 0, the global batch is larger
  // than kMaxGlobalBatch, or the epoch would be empty.
  // With a `cache`, the sampler is shared with other plans of the same
  // dataset version, spec, global batch, remainder, seed and epoch.
  static Result<EpochPlan> Create(const DatasetShape& shape, const v1::SamplerSpec& sampler, uint64_t seed,
                                  uint64_t epoch, uint32_t batch_size, uint32_t world, v1::Remainder remainder,
                                  SamplerCache* cache = nullptr);

  uint64_t num_steps() const { return sampler_->num_steps(); }
  uint32_t world() const { return world_; }
  uint32_t batch_size() const { return batch_size_; }
  uint64_t plan_hash() const { return plan_hash_; }
  const Sampler& sampler() const { return *sampler_; }

  // Samples rank `rank` receives at `step`: batch_size() except in a short
  // last batch. REQUIRES: step < num_steps(), rank < world().
  uint64_t RankBatchSize(uint64_t step, uint32_t rank) const;
  // Replaces *ids with the rank's sample ids for `step`, in order. If
  // Damage() is not OK afterwards, they are not to be trusted.
  // REQUIRES: step < num_steps(), rank < world().
  void RankBatch(uint64_t step, uint32_t rank, std::vector<uint64_t>* ids) const;
  // Corruption if a stratum index read for this plan was found damaged.
  Status Damage() const { return sampler_->Damage(); }
  Status CheckReachable(uint64_t step) const { return sampler_->CheckReachable(step); }

 private:
  EpochPlan(std::shared_ptr<const Sampler> sampler, uint32_t batch_size, uint32_t world, uint64_t plan_hash)
      : sampler_(std::move(sampler)), batch_size_(batch_size), world_(world), plan_hash_(plan_hash) {}

  std::shared_ptr<const Sampler> sampler_;
  uint32_t batch_size_;
  uint32_t world_;
  uint64_t plan_hash_;
};

}  // namespace strata
