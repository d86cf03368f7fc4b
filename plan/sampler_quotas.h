// How the stratified and weighted samplers divide every global batch among
// strata: exact rational quotas, computed once per plan in O(strata).
//
// Stratum s's quota per full global batch is q_s = base_s + rate_s / denom,
// and the quotas sum to the global batch G exactly. Every full batch gives s
// either base_s or base_s + 1 samples (the floor or the ceiling of q_s); the
// "+1"s are handed out by a Pfair schedule (plan/pfair_scheduler.h) so that
// cumulative counts stay within 1 of k * q_s.
//
//  - STRATIFIED: q_s = G * c_s / n (natural proportions), without replacement:
//    K = floor(n / G) full batches, then (REMAINDER_SHORT) a short last batch
//    of each stratum's remaining samples, so every sample comes exactly once.
//  - WEIGHTED: q_s = G * w_s / sum(w), with w_s from SamplerSpec.weights (by
//    stratum key; unnamed strata get 0) or, when no weights are given,
//    c_s ^ weight_power (power 0, the default, gives every stratum an equal
//    share). Weights are normalised and quantised to 32-bit fixed point
//    (w_s / sum(w) * 2^32, rounded), so the schedule itself is exact integer
//    arithmetic; a stratum whose share rounds to 0 is left out. The epoch has
//    epoch_samples samples (0: the dataset's size); each stratum cycles through
//    its own permutations, a fresh one per cycle.
//  - min_per_batch {key: K}: a named stratum whose quota is below K gets
//    exactly K per global batch, drawn with replacement from its own cycling
//    permutations (so exactly-once no longer holds for it); the other strata
//    share the rest of the batch (G - sum K) in their natural (or weighted)
//    proportions, recomputed until no named stratum is below its minimum. In
//    STRATIFIED mode the epoch ends when the other strata are exhausted (each
//    of them exactly once); the short last batch also carries K of each
//    boosted stratum.
//
// Strata with no samples are left out. Everything here is a pure function of
// the dataset shape and the plan spec.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/epoch_plan.h"

namespace strata {

struct StratumQuota {
  uint32_t stratum = 0;  // index into DatasetShape::strata and the member index
  uint64_t members = 0;  // samples in the stratum
  uint64_t base = 0;     // samples in every full global batch: floor(q_s)
  uint64_t rate = 0;     // numerator of the fractional part of q_s over QuotaPlan::denom
  bool cycle = false;    // with replacement: cycles through its own permutations
  bool boosted = false;  // raised to its min_per_batch
};

struct QuotaPlan {
  std::vector<StratumQuota> strata;  // strata with a nonzero quota, canonical order
  uint64_t denom = 1;                // < 2^62
  uint64_t extras = 0;               // sum(rate) / denom: "+1"s per full batch
  uint64_t global_batch = 0;
  uint64_t full_steps = 0;
  uint64_t last_batch = 0;  // samples in the short last batch; 0: none
  bool exhaustive = false;  // STRATIFIED: non-boosted strata end the epoch exhausted

  uint64_t num_steps() const { return full_steps + (last_batch != 0 ? 1 : 0); }
  // q_s / G for plan stratum i: its target share of a full global batch.
  double Share(size_t i) const;
};

// InvalidArgument for a bad spec (unknown stratum names, weights that are
// negative or not finite, a min_per_batch that leaves no room for the other
// strata, options that belong to another sampler kind), FailedPrecondition if
// the shape has no stratum counts or they do not add up to num_samples.
Result<QuotaPlan> PlanQuotas(const DatasetShape& shape, const PlanSpec& spec);

}  // namespace strata
