// STRATIFIED and WEIGHTED: every global batch carries each stratum's quota
// (plan/sampler_quotas.h), with rare strata included.
//
// Guarantees, for every full global batch k of size G and every stratum s with
// quota q_s (checked at every step by tests/plan/stratified_sampler_test.cc):
//  - Per batch: stratum s has floor(q_s) or ceil(q_s) samples. The short last
//    batch of a STRATIFIED epoch holds every stratum's remainder, which is also
//    the floor or the ceiling of its share of that batch.
//  - Cumulative: after k full batches s has had within (-1, 1) of k * q_s
//    samples (the "+1"s follow a Pfair schedule, plan/pfair_scheduler.h).
//  - Ranks: the global batch is laid out as one contiguous run per stratum
//    (rotated by a per-step offset), and rank r of W takes positions r, r+W,
//    ..., so every rank gets floor(a_s/W) or ceil(a_s/W) of the a_s samples of
//    s in that batch: within 1 of its proportional share q_s/W.
//  - STRATIFIED is exactly once: stratum s takes positions [A_s(k), A_s(k) +
//    a_s(k)) of its own keyed permutation (keyed by dataset version, seed,
//    epoch and stratum), and A_s ends the epoch at c_s. WEIGHTED and boosted
//    strata cycle through their permutations, a new key per cycle.
//  - Elastic and deterministic: nothing depends on the number of ranks; a
//    rank's samples come in a keyed order (by a hash of id and step) so that
//    its batch is not sorted by stratum.
//
// Cost: O(strata) to build, O(strata) memory plus bounded checkpoints. A step
// costs O(strata + M log strata) for the schedule (M = "+1"s per batch, at most
// min(G, strata)) and O(1) per sample. The schedule has no closed form, so
// random access replays from the nearest checkpoint (one every >= 1024 steps,
// at most 2^21 saved counts); sequential steps, and ranks asking for any of
// the last 64 steps computed, reuse saved state.
//
// Thread-safety: immutable interface; the schedule cache is guarded by a mutex,
// so every const method is safe to call concurrently.
#pragma once

#include <memory>
#include <vector>

#include "common/mutex.h"
#include "plan/epoch_plan.h"
#include "plan/pfair_scheduler.h"
#include "plan/sampler_quotas.h"
#include "plan/stratum_index.h"
#include "plan/windowed_permutation.h"

namespace strata {

class StratifiedSampler final : public Sampler {
 public:
  // FailedPrecondition if shape.members is missing or disagrees with
  // shape.strata; otherwise the errors of PlanQuotas.
  static Result<std::unique_ptr<StratifiedSampler>> Create(const DatasetShape& shape, const PlanSpec& spec);

  uint64_t num_steps() const override { return quotas_.num_steps(); }
  uint64_t batch_size(uint64_t step) const override;
  void Select(uint64_t step, uint64_t first, uint64_t stride, std::vector<uint64_t>* ids) const override;
  std::vector<double> TargetShares() const override;
  Status Damage() const override { return members_->Damage(); }
  Status CheckReachable(uint64_t step) const override;

  const QuotaPlan& quotas() const { return quotas_; }
  // Samples of each plan stratum (quotas().strata order) in global batch
  // `step`. REQUIRES: step < num_steps().
  std::vector<uint64_t> Composition(uint64_t step) const;

 private:
  // One global batch: per plan stratum, the positions of its sequence taken
  // before it, and where its run starts in the (unrotated) batch.
  struct Layout {
    uint64_t step = UINT64_MAX;
    std::vector<uint64_t> taken;
    std::vector<uint64_t> start;  // size strata + 1; run i is [start[i], start[i+1])
  };

  StratifiedSampler(const DatasetShape& shape, const PlanSpec& spec, QuotaPlan quotas);
  // The layout of `step`, shared by every rank asking for the same step.
  std::shared_ptr<const Layout> LayoutAt(uint64_t step) const;
  // REQUIRES: mu_ held. Brings the schedule to slot `slot`.
  void AdvanceTo(uint64_t slot) const REQUIRES(mu_);
  // REQUIRES: mu_ held. Saves a checkpoint if the schedule sits on a new one.
  void MaybeCheckpoint() const REQUIRES(mu_);
  // The short last batch of a WEIGHTED epoch, from the picks after the full batches.
  void ApportionLast(const std::vector<uint64_t>& picks, std::vector<uint64_t>* counts) const;
  // Where positions j, j + stride, ... (count of them) of plan stratum i's
  // sequence lie among the members of its stratum (quotas_.strata[i].stratum),
  // for StratumMembers::Member: out[k] for position j + k * stride. REQUIRES:
  // the positions lie in one cycle of the stratum's permutations
  // (j % members + (count - 1) * stride < members).
  void MembersAt(size_t i, uint64_t j, uint64_t stride, size_t count, uint64_t* out) const;

  std::shared_ptr<const StratumMembers> members_;
  const QuotaPlan quotas_;
  const uint64_t window_;
  const size_t num_shape_strata_;
  std::vector<uint64_t> stratum_keys_;            // per plan stratum
  std::vector<WindowedPermutation> first_cycle_;  // per plan stratum: its first permutation
  uint64_t order_key_ = 0;
  uint64_t interval_ = 1024;  // slots between checkpoints

  mutable Mutex mu_;
  mutable PfairScheduler schedule_ GUARDED_BY(mu_);
  mutable std::vector<std::vector<uint64_t>> checkpoints_ GUARDED_BY(mu_);  // [c] = picks at slot c*interval_
  // The layouts of recent steps, by step % kRecent: ranks (and streams sharing
  // this sampler) that ask for nearby steps do not replay the schedule.
  static constexpr size_t kRecent = 64;
  mutable std::vector<std::shared_ptr<const Layout>> recent_ GUARDED_BY(mu_);
  mutable std::vector<uint32_t> picked_ GUARDED_BY(mu_);  // scratch
};

}  // namespace strata
