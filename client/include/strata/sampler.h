// How a stream orders samples: the sampler and what happens to the samples
// that do not fill the last global batch. Both are part of every resume token
// (through the plan hash): a stream resumes only with the same choices.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace strata {

struct SamplerSpec {
  enum class Kind : int {
    kShuffle = 0,     // one keyed permutation of all samples
    kStratified = 1,  // natural proportions per batch, without replacement
    kWeighted = 2,    // target proportions, each stratum cycling its own permutation
  };
  Kind kind = Kind::kShuffle;
  // kWeighted: target share per stratum key; unnamed strata get weight 0.
  std::map<std::string, double> weights;
  // kWeighted: share proportional to count^power (used when weights is empty). Default 0.
  double weight_power = 0;
  // kWeighted: samples per epoch; 0 (default) means the dataset's size.
  uint64_t epoch_samples = 0;
  // At least this many samples of the named stratum in every global batch.
  std::map<std::string, uint32_t> min_per_batch;
  // Block-shuffle window in samples, for locality; 0 (default) disables it.
  uint64_t block_window = 0;

  friend bool operator==(const SamplerSpec&, const SamplerSpec&) = default;
};

// What happens to the samples that do not fill the last global batch.
enum class Remainder : int {
  kShort = 0,  // a short last batch: every sample exactly once
  kDrop = 1,   // drop the last incomplete global batch
};

}  // namespace strata
