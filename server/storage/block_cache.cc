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
#include "common/units.h"
#include "server/storage/process_memory.h"

namespace strata {

namespace {

struct Key {
  const ShardReader* reader;
  uint64_t block;
  bool operator==(const Key& o) const { return reader == o.reader && block == o.block; }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    return std::hash<const void*>()(k.reader) ^ (std::hash<uint64_t>()(k.block) * 0x9E3779B97F4A7C15ull);
  }
};

enum class Residency { kAbsent, kLoading, kResident };

struct Entry {
  std::shared_ptr<const ShardReader> reader;
  uint64_t bytes = 0;
  uint32_t pins = 0;
  uint32_t uses = 0;  // uses under way that read it through the mapping
  Residency residency = Residency::kAbsent;
  uint64_t load = 0;  // which read-ahead owns a kLoading entry
  bool idle = false;  // resident or loading with no pins: in the idle list
  // Uses through the mapping left before a block a sparse use took in is
  // locked; 0 once it is locked, or a task to lock it is queued (blocks read
  // ahead are locked as they are read in).
  uint32_t uses_before_lock = 0;
  // Shed while uses read it through the mapping (Shed): the pages they touch
  // from then on are mapped beyond the cache's count, so the range is
  // released once more when the last of those uses ends.
  bool release_after_uses = false;
  std::list<Key>::iterator idle_at;
};

// A block's range of its file, to unmap (or lock) once mu_ is released.
struct Range {
  std::shared_ptr<const ShardReader> reader;
  uint64_t offset;
  uint64_t bytes;
};

}  // namespace

class BlockCache::State : public std::enable_shared_from_this<BlockCache::State> {
 public:
  State(BlockCacheOptions options, boost::asio::thread_pool* pool, Metrics* metrics)
      : options_(options), pool_(pool), metrics_(metrics), budget_(options.budget_bytes) {
    MutexLock lock(&mu_);
    Publish();
  }

  const BlockCacheOptions& options() const { return options_; }

