// SHUFFLE: one keyed permutation of all samples per (dataset version, seed,
// epoch). Global batch k holds permuted positions [kG, kG + G). With a
// block_window the permutation is a WindowedPermutation: blocks of that many
// consecutive ids in a random order, shuffled inside each block.
#pragma once

#include <vector>

#include "plan/epoch_plan.h"
#include "plan/windowed_permutation.h"

namespace strata {

class ShuffleSampler final : public Sampler {
 public:
  // REQUIRES: spec.global_batch >= 1 (checked by Sampler::Create).
  ShuffleSampler(const DatasetShape& shape, const PlanSpec& spec);

  uint64_t num_steps() const override { return steps_; }
  uint64_t batch_size(uint64_t step) const override;
  void Select(uint64_t step, uint64_t first, uint64_t stride, std::vector<uint64_t>* ids) const override;
  std::vector<double> TargetShares() const override { return shares_; }

 private:
  uint64_t n_;  // samples visited this epoch (all of them, or fewer under REMAINDER_DROP)
  uint64_t global_batch_;
  uint64_t steps_;
  WindowedPermutation perm_;
  std::vector<double> shares_;  // natural share of each stratum
};

}  // namespace strata
