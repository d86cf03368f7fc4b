// DecompressedCache: striped LRU of decompressed shard blocks.
#include "server/storage/decompressed_cache.h"

namespace strata {

DecompressedCache::DecompressedCache(size_t capacity_bytes) : stripe_capacity_(capacity_bytes / kStripes) {}

DecompressedCache& DecompressedCache::Process() {
  static DecompressedCache* cache = new DecompressedCache(kProcessBytes);  // never destroyed: readers outlive statics
  return *cache;
}

std::shared_ptr<const std::string> DecompressedCache::Find(uint64_t reader, uint64_t block) {
  Stripe& s = StripeOf(reader, block);
  MutexLock lock(&s.mu);
  auto it = s.index.find({reader, block});
  if (it == s.index.end()) return nullptr;
  s.lru.splice(s.lru.begin(), s.lru, it->second);
  return it->second->second;
}

void DecompressedCache::SetCapacity(size_t capacity_bytes) {
  stripe_capacity_.store(capacity_bytes / kStripes, std::memory_order_relaxed);
}

void DecompressedCache::Insert(uint64_t reader, uint64_t block, std::shared_ptr<const std::string> bytes) {
  const size_t capacity = stripe_capacity_.load(std::memory_order_relaxed);
  if (!bytes || bytes->size() > capacity) return;
  Stripe& s = StripeOf(reader, block);
  MutexLock lock(&s.mu);
  const Key key{reader, block};
  if (s.index.contains(key)) return;  // two readers decompressed it at once
  s.bytes += bytes->size();
  s.lru.emplace_front(key, std::move(bytes));
  s.index.emplace(key, s.lru.begin());
  while (s.bytes > capacity) {
    auto& last = s.lru.back();
    s.bytes -= last.second->size();
    s.index.erase(last.first);
    s.lru.pop_back();
  }
}

void DecompressedCache::Forget(uint64_t reader) {
  for (Stripe& s : stripes_) {
    MutexLock lock(&s.mu);
    for (auto it = s.lru.begin(); it != s.lru.end();) {
      if (it->first.first != reader) {
        ++it;
        continue;
      }
      s.bytes -= it->second->size();
      s.index.erase(it->first);
      it = s.lru.erase(it);
    }
  }
}

size_t DecompressedCache::bytes() const {
  size_t total = 0;
  for (const Stripe& s : stripes_) {
    MutexLock lock(&s.mu);
    total += s.bytes;
  }
  return total;
}

}  // namespace strata