  void Pin(std::span<const BlockRef> blocks, bool read_ahead) {
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

  // A use of pinned blocks begins: which of them it may read through the
  // mapping. Admitted blocks stay admitted while pinned. REQUIRES: pinned.
  void Use(std::span<const BlockRef> blocks, std::vector<bool>* mapped) {
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

  // Drops a pin of each block and, where (*mapped)[i], ends a use of block i
  // through the mapping. `mapped` may be null (no use began).
  void Unpin(std::span<const BlockRef> blocks, const std::vector<bool>* mapped) {
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
        }
      }
      // Over the budget (it shrank while these were pinned): they go now.
      Shed(&releases);
      Publish();
    }
    ReleaseAll(releases);
  }

  Stats stats() {
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

 private:
  // Puts `key` last in the idle list, on a spare node if there is one.
  std::list<Key>::iterator Idle(const Key& key) REQUIRES(mu_) {
    if (spare_.empty()) return idle_.insert(idle_.end(), key);
    const auto node = spare_.begin();
    *node = key;
    idle_.splice(idle_.end(), spare_, node);
    return node;
  }

  // The entry of `b`, created absent. REQUIRES: mu_ held.
  Entry& Find(const BlockRef& b) REQUIRES(mu_) {
    auto [it, added] = entries_.try_emplace(Key{b.reader.get(), b.block});
    if (added) {
      it->second.reader = b.reader;
      const uint64_t begin = b.block * options_.block_bytes;
      const uint64_t size = b.reader->file_size();
      it->second.bytes = begin >= size ? 0 : std::min(options_.block_bytes, size - begin);
    }
    return it->second;
  }

  // Evicts idle blocks, least recently used first, until `bytes` more fit in
  // the budget. False if they cannot fit. REQUIRES: mu_ held.
  bool MakeRoom(uint64_t bytes, std::vector<Range>* releases) REQUIRES(mu_) {
    if (budget_ < bytes) return false;
    EvictIdle(budget_ - bytes, releases);
    return resident_ + bytes <= budget_;
  }

  // Evicts idle blocks, least recently used first, until at most `limit`
  // bytes are resident or none is idle. REQUIRES: mu_ held.
  void EvictIdle(uint64_t limit, std::vector<Range>* releases) REQUIRES(mu_) {
    while (resident_ > limit && !idle_.empty()) {
      const Key victim = idle_.front();
      spare_.splice(spare_.end(), idle_, idle_.begin());
      auto it = entries_.find(victim);
      Entry& e = it->second;
      resident_ -= e.bytes;
      if (e.residency == Residency::kLoading) loading_ -= e.bytes;
      releases->push_back({std::move(e.reader), victim.block * options_.block_bytes, e.bytes});
      entries_.erase(it);  // idle means unpinned
      ++evictions_;
      if (metrics_) metrics_->cache_evictions.Increment();
    }
  }

  // Brings the resident blocks within a budget that shrank: idle blocks
  // first, then, if every resident block is pinned (small records spread over
  // all blocks keep them so), pinned blocks no use is reading through the
  // mapping, the least pinned first, and last blocks that uses are reading
  // (with shuffled steps nearly every block is read by some batch waiting for
  // the socket: keeping those left the process over its budget for as long
  // as the rest stayed grown). A shed block stays pinned, absent: its coming
  // uses read it with pread unless the budget has room again. Uses still
  // reading a shed block read on through the mapping (the pages fault in
  // again from the page cache, the bytes are the same); its range is released
  // once more when the last of them ends. REQUIRES: mu_ held.
  void Shed(std::vector<Range>* releases) REQUIRES(mu_) {
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

  // With a memory budget: at most once a millisecond, sets the cache's budget
  // to what the rest of the process leaves of it, and sheds blocks down to it. The rest is the resident set less the
  // blocks read in (those being read in are not resident yet).
  void Govern() {
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

  // A read-ahead finished. If its entry was evicted meanwhile, the pages it
  // mapped are not accounted for: give them back.
  // REQUIRES: the caller keeps key.reader alive.
  void Loaded(const Key& key, uint64_t load) {
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

  // Locks a resident block that uses keep coming back to, so that its records
  // are hashed once while it stays (server/storage/verified_records.h). The
  // cache counts the whole block already: mapping all of it costs no memory
  // beyond the count, and no read where the page cache holds it in one
  // folio; a block in small ones is read again whole (Refill). If the block
  // was evicted meanwhile, nobody accounts for what the lock mapped: give it
  // back. (Evicted after the check, its release unlocks it as any block's.)
  void LockUsed(const Range& l) {
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

  // ShardReader::Refill, counted. Before a block is read in whole (Populate,
  // Lock): where the page cache holds it in small folios, it is dropped so
  // that the read brings it in as one.
  bool Refill(const ShardReader& reader, uint64_t offset, uint64_t bytes) {
    if (!reader.Refill(offset, bytes)) return false;
    ++refills_;
    if (metrics_) metrics_->cache_refilled_bytes.Increment(static_cast<double>(bytes));
    return true;
  }

  static void ReleaseAll(std::vector<Range>& releases) {
    for (const Range& r : releases) r.reader->Release(r.offset, r.bytes);
  }

  void Publish() REQUIRES(mu_) {
    if (metrics_) {
      metrics_->cache_resident_bytes.Set(static_cast<double>(resident_));
      metrics_->cache_budget_bytes.Set(static_cast<double>(budget_));
    }
  }

  const BlockCacheOptions options_;
  boost::asio::thread_pool* const pool_;
  Metrics* const metrics_;
  Mutex mu_;
  std::unordered_map<Key, Entry, KeyHash> entries_ GUARDED_BY(mu_);  // pinned or resident blocks
  std::list<Key> idle_ GUARDED_BY(mu_);                              // unpinned resident, LRU first
  std::list<Key> spare_ GUARDED_BY(mu_);   // nodes idle_ gave back, for it to take again (no allocation per unpin)
  uint64_t resident_ GUARDED_BY(mu_) = 0;  // resident or being read in
  uint64_t loading_ GUARDED_BY(mu_) = 0;   // of which being read in
  uint64_t budget_ GUARDED_BY(mu_);        // what the cache may hold now
  // Govern's peaks of the rest of the process, per window of a second.
  int64_t rest_window_ GUARDED_BY(mu_) = 0;
  uint64_t rest_now_ GUARDED_BY(mu_) = 0;
  uint64_t rest_before_ GUARDED_BY(mu_) = 0;
  uint64_t loads_started_ GUARDED_BY(mu_) = 0;
  uint64_t hits_ GUARDED_BY(mu_) = 0;
  uint64_t misses_ GUARDED_BY(mu_) = 0;
  uint64_t evictions_ GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> read_ahead_blocks_{0};
  std::atomic<uint64_t> lock_tasks_{0};  // LockUsed tasks queued
  std::atomic<uint64_t> locks_done_{0};  // ... and run
  std::atomic<uint64_t> refills_{0};     // blocks dropped to be read in again whole (Refill)
  std::atomic<int64_t> last_govern_{0};  // steady clock, ns
  std::atomic<int64_t> last_warning_{std::numeric_limits<int64_t>::min() / 2};
};

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

BlockCache::Stats BlockCache::stats() const { return state_->stats(); }

}  // namespace strata
