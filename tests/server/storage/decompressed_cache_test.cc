#include "server/storage/decompressed_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace strata {
namespace {

std::shared_ptr<const std::string> Block(size_t n, char c) { return std::make_shared<const std::string>(n, c); }

TEST(DecompressedCacheTest, FindsWhatWasInserted) {
  DecompressedCache cache(16 << 20);
  EXPECT_EQ(cache.Find(1, 0), nullptr);
  auto b = Block(1000, 'a');
  cache.Insert(1, 0, b);
  EXPECT_EQ(cache.Find(1, 0), b);
  EXPECT_EQ(cache.Find(1, 1), nullptr);
  EXPECT_EQ(cache.Find(2, 0), nullptr);
  EXPECT_EQ(cache.bytes(), 1000u);
  cache.Insert(1, 0, Block(10, 'b'));  // already there: the first stays
  EXPECT_EQ(cache.Find(1, 0), b);
  EXPECT_EQ(cache.bytes(), 1000u);
}

TEST(DecompressedCacheTest, StaysWithinItsCapacityLeastRecentlyUsedFirstOut) {
  // 16 stripes of 64 KiB: a block's stripe holds at most one 40 KiB block.
  DecompressedCache cache(16 * (64 << 10));
  for (uint64_t block = 0; block < 400; ++block) cache.Insert(7, block, Block(40 << 10, 'x'));
  EXPECT_LE(cache.bytes(), size_t{16} * (64 << 10));
  EXPECT_GT(cache.bytes(), 0u);
  EXPECT_NE(cache.Find(7, 399), nullptr);  // the newest is kept
  EXPECT_EQ(cache.Find(7, 0), nullptr);    // the oldest went
  // A block larger than a stripe is not kept.
  cache.Insert(8, 0, Block(65 << 10, 'y'));
  EXPECT_EQ(cache.Find(8, 0), nullptr);
}

TEST(DecompressedCacheTest, ForgetDropsOneReadersBlocks) {
  DecompressedCache cache(16 << 20);
  for (uint64_t block = 0; block < 50; ++block) {
    cache.Insert(1, block, Block(100, 'a'));
    cache.Insert(2, block, Block(100, 'b'));
  }
  EXPECT_EQ(cache.bytes(), 10000u);
  cache.Forget(1);
  EXPECT_EQ(cache.bytes(), 5000u);
  for (uint64_t block = 0; block < 50; ++block) {
    EXPECT_EQ(cache.Find(1, block), nullptr);
    EXPECT_NE(cache.Find(2, block), nullptr);
  }
}

TEST(DecompressedCacheTest, ACapacityOfZeroKeepsNothing) {
  DecompressedCache cache(16 << 20);
  cache.Insert(1, 0, Block(100, 'a'));
  cache.SetCapacity(0);
  cache.Insert(1, 1, Block(100, 'a'));
  EXPECT_EQ(cache.Find(1, 1), nullptr);
  EXPECT_NE(cache.Find(1, 0), nullptr);  // a smaller capacity evicts as blocks come in
}

}  // namespace
}  // namespace strata
