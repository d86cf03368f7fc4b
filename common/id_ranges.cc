#include "common/id_ranges.h"

#include <algorithm>
#include <bit>

namespace strata {

namespace {

// Buckets at most: the table stays small beside the shard list.
constexpr uint64_t kMaxBuckets = 1u << 20;

}  // namespace

IdRanges::IdRanges(std::vector<uint64_t> firsts) : firsts_(std::move(firsts)) {
  if (firsts_.empty()) return;
  // Ids up to the last shard's first, and as far again as a mean shard past
  // it, fall in the table; later ids (and those of a huge last shard) search.
  const uint64_t last = firsts_.back();
  const uint64_t mean = std::max<uint64_t>(1, last / std::max<size_t>(1, firsts_.size() - 1));
  const uint64_t span = last + mean;
  // The widest power-of-two bucket of at most half a mean shard, with no more
  // than kMaxBuckets buckets over the span.
  unsigned shift = std::bit_width(std::max<uint64_t>(1, mean / 2)) - 1;
  while ((span >> shift) + 2 > kMaxBuckets) ++shift;
  shift_ = shift;
  const uint64_t buckets = (span >> shift_) + 2;
  bucket_first_.resize(buckets);
  for (uint64_t b = 0; b < buckets; ++b) bucket_first_[b] = Search(b << shift_, 0);
}

size_t IdRanges::Search(uint64_t id, size_t from) const {
  const auto it = std::upper_bound(firsts_.begin() + static_cast<std::ptrdiff_t>(from), firsts_.end(), id);
  return it == firsts_.begin() ? 0 : static_cast<size_t>(it - firsts_.begin()) - 1;
}

}  // namespace strata
