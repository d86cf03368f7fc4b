// BlockCache's state, shared with the tasks it queues (block_cache.cc: pins,
// uses and read-ahead; block_cache_evict.cc: what leaves the cache, by LRU
// eviction, under the memory budget, or with the reader it was read through).
// Not for other users.
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <limits>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "server/storage/block_cache.h"

namespace strata {

class BlockCache::State : public std::enable_shared_from_this<BlockCache::State> {
 public:
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

  State(BlockCacheOptions options, boost::asio::thread_pool* pool, Metrics* metrics);

  const BlockCacheOptions& options() const { return options_; }

  void Pin(std::span<const BlockRef> blocks, bool read_ahead);

  // A use of pinned blocks begins: which of them it may read through the
  // mapping. Admitted blocks stay admitted while pinned. REQUIRES: pinned.
  void Use(std::span<const BlockRef> blocks, std::vector<bool>* mapped);

  // Drops a pin of each block and, where (*mapped)[i], ends a use of block i
  // through the mapping. `mapped` may be null (no use began).
  void Unpin(std::span<const BlockRef> blocks, const std::vector<bool>* mapped);

  Stats stats();

  // Evicts the idle blocks read through `readers` (BlockCache::Forget).
  void Forget(std::vector<const ShardReader*> readers);

 private:
  // Puts `key` last in the idle list, on a spare node if there is one.
  std::list<Key>::iterator Idle(const Key& key) REQUIRES(mu_);

  // The entry of `b`, created absent. REQUIRES: mu_ held.
  Entry& Find(const BlockRef& b) REQUIRES(mu_);

  // Evicts idle blocks, least recently used first, until `bytes` more fit in
  // the budget. False if they cannot fit. REQUIRES: mu_ held.
  bool MakeRoom(uint64_t bytes, std::vector<Range>* releases) REQUIRES(mu_);

  // Evicts idle blocks, least recently used first, until at most `limit`
  // bytes are resident or none is idle. REQUIRES: mu_ held.
  void EvictIdle(uint64_t limit, std::vector<Range>* releases) REQUIRES(mu_);
  // Evicts the idle block `idle` points at; the next in the idle list.
  std::list<Key>::iterator Evict(std::list<Key>::iterator idle, std::vector<Range>* releases) REQUIRES(mu_);

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
  void Shed(std::vector<Range>* releases) REQUIRES(mu_);

  // With a memory budget: at most once a millisecond, sets the cache's budget
  // to what the rest of the process leaves of it, and sheds blocks down to it. The rest is the resident set less the
  // blocks read in (those being read in are not resident yet).
  void Govern();

  // A read-ahead finished. If its entry was evicted meanwhile, the pages it
  // mapped are not accounted for: give them back.
  // REQUIRES: the caller keeps key.reader alive.
  void Loaded(const Key& key, uint64_t load);

  // Locks a resident block that uses keep coming back to, so that its records
  // are hashed once while it stays (server/storage/verified_records.h). The
  // cache counts the whole block already: mapping all of it costs no memory
  // beyond the count, and no read where the page cache holds it in one
  // folio; a block in small ones is read again whole (Refill). If the block
  // was evicted meanwhile, nobody accounts for what the lock mapped: give it
  // back. (Evicted after the check, its release unlocks it as any block's.)
  void LockUsed(const Range& l);

  // ShardReader::Refill, counted. Before a block is read in whole (Populate,
  // Lock): where the page cache holds it in small folios, it is dropped so
  // that the read brings it in as one.
  bool Refill(const ShardReader& reader, uint64_t offset, uint64_t bytes);

  static void ReleaseAll(std::vector<Range>& releases);

  void Publish() REQUIRES(mu_);

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

}  // namespace strata
