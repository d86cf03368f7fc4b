// DecompressedCache: the blocks of compressed shards (format 4,
// server/storage/shard_format.h) decompressed recently, shared by every
// reader of the process, least recently used first out.
//
// A shuffled stream reads one small record here and there: each read of a
// compressed shard decompresses the record's whole block (64 KiB), and
// without a cache every sample pays for that. With one, the blocks of a
// dataset that fits stay decompressed, and a larger dataset hits in
// proportion to the share that fits. Its memory counts in the process's RSS,
// which the block cache's memory budget sees as the rest of the process
// (server/storage/block_cache.h) and makes room for.
// Thread-safe: striped, each stripe under its own lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/mutex.h"

namespace strata {

class DecompressedCache {
 public:
  // Holds at most about `capacity_bytes` of blocks (a block larger than a
  // stripe's share is not kept).
  explicit DecompressedCache(size_t capacity_bytes);
  DecompressedCache(const DecompressedCache&) = delete;
  DecompressedCache& operator=(const DecompressedCache&) = delete;

  // The one ShardReader uses: 256 MiB until SetCapacity (stratad's
  // decompressed_cache_bytes).
  static DecompressedCache& Process();
  static constexpr size_t kProcessBytes = size_t{256} << 20;

  // A new capacity; a smaller one evicts as blocks are inserted. 0 keeps nothing.
  void SetCapacity(size_t capacity_bytes);

  // Block `block` of the reader numbered `reader` (ShardReader's serial), or null.
  std::shared_ptr<const std::string> Find(uint64_t reader, uint64_t block);
  // Keeps `bytes` as that block, evicting the least recently used beyond the capacity.
  void Insert(uint64_t reader, uint64_t block, std::shared_ptr<const std::string> bytes);
  // Drops every block of `reader` (a closed shard: nobody asks for them again).
  void Forget(uint64_t reader);

  size_t bytes() const;

 private:
  static constexpr size_t kStripes = 16;
  using Key = std::pair<uint64_t, uint64_t>;
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<uint64_t>()(k.first * 0x9E3779B97F4A7C15ull ^ k.second); }
  };
  struct Stripe {
    mutable Mutex mu;
    // Most recently used first.
    std::list<std::pair<Key, std::shared_ptr<const std::string>>> lru GUARDED_BY(mu);
    std::unordered_map<Key, decltype(lru)::iterator, KeyHash> index GUARDED_BY(mu);
    size_t bytes GUARDED_BY(mu) = 0;
  };
  Stripe& StripeOf(uint64_t reader, uint64_t block) { return stripes_[KeyHash()({reader, block}) % kStripes]; }

  std::atomic<size_t> stripe_capacity_;
  Stripe stripes_[kStripes];
};

}  // namespace strata
