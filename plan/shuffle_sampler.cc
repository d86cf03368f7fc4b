#include "plan/shuffle_sampler.h"

#include <algorithm>
#include <string>

#include "common/checksum.h"

namespace strata {

namespace {

// The permutation key: a function of dataset version, seed and epoch only, so
// the order is the same for every global batch size and number of ranks.
uint64_t ShuffleKey(const DatasetShape& shape, const PlanSpec& spec) {
  const std::string id =
      "strata.shuffle.v1|" + shape.name + "@" + std::to_string(shape.version) + "|" + std::to_string(spec.epoch);
  return Hash64(id, spec.seed);
}

}  // namespace

ShuffleSampler::ShuffleSampler(const DatasetShape& shape, const PlanSpec& spec)
    : n_(shape.num_samples),
      global_batch_(spec.global_batch),
      steps_(spec.remainder == v1::REMAINDER_DROP ? n_ / global_batch_ : (n_ + global_batch_ - 1) / global_batch_),
      perm_(shape.num_samples, spec.sampler.block_window(), ShuffleKey(shape, spec)) {
  if (spec.remainder == v1::REMAINDER_DROP) n_ = steps_ * global_batch_;
  for (const auto& s : shape.strata) {
    shares_.push_back(static_cast<double>(s.count()) / static_cast<double>(shape.num_samples));
  }
}

uint64_t ShuffleSampler::batch_size(uint64_t step) const {
  const uint64_t begin = step * global_batch_;
  return std::min(global_batch_, n_ - begin);
}

void ShuffleSampler::Select(uint64_t step, uint64_t first, uint64_t stride, std::vector<uint64_t>* ids) const {
  const uint64_t begin = step * global_batch_;
  const uint64_t size = batch_size(step);
  if (first >= size) return;
  // Positions first, first + stride, ... below size, all in one call: the
  // permutation computes them side by side (WindowedPermutation::ForwardMany).
  const size_t count = static_cast<size_t>((size - first - 1) / stride + 1);
  const size_t at = ids->size();
  ids->resize(at + count);
  perm_.ForwardMany(begin + first, stride, count, ids->data() + at);
}

}  // namespace strata
