#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <tuple>

#include "common/units.h"
#include "server/storage/block_cache_state.h"
#include "server/storage/process_memory.h"

namespace strata {

bool BlockCache::State::MakeRoom(uint64_t bytes, std::vector<Range>* releases) {
  if (budget_ < bytes) return false;
  EvictIdle(budget_ - bytes, releases);
  return resident_ + bytes <= budget_;
}

void BlockCache::State::EvictIdle(uint64_t limit, std::vector<Range>* releases) {
  while (resident_ > limit && !idle_.empty()) Evict(idle_.begin(), releases);
}

std::list<BlockCache::State::Key>::iterator BlockCache::State::Evict(std::list<Key>::iterator idle,
                                                                     std::vector<Range>* releases) {
  const Key victim = *idle;
  const auto next = std::next(idle);
  spare_.splice(spare_.end(), idle_, idle);
  auto it = entries_.find(victim);
  Entry& e = it->second;
  resident_ -= e.bytes;
  if (e.residency == Residency::kLoading) loading_ -= e.bytes;
  releases->push_back({std::move(e.reader), victim.block * options_.block_bytes, e.bytes});
  entries_.erase(it);  // idle means unpinned
  ++evictions_;
  if (metrics_) metrics_->cache_evictions.Increment();
  return next;
}

void BlockCache::State::Forget(std::vector<const ShardReader*> readers) {
  std::sort(readers.begin(), readers.end());
  std::vector<Range> releases;
  {
    MutexLock lock(&mu_);
    for (auto it = idle_.begin(); it != idle_.end();) {
      it = std::binary_search(readers.begin(), readers.end(), it->reader) ? Evict(it, &releases) : std::next(it);
    }
    Publish();
  }
  ReleaseAll(releases);
}

void BlockCache::State::Shed(std::vector<Range>* releases) {
  EvictIdle(budget_, releases);
  if (resident_ <= budget_) return;
  struct Pinned {
    bool in_use;
    uint32_t pins;
    uint64_t block;
    Entry* entry;
  };
  std::vector<Pinned> pinned;
  for (auto& [key, e] : entries_) {
    if (e.residency == Residency::kResident) pinned.push_back({e.uses > 0, e.pins, key.block, &e});
  }
  std::sort(pinned.begin(), pinned.end(),
            [](const Pinned& a, const Pinned& b) { return std::tie(a.in_use, a.pins) < std::tie(b.in_use, b.pins); });
  for (const Pinned& p : pinned) {
    if (resident_ <= budget_) break;
    p.entry->residency = Residency::kAbsent;  // pinned still: the entry stays
    p.entry->release_after_uses = p.in_use;
    resident_ -= p.entry->bytes;
    releases->push_back({p.entry->reader, p.block * options_.block_bytes, p.entry->bytes});
    ++evictions_;
    if (metrics_) metrics_->cache_evictions.Increment();
  }
}

void BlockCache::State::Govern() {
  if (options_.memory_budget_bytes == 0) return;
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  int64_t last = last_govern_.load(std::memory_order_relaxed);
  constexpr int64_t kEvery = std::chrono::nanoseconds(std::chrono::milliseconds(1)).count();
  constexpr uint64_t kReserveBlocks = 4;
  constexpr int64_t kRestWindow = std::chrono::nanoseconds(std::chrono::seconds(1)).count();
  if (now - last < kEvery || !last_govern_.compare_exchange_strong(last, now)) return;
  const Result<uint64_t> rss = ProcessResidentBytes();
  if (!rss.ok()) return;  // no /proc: budget_bytes alone bounds the cache
  std::vector<Range> releases;
  uint64_t rest = 0, budget = 0;
  {
    MutexLock lock(&mu_);
    const uint64_t loaded = resident_ - loading_;
    rest = rss.value() > loaded ? rss.value() - loaded : 0;
    // The rest swings with the batches in flight: plan for the most it held
    // in this window and the one before, and kReserveBlocks more, for what
    // it grows by before the next reading (longer when the machine's cores
    // are busy) and for blocks being read when it does, which leave only
    // once their uses end (one per stream reading at that moment).
    const int64_t window = now / kRestWindow;
    if (window != rest_window_) {
      rest_before_ = window == rest_window_ + 1 ? rest_now_ : 0;
      rest_now_ = 0;
      rest_window_ = window;
    }
    rest_now_ = std::max(rest_now_, rest);
    const uint64_t reserved = std::max(rest_now_, rest_before_) + kReserveBlocks * options_.block_bytes;
    const uint64_t left = options_.memory_budget_bytes > reserved ? options_.memory_budget_bytes - reserved : 0;
    budget_ = std::min(options_.budget_bytes, left);
    budget = budget_;
    Shed(&releases);
    Publish();
  }
  ReleaseAll(releases);
  constexpr int64_t kWarnEvery = std::chrono::nanoseconds(std::chrono::minutes(1)).count();
  int64_t warned = last_warning_.load(std::memory_order_relaxed);
  if (budget < options_.block_bytes && now - warned >= kWarnEvery &&
      last_warning_.compare_exchange_strong(warned, now)) {
    spdlog::warn(
        "memory budget {}: the server holds {} besides its block cache, which leaves the cache {}; "
        "streams read records with pread (raise memory_budget)",
        FormatBytes(options_.memory_budget_bytes), FormatBytes(rest), FormatBytes(budget));
  }
}

}  // namespace strata
