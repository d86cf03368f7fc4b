// The node's plan-aware block cache: which parts of the mapped shard files stay
// resident in stratad's memory, within a byte budget, and reading them in
// ahead of the streams that need them.
//
// A block is an aligned range of block_bytes of one shard file. Streams know
// their future from the epoch plan (server/serve/batch_stream.h): as soon as a
// stream computes a step, read_ahead_steps before it serves it, it pins the
// step's blocks, and the cache reads the pinned blocks that are not resident
// on the I/O pool (read-ahead), so the serving path finds them mapped. Once
// the step is built the stream unpins them.
//
// Eviction follows the plan:
//  - blocks no stream has pinned, that is needed by no stream within its
//    look-ahead, go first (the least recently used of them first);
//  - a pinned block is never evicted to make room for another pinned one. Pins
//    are made in step order, so the block being pinned is the one needed
//    latest: when it does not fit, it is the one left out (Belady's choice
//    within the horizon);
//  - only dense uses (at least 1/16 of the block) are read ahead at the cost
//    of an eviction: mapping 2 MiB to serve one small record that is not
//    needed again soon costs more than reading the record. A sparse use takes
//    a block in only where the budget has room to spare and the block is in
//    the page cache (mapping an uncached block reads all of it from storage).
// When a step is built, Hold says which of its blocks are admitted (resident,
// being read in, or fitting now): those are read through the mapping, and
// large records in those the step uses densely are sent zero-copy, gRPC
// slices pointing at them (the slices keep the blocks pinned and in use until
// the bytes have left, so sparse uses copy their records instead). The others are read with pread into
// a buffer (one copy) so that they map nothing. Only admitted blocks are ever
// mapped by streams, so the shard memory streams map stays within the budget.
// Eviction unmaps a block from this process (ShardReader::Release) and leaves
// the kernel's page cache to the kernel. Blocks read ahead are locked in
// memory as they are read in (ShardReader::Populate) until they are
// released, so that a record read again from one is not hashed again
// (server/storage/verified_records.h). A block a sparse use takes in is not
// locked by that use: locking maps all of its pages, which a stream's first
// batch of a large dataset would wait for. Once kLockAfterUses uses have come
// back to it while it stays, the I/O pool locks it (its pages are in the page
// cache, and the cache counts the whole block already): small records at
// random come back to every block of a set the cache holds, and hashing each
// of them on every read cost a 1 KiB stream from one node about a seventh of
// its rate (bench/README.md).
//
// A block read in whole (read ahead, or locked after uses) that the page
// cache holds in small folios is dropped from it first (ShardReader::Refill),
// so that the read brings it back as one 2 MiB folio, mapped with one entry:
// records read one by one after the page cache dropped a file (a reboot) lie
// in 4 KiB folios, and a node serving 1 KiB records from them spent about a
// sixth more CPU (docs/performance.md).
//
// With a memory budget for the whole process (memory_budget_bytes), the
// cache's budget is what the rest of the process leaves of it: the cache
// reads the process's resident bytes (server/storage/process_memory.h) at most every
// millisecond as streams pin blocks, counts everything but its own loaded
// blocks as the rest (code, heap, shard footers), and holds at most the
// budget less the most the rest held in the last second or two and four
// blocks in reserve, never more than budget_bytes. When the rest grows, idle
// blocks are evicted at once; if that is not enough (small records spread
// over all blocks keep every block pinned), so are pinned blocks that no use
// is reading through the mapping, whose coming uses then read with pread, and
// then blocks being read (with shuffled steps nearly every block is read by
// some batch waiting for the socket): their uses read on through the mapping,
// the pages fault in again from the page cache, and the block's range is
// released once more when the last of those uses ends. When the rest alone exceeds the
// budget, the cache holds nothing and every record is read with pread (and
// the batches in flight then hold copies: leave room for them).
//
// Thread-safety: thread-safe. Read-ahead tasks keep what they touch alive, so
// the cache may be destroyed while some are still queued.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "server/base/metrics.h"
#include "server/storage/shard_format.h"

namespace strata {

struct BlockCacheOptions {
  uint64_t budget_bytes = 1ull << 30;  // resident shard bytes (stratad: cache_bytes); 0 disables caching and read-ahead
  // A multiple of the page size. Kernels with large page-cache folios (ext4
  // and xfs since 6.x) map a whole folio, up to 2 MiB and aligned to its size,
  // when one of its pages is touched; a block must hold whole folios for its
  // release to drop everything a read of it mapped, hence 2 MiB.
  uint64_t block_bytes = 2ull << 20;
  // The whole process's resident memory the cache keeps it within, by
  // holding less (stratad: memory_budget). 0: none; the cache holds up to
  // budget_bytes whatever else the process holds.
  uint64_t memory_budget_bytes = 0;
};

class BlockCache {
 public:
  // One block of one shard file. The reader keeps the mapping alive.
  struct BlockRef {
    std::shared_ptr<const ShardReader> reader;
    uint64_t block = 0;
    uint64_t use_bytes = 0;   // how much of it the use reads
    uint64_t use_offset = 0;  // the first byte of the file the use reads in it
  };

