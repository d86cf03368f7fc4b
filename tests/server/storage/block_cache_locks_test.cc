// Which blocks the cache locks in memory, so that the records read from them
// are hashed once while they stay (server/storage/verified_records.h): those
// it reads ahead, and those sparse uses keep coming back to.
#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <future>

#include "tests/server/storage/block_cache_test_util.h"

namespace strata {
namespace {

bool MayLock(const std::shared_ptr<const ShardReader>& reader) {
  if (!reader->Lock(kBlock * 20, kBlock)) return false;
  reader->Release(kBlock * 20, kBlock);
  return true;
}

// Uses of `blocks`, each pinned, held and let go, as a stream's steps do.
void UseTimes(BlockCache& cache, const std::vector<BlockCache::BlockRef>& blocks, uint32_t times,
              std::vector<bool>* mapped) {
  for (uint32_t i = 0; i < times; ++i) {
    cache.Pin(blocks, /*read_ahead=*/false);
    cache.Hold(blocks, mapped).reset();
  }
}

// A use of 100 bytes of block 5: sparse.
std::vector<BlockCache::BlockRef> SparseUseOfBlock5(const std::shared_ptr<const ShardReader>& reader) {
  BlockCache::StepBlocks step(kBlock);
  step.Add(reader, 5 * kBlock + 100, 5 * kBlock + 200);
  return step.Take();
}

void WaitForLocks(const BlockCache& cache, uint64_t locks) {
  for (int i = 0; i < 500 && cache.stats().locks_after_uses_done < locks; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Blocks read ahead are locked in memory (so their records are hashed once
// while they stay: server/storage/verified_records.h) and unlocked when
// evicted; a block a sparse use takes in is not locked by that use.
TEST_F(BlockCacheTest, BlocksReadAheadAreLockedUntilEvicted) {
  BlockCache cache(BlockCacheOptions{2 * kBlock, kBlock}, &pool_, nullptr);
  if (!MayLock(reader_)) GTEST_SKIP() << "this process may not lock memory (RLIMIT_MEMLOCK)";
  auto a = BlocksOf(cache, reader_, {0});  // block 0, read ahead
  BlockCache::StepBlocks step(kBlock);     // block 5, used sparsely: taken in by its use, not read ahead
  step.Add(reader_, 5 * kBlock, 5 * kBlock + 10);
  std::vector<BlockCache::BlockRef> b = step.Take();
  cache.Pin(a);
  cache.Pin(b);
  WaitForReadAhead(cache, 1);
  std::vector<bool> mapped;
  cache.Hold(a, &mapped).reset();
  cache.Hold(b, &mapped).reset();
  ASSERT_EQ(mapped, std::vector<bool>{true});
  EXPECT_EQ(cache.stats().read_ahead_blocks, 1u);
  EXPECT_TRUE(reader_->Locked(0, kBlock));
  EXPECT_FALSE(reader_->Locked(5 * kBlock, kBlock));
  auto c = BlocksOf(cache, reader_, {80});  // block 10: the budget's two blocks are full
  cache.Pin(c);
  WaitForReadAhead(cache, 2);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_FALSE(reader_->Locked(0, kBlock)) << "block 0, the least recently used, went";
  EXPECT_TRUE(reader_->Locked(10 * kBlock, kBlock));
  cache.Unpin(c);
}

// A block a sparse use took in is locked on the I/O pool once kLockAfterUses
// uses have read it through the mapping, and unlocked when it is evicted.
// Small records at random come back to every block of a set the cache holds:
// hashing each record on every read was a seventh of a 1 KiB stream's rate
// (bench/README.md).
TEST_F(BlockCacheTest, BlocksSparseUsesKeepComingBackToAreLocked) {
  if (!MayLock(reader_)) GTEST_SKIP() << "this process may not lock memory (RLIMIT_MEMLOCK)";
  BlockCache cache(BlockCacheOptions{2 * kBlock, kBlock}, &pool_, nullptr);
  const std::vector<BlockCache::BlockRef> sparse = SparseUseOfBlock5(reader_);
  std::vector<bool> mapped;
  UseTimes(cache, sparse, BlockCache::kLockAfterUses - 1, &mapped);
  EXPECT_EQ(mapped, std::vector<bool>{true});
  EXPECT_EQ(cache.stats().locks_after_uses, 0u);
  EXPECT_FALSE(reader_->Locked(5 * kBlock, kBlock)) << "not yet: a block used once or twice is not worth locking";

  UseTimes(cache, sparse, 1, &mapped);
  EXPECT_EQ(cache.stats().locks_after_uses, 1u);
  WaitForLocks(cache, 1);
  EXPECT_TRUE(reader_->Locked(5 * kBlock, kBlock));
  EXPECT_EQ(cache.stats().resident_bytes, kBlock);
  UseTimes(cache, sparse, 2 * BlockCache::kLockAfterUses, &mapped);
  EXPECT_EQ(cache.stats().locks_after_uses, 1u) << "locked once while it stays";

  // Evicted to make room for blocks read ahead: unlocked.
  auto ahead = BlocksOf(cache, reader_, {0, 80});  // blocks 0 and 10
  cache.Pin(ahead);
  WaitForReadAhead(cache, 2);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_FALSE(reader_->Locked(5 * kBlock, kBlock));
  cache.Unpin(ahead);
}

// A block evicted before its lock task runs: what the lock mapped and locked
// is given back, as nothing counts it any more.
TEST_F(BlockCacheTest, ALockThatFindsItsBlockEvictedGivesItBack) {
  if (!MayLock(reader_)) GTEST_SKIP() << "this process may not lock memory (RLIMIT_MEMLOCK)";
  BlockCache cache(BlockCacheOptions{2 * kBlock, kBlock}, &pool_, nullptr);
  const std::vector<BlockCache::BlockRef> sparse = SparseUseOfBlock5(reader_);
  std::vector<bool> mapped;
  UseTimes(cache, sparse, BlockCache::kLockAfterUses - 1, &mapped);

  // Both of the pool's threads wait, so that the lock task queues behind them.
  std::promise<void> go;
  std::shared_future<void> wait = go.get_future().share();
  for (int i = 0; i < 2; ++i) boost::asio::post(pool_, [wait] { wait.wait(); });
  UseTimes(cache, sparse, 1, &mapped);
  ASSERT_EQ(cache.stats().locks_after_uses, 1u);
  auto ahead = BlocksOf(cache, reader_, {0, 80});  // evicts block 5 as it pins
  cache.Pin(ahead);
  EXPECT_EQ(cache.stats().evictions, 1u);
  go.set_value();
  WaitForLocks(cache, 1);
  WaitForReadAhead(cache, 2);
  EXPECT_FALSE(reader_->Locked(5 * kBlock, kBlock)) << "block 5 stayed locked, and mapped, counted by nobody";
  cache.Unpin(ahead);
}

}  // namespace
}  // namespace strata
