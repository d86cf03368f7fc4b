#include "server/storage/block_cache.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <chrono>
#include <limits>
#include <list>
#include <tuple>
#include <unordered_map>

#include "common/mutex.h"
#include "server/storage/block_cache_state.h"

namespace strata {

BlockCache::State::State(BlockCacheOptions options, boost::asio::thread_pool* pool, Metrics* metrics)
    : options_(options), pool_(pool), metrics_(metrics), budget_(options.budget_bytes) {
  MutexLock lock(&mu_);
  Publish();
}

void BlockCache::State::Pin(std::span<const BlockRef> blocks, bool read_ahead) {
  struct Load {
    std::shared_ptr<const ShardReader> reader;
    uint64_t block, bytes, load;
  };
  Govern();
  std::vector<Load> loads;
  std::vector<Range> releases;
  {
    MutexLock lock(&mu_);
    for (const BlockRef& b : blocks) {
      Entry& e = Find(b);
      ++e.pins;
      if (e.idle) {
        spare_.splice(spare_.end(), idle_, e.idle_at);
        e.idle = false;
      }
      const bool dense = BlockCache::Dense(b.use_bytes, e.bytes);
      if (read_ahead && dense && e.residency == Residency::kAbsent && MakeRoom(e.bytes, &releases)) {
        e.residency = Residency::kLoading;
        e.uses_before_lock = 0;  // Populate locks what it reads in
        e.load = ++loads_started_;
        resident_ += e.bytes;
        loading_ += e.bytes;
        loads.push_back({e.reader, b.block, e.bytes, e.load});
      }
    }
    Publish();
  }
  ReleaseAll(releases);
  for (Load& l : loads) {
    ++read_ahead_blocks_;
    if (metrics_) metrics_->read_ahead_bytes.Increment(static_cast<double>(l.bytes));
    boost::asio::post(*pool_, [self = shared_from_this(), l = std::move(l)] {
      const uint64_t offset = l.block * self->options_.block_bytes;
      const bool refilled = self->Refill(*l.reader, offset, l.bytes);
      Status s = l.reader->Populate(offset, l.bytes);
      if (!s.ok()) spdlog::warn("read-ahead: {}", s.ToString());  // the serving read reports it, if it persists
      if (refilled) l.reader->Refilled(offset, l.bytes);
      self->Loaded(Key{l.reader.get(), l.block}, l.load);
    });
  }
}

void BlockCache::State::Use(std::span<const BlockRef> blocks, std::vector<bool>* mapped) {
  std::vector<Range> releases;
  std::vector<Range> locks;  // blocks to lock
  uint64_t hits = 0, misses = 0;
  mapped->assign(blocks.size(), false);
  {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < blocks.size(); ++i) {
      auto it = entries_.find(Key{blocks[i].reader.get(), blocks[i].block});
      if (it == entries_.end()) continue;  // not pinned: a caller bug; read it without mapping
      Entry& e = it->second;
      if (e.residency != Residency::kAbsent) {
        ++hits;  // resident, or its read-ahead is under way (the read waits for it)
        (*mapped)[i] = true;
        ++e.uses;
        if (e.uses_before_lock > 0 && --e.uses_before_lock == 0) {
          locks.push_back({e.reader, it->first.block * options_.block_bytes, e.bytes});
        }
        continue;
      }
      ++misses;
      // Not read ahead: the use maps it in if the budget has room to spare
      // and the block is in the page cache, else reads around the mapping.
      // (Mapping an uncached block to read a few records reads all of it
      // from storage: after an ingest that pushed the shards out of the page
      // cache, the first batch of 256 small records read 460 MB.) The page
      // the use reads first stands for the block: the page cache holds shard
      // files in 2 MiB folios, and drops a folio whole. (Asking for all 512
      // pages of each block cost a fresh server's first stratified batch of
      // a 10M-sample set 15 ms.)
      if (resident_ + e.bytes <= budget_ && blocks[i].reader->Cached(blocks[i].use_offset, 1)) {
        e.residency = Residency::kResident;
        e.release_after_uses = false;             // counted again: released when it is evicted
        e.uses_before_lock = kLockAfterUses - 1;  // this use is the first
        resident_ += e.bytes;
        (*mapped)[i] = true;
        ++e.uses;
      }
    }
    hits_ += hits;
    misses_ += misses;
    Publish();
  }
  if (metrics_) {
    if (hits) metrics_->cache_hits.Increment(static_cast<double>(hits));
    if (misses) metrics_->cache_misses.Increment(static_cast<double>(misses));
  }
  ReleaseAll(releases);
  for (Range& l : locks) {
    ++lock_tasks_;
    boost::asio::post(*pool_, [self = shared_from_this(), l = std::move(l)] { self->LockUsed(l); });
  }
}

