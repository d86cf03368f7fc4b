// Which of a version's shards holds a sample id. A version's shards hold
// consecutive ranges of ids, in shard order: shard i holds [first(i),
// first(i+1)), and the last runs to the end of the version. Every served
// sample is looked up this way, on the server (twice: to plan a step's block
// reads and to build it) and on a planning client, so the lookup takes
// constant time for the usual case of shards of about one size, where a
// binary search over the shards' first ids mispredicts a branch at most steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata {

class IdRanges {
 public:
  IdRanges() = default;
  // `firsts`: each shard's first id, ascending (equal for an empty shard),
  // the first of them 0.
  explicit IdRanges(std::vector<uint64_t> firsts);

  // The index of the shard holding `id`: the last shard whose first id is at
  // most `id` (as std::upper_bound over the first ids, less one).
  // REQUIRES: at least one shard.
  size_t Find(uint64_t id) const {
    const uint64_t bucket = id >> shift_;
    if (bucket_first_.size() < 2 || bucket > bucket_first_.size() - 2) {
      return Search(id, bucket_first_.empty() ? 0 : bucket_first_.back());
    }
    // The holder lies between the holders of the bucket's first id and the
    // next bucket's: mostly the same shard or the next.
    size_t lo = bucket_first_[bucket];
    const size_t hi = bucket_first_[bucket + 1];
    if (hi - lo > kLinear) return Search(id, lo);
    while (lo < hi && firsts_[lo + 1] <= id) ++lo;
    return lo;
  }

  uint64_t first(size_t shard) const { return firsts_[shard]; }
  size_t size() const { return firsts_.size(); }

 private:
  // Shards between two buckets' holders that Find walks one by one.
  static constexpr size_t kLinear = 4;

  size_t Search(uint64_t id, size_t from) const;

  std::vector<uint64_t> firsts_;
  // Ids are split into buckets of 2^shift_; bucket_first_[b] holds the shard
  // holding id b << shift_. Buckets are at most half the mean shard.
  unsigned shift_ = 63;
  std::vector<size_t> bucket_first_;
};

}  // namespace strata