  // `pool` runs the read-ahead; `metrics` may be null. Both must outlive the
  // cache's use (queued tasks hold only the cache's own state).
  BlockCache(BlockCacheOptions options, boost::asio::thread_pool* pool, Metrics* metrics);
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  const BlockCacheOptions& options() const;

  // Collects a step's blocks as its records' ranges arrive: each block once,
  // in the order first met, with the bytes the step reads of it and the first
  // of them. A step of small records at random lands in about as many blocks
  // as it has records; collecting them into a vector and sorting it to
  // dedupe was 7% of a lane's build (bench/README.md). Not thread-safe.
  class StepBlocks {
   public:
    explicit StepBlocks(uint64_t block_bytes) : block_bytes_(block_bytes) {}
    // Adds the blocks holding bytes [begin, end) of `reader`'s file.
    void Add(const std::shared_ptr<const ShardReader>& reader, uint64_t begin, uint64_t end);
    // The blocks added since the last Take, each once; leaves none.
    std::vector<BlockRef> Take();

   private:
    struct Slot {
      const ShardReader* reader = nullptr;
      uint64_t block = 0;
      uint32_t index = 0;  // into blocks_
      uint32_t take = 0;   // the slot is free unless this is takes_
    };
    size_t SlotOf(const ShardReader* reader, uint64_t block) const;  // its slot, or the free one it would take
    void Grow();

    uint64_t block_bytes_;
    std::vector<Slot> slots_;  // open addressing, a power of two, at most half full
    uint32_t takes_ = 1;       // Take frees every slot by counting on
    std::vector<BlockRef> blocks_;
  };

  // Whether a use of `use_bytes` of a block of `block_bytes` is dense: at
  // least 1/16 of it. Only dense uses are read ahead at the cost of an
  // eviction, and only records in blocks a step uses densely are sent
  // straight from the mapping (server/serve/batch_stream.h).
  static bool Dense(uint64_t use_bytes, uint64_t block_bytes) { return use_bytes * 16 >= block_bytes; }

  // Pins each block for one coming use and, with read_ahead, reads in on the
  // pool those that are not resident and fit in the budget. `blocks` must
  // name each block once (as StepBlocks gives them).
  void Pin(std::span<const BlockRef> blocks, bool read_ahead = true);
  // Drops one pin of each block: a use it was pinned for will not happen.
  // `blocks` must be what was pinned.
  void Unpin(std::span<const BlockRef> blocks);

  // Begins the use `blocks` were pinned for (deduplicated, as Pin pinned
  // them): sets (*mapped)[i] to whether block i may be read through the
  // mapping (else read it with ShardReader::ReadCopy), counts hits and misses,
  // and returns an owner that unpins the blocks when its last copy is
  // released: hand it to whatever still reads them, such as the gRPC slices
  // that point into them, so they stay resident until the bytes have left.
  std::shared_ptr<const void> Hold(std::vector<BlockRef> blocks, std::vector<bool>* mapped = nullptr);

  // Evicts the blocks read through `readers` that no use has pinned, so that
  // their readers (and files) can close: the dataset cache let go of them
  // (server/storage/dataset_cache.h, ReaderBudget). Pinned blocks stay until
  // their uses end, and are evicted as any block is.
  void Forget(std::vector<const ShardReader*> readers);

  struct Stats {
    uint64_t resident_bytes = 0;  // blocks resident or being read in
    uint64_t resident_blocks = 0;
    uint64_t pinned_blocks = 0;
    uint64_t hits = 0;    // uses that found the block resident or being read in
    uint64_t misses = 0;  // uses that did not (read-ahead left it out)
    uint64_t read_ahead_blocks = 0;
    // Blocks taken in by sparse uses, locked once kLockAfterUses uses came
    // back to them: tasks queued, and of them run.
    uint64_t locks_after_uses = 0;
    uint64_t locks_after_uses_done = 0;
    // Blocks the page cache held in small folios, dropped before being read
    // in (read ahead, or locked) so that they came back whole
    // (ShardReader::Refill; strata_cache_refilled_bytes_total).
    uint64_t refills = 0;
    uint64_t evictions = 0;
    uint64_t budget_bytes = 0;  // what the cache may hold now (see memory_budget_bytes)
  };
  Stats stats() const;

  // Uses through the mapping of a block a sparse use took in (resident, not
  // read ahead) after which the cache locks it on the I/O pool.
  static constexpr uint32_t kLockAfterUses = 4;
  static_assert(kLockAfterUses > 1, "a first use never waits for a lock");

 private:
  class State;
  std::shared_ptr<State> state_;
};

}  // namespace strata