void BlockCache::State::Unpin(std::span<const BlockRef> blocks, const std::vector<bool>* mapped) {
  std::vector<Range> releases;
  {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < blocks.size(); ++i) {
      const BlockRef& b = blocks[i];
      auto it = entries_.find(Key{b.reader.get(), b.block});
      if (it == entries_.end() || it->second.pins == 0) continue;  // not pinned: a caller bug, ignored
      Entry& e = it->second;
      if (mapped != nullptr && (*mapped)[i] && e.uses > 0 && --e.uses == 0 && e.release_after_uses) {
        e.release_after_uses = false;  // shed while read: what the uses mapped since goes now
        releases.push_back({e.reader, b.block * options_.block_bytes, e.bytes});
      }
      if (--e.pins > 0) continue;
      if (e.residency == Residency::kAbsent) {
        entries_.erase(it);
      } else {
        e.idle_at = Idle(it->first);
        e.idle = true;
        if (e.reader->retired()) Evict(e.idle_at, &releases);  // so that its file closes
      }
    }
    // Over the budget (it shrank while these were pinned): they go now.
    Shed(&releases);
    Publish();
  }
  ReleaseAll(releases);
}

BlockCache::Stats BlockCache::State::stats() {
  MutexLock lock(&mu_);
  Stats s;
  s.resident_bytes = resident_;
  for (const auto& [key, e] : entries_) {
    if (e.residency != Residency::kAbsent) ++s.resident_blocks;
    if (e.pins > 0) ++s.pinned_blocks;
  }
  s.hits = hits_;
  s.misses = misses_;
  s.read_ahead_blocks = read_ahead_blocks_;
  s.locks_after_uses = lock_tasks_;
  s.locks_after_uses_done = locks_done_;
  s.refills = refills_;
  s.evictions = evictions_;
  s.budget_bytes = budget_;
  return s;
}

std::list<BlockCache::State::Key>::iterator BlockCache::State::Idle(const Key& key) {
  if (spare_.empty()) return idle_.insert(idle_.end(), key);
  const auto node = spare_.begin();
  *node = key;
  idle_.splice(idle_.end(), spare_, node);
  return node;
}

BlockCache::State::Entry& BlockCache::State::Find(const BlockRef& b) {
  auto [it, added] = entries_.try_emplace(Key{b.reader.get(), b.block});
  if (added) {
    it->second.reader = b.reader;
    const uint64_t begin = b.block * options_.block_bytes;
    const uint64_t size = b.reader->file_size();
    it->second.bytes = begin >= size ? 0 : std::min(options_.block_bytes, size - begin);
  }
  return it->second;
}

void BlockCache::State::Loaded(const Key& key, uint64_t load) {
  bool orphaned = false;
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.residency == Residency::kLoading && it->second.load == load) {
      it->second.residency = Residency::kResident;
      loading_ -= it->second.bytes;
      return;
    }
    // Nobody accounts for these pages now. (Loading under another load id:
    // that newer read-ahead owns them.)
    orphaned = it == entries_.end() || it->second.residency == Residency::kAbsent;
  }
  if (orphaned) key.reader->Release(key.block * options_.block_bytes, options_.block_bytes);
}

