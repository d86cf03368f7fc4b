#include "common/id_ranges.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace strata {

namespace {

// Buckets at most: the table stays small beside the shard list.
constexpr uint64_t kMaxBuckets = 1u << 20;

}  // namespace

IdRanges::IdRanges(std::vector<uint64_t> firsts) : firsts_(std::move(firsts)) {
  if (firsts_.empty()) return;
  constexpr uint64_t kMaxId = std::numeric_limits<uint64_t>::max();
  // Ids up to the last shard's first, and as far again as a mean shard past
  // it, fall in the table; later ids (and those of a huge last shard) search.
  // (A client builds this from a node's shard list: sums saturate.)
  const uint64_t last = firsts_.back();
  const uint64_t mean = std::max<uint64_t>(1, last / std::max<size_t>(1, firsts_.size() - 1));
  const uint64_t span = last > kMaxId - mean ? kMaxId : last + mean;
  // The widest power-of-two bucket of at most half a mean shard, with no more
  // than kMaxBuckets buckets over the span.
  unsigned shift = std::bit_width(std::max<uint64_t>(1, mean / 2)) - 1;
  while ((span >> shift) + 2 > kMaxBuckets) ++shift;
  shift_ = shift;
  const uint64_t buckets = (span >> shift_) + 2;
  bucket_first_.resize(buckets);
  size_t holder = 0;  // of each bucket's first id, found by one sweep over the shards
  for (uint64_t b = 0; b < buckets; ++b) {
    const uint64_t id = b > (kMaxId >> shift_) ? kMaxId : b << shift_;
    while (holder + 1 < firsts_.size() && firsts_[holder + 1] <= id) ++holder;
    bucket_first_[b] = holder;
  }
}

size_t IdRanges::Search(uint64_t id, size_t from) const {
  const auto it = std::upper_bound(firsts_.begin() + static_cast<std::ptrdiff_t>(from), firsts_.end(), id);
  return it == firsts_.begin() ? 0 : static_cast<size_t>(it - firsts_.begin()) - 1;
}

}  // namespace strata