void BlockCache::State::LockUsed(const Range& l) {
  const bool refilled = Refill(*l.reader, l.offset, l.bytes);
  const bool locked = l.reader->Lock(l.offset, l.bytes);
  // Unlocked (the kernel refused), the block is not mapped yet: the uses
  // that fault it in again bring it back, and there is nothing to check.
  if (refilled && locked) l.reader->Refilled(l.offset, l.bytes);
  if (locked) {
    bool orphaned = false;
    {
      MutexLock lock(&mu_);
      auto it = entries_.find(Key{l.reader.get(), l.offset / options_.block_bytes});
      orphaned = it == entries_.end() || it->second.residency == Residency::kAbsent;
    }
    if (orphaned) l.reader->Release(l.offset, l.bytes);
  }
  ++locks_done_;
}

bool BlockCache::State::Refill(const ShardReader& reader, uint64_t offset, uint64_t bytes) {
  if (!reader.Refill(offset, bytes)) return false;
  ++refills_;
  if (metrics_) metrics_->cache_refilled_bytes.Increment(static_cast<double>(bytes));
  return true;
}

void BlockCache::State::ReleaseAll(std::vector<Range>& releases) {
  for (const Range& r : releases) r.reader->Release(r.offset, r.bytes);
}

void BlockCache::State::Publish() {
  if (metrics_) {
    metrics_->cache_resident_bytes.Set(static_cast<double>(resident_));
    metrics_->cache_budget_bytes.Set(static_cast<double>(budget_));
  }
}

BlockCache::BlockCache(BlockCacheOptions options, boost::asio::thread_pool* pool, Metrics* metrics)
    : state_(std::make_shared<State>(options, pool, metrics)) {}

BlockCache::~BlockCache() = default;

const BlockCacheOptions& BlockCache::options() const { return state_->options(); }

void BlockCache::Pin(std::span<const BlockRef> blocks, bool read_ahead) {
  if (state_->options().budget_bytes == 0 || blocks.empty()) return;
  state_->Pin(blocks, read_ahead);
}

void BlockCache::Unpin(std::span<const BlockRef> blocks) {
  if (state_->options().budget_bytes == 0 || blocks.empty()) return;
  state_->Unpin(blocks, nullptr);
}

std::shared_ptr<const void> BlockCache::Hold(std::vector<BlockRef> blocks, std::vector<bool>* mapped) {
  std::vector<bool> ignored;
  if (mapped == nullptr) mapped = &ignored;
  if (state_->options().budget_bytes == 0) {
    mapped->assign(blocks.size(), true);  // no cache: everything is read through the mapping
    return nullptr;
  }
  if (!blocks.empty()) state_->Use(blocks, mapped);
  // Built in place: a Held that was copied would unpin twice, once as the
  // temporary died (the blocks then unpinned while the use still reads them).
  class Held {
   public:
    Held(std::shared_ptr<State> state, std::vector<BlockRef> blocks, std::vector<bool> mapped)
        : state_(std::move(state)), blocks_(std::move(blocks)), mapped_(std::move(mapped)) {}
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() {
      if (!blocks_.empty()) state_->Unpin(blocks_, &mapped_);
    }

   private:
    std::shared_ptr<State> state_;
    std::vector<BlockRef> blocks_;
    std::vector<bool> mapped_;  // the uses through the mapping it ends
  };
  return std::make_shared<const Held>(state_, std::move(blocks), *mapped);
}

void BlockCache::Forget(std::vector<const ShardReader*> readers) {
  if (state_->options().budget_bytes == 0 || readers.empty()) return;
  state_->Forget(std::move(readers));
}

BlockCache::Stats BlockCache::stats() const { return state_->stats(); }

}  // namespace strata
