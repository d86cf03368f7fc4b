#include "server/block_cache.h"

#include <gtest/gtest.h>

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <random>
#include <thread>

#include "tests/support/smaps.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using testing::TempDir;

// Blocks as large as the largest page-cache folio (see BlockCacheOptions).
constexpr uint64_t kBlock = 2 << 20;
constexpr uint64_t kRecords = 192;
constexpr size_t kPayload = 256 << 10;  // about 8 records a block, 48 MiB in all

std::shared_ptr<const ShardReader> WriteShard(const std::string& path) {
  auto writer = ShardWriter::Create(path, ShardIdentity{"ds", 1, 0, 0});
  EXPECT_TRUE(writer.ok());
  for (uint64_t i = 0; i < kRecords; ++i) {
    v1::RecordHeader h;
    h.set_id(i);
    h.add_field_names("x");
    h.add_field_sizes(kPayload);
    const std::string payload(kPayload, static_cast<char>('a' + i % 26));
    const std::string_view field = payload;
    EXPECT_TRUE((*writer)->Append(h, std::span<const std::string_view>(&field, 1)).ok());
  }
  EXPECT_TRUE((*writer)->Finish().ok());
  auto reader = ShardReader::Open(path);
  EXPECT_TRUE(reader.ok());
  return std::shared_ptr<const ShardReader>(std::move(reader).value());
}

// Bytes of `path` mapped into this process now.
uint64_t MappedBytes(const std::string& path) { return testing::Mapped(path).rss_bytes; }

// The blocks of records [first, first + n).
std::vector<BlockCache::BlockRef> BlocksOf(const BlockCache& cache, const std::shared_ptr<const ShardReader>& r,
                                           std::vector<uint64_t> records) {
  std::vector<BlockCache::BlockRef> out;
  for (uint64_t i : records) {
    const auto [begin, end] = r->RecordRange(i);
    cache.AddRange(r, begin, end, &out);
  }
  BlockCache::Dedupe(&out);
  return out;
}

void WaitForReadAhead(const BlockCache& cache, uint64_t blocks) {
  for (int i = 0; i < 500; ++i) {
    if (cache.stats().read_ahead_blocks >= blocks) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the last task marks its block resident
}

class BlockCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Join("000000.shard");
    reader_ = WriteShard(path_);
  }
  TempDir dir_;
  std::string path_;
  std::shared_ptr<const ShardReader> reader_;
  boost::asio::thread_pool pool_{2};
};

TEST_F(BlockCacheTest, RangesMapToAlignedBlocksAndDedupe) {
  BlockCache cache(BlockCacheOptions{64 * kBlock, kBlock}, &pool_, nullptr);
  std::vector<BlockCache::BlockRef> out;
  cache.AddRange(reader_, kBlock - 1, kBlock + 1, &out);  // straddles blocks 0 and 1
  cache.AddRange(reader_, 3 * kBlock, 4 * kBlock, &out);  // exactly block 3
  cache.AddRange(reader_, 10, 10, &out);                  // empty
  cache.AddRange(reader_, 5, 6, &out);                    // block 0 again
  BlockCache::Dedupe(&out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].block, 0u);
  EXPECT_EQ(out[0].use_bytes, 2u);  // one byte from each of two ranges
  EXPECT_EQ(out[1].block, 1u);
  EXPECT_EQ(out[1].use_bytes, 1u);
  EXPECT_EQ(out[2].block, 3u);
  EXPECT_EQ(out[2].use_bytes, kBlock);
}

TEST_F(BlockCacheTest, ReadAheadMapsPinnedBlocksAndUsesAreHits) {
  BlockCache cache(BlockCacheOptions{64 * kBlock, kBlock}, &pool_, nullptr);
  ASSERT_LE(MappedBytes(path_), 2 * kBlock);  // the header's and the footer's pages
  auto blocks = BlocksOf(cache, reader_, {1, 2, 3, 40, 41, 80});  // blocks 0, 5 and 10
  ASSERT_EQ(blocks.size(), 3u);
  cache.Pin(blocks);
  WaitForReadAhead(cache, 3);
  EXPECT_GE(MappedBytes(path_), 3 * kBlock);
  EXPECT_EQ(cache.stats().resident_bytes, 3 * kBlock);
  EXPECT_EQ(cache.stats().pinned_blocks, 3u);

  std::vector<bool> mapped;
  cache.Hold(blocks, &mapped).reset();  // the use is over
  EXPECT_EQ(mapped, std::vector<bool>(3, true));
  const BlockCache::Stats s = cache.stats();
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.misses, 0u);
  EXPECT_EQ(s.pinned_blocks, 0u);
  EXPECT_EQ(s.resident_blocks, 3u);  // kept: they fit
}

// A stream of random reads through the cache, pinned a few steps ahead, with a
// budget far below the file: what is mapped stays within the budget, and what
// is read is what was written.
TEST_F(BlockCacheTest, MappedBytesStayWithinTheBudget) {
  constexpr uint64_t kBudget = 4 * kBlock;  // 8 MiB of a 48 MiB file
  BlockCache cache(BlockCacheOptions{kBudget, kBlock}, &pool_, nullptr);
  std::mt19937_64 rng(3);
  constexpr int kAhead = 2, kSteps = 200, kBatch = 2;
  std::vector<std::vector<uint64_t>> steps(kSteps);
  for (auto& s : steps) {
    for (int i = 0; i < kBatch; ++i) s.push_back(rng() % kRecords);
  }
  std::vector<std::vector<BlockCache::BlockRef>> pinned(kSteps);
  uint64_t peak = 0, copied = 0;
  for (int step = 0; step < kSteps; ++step) {
    for (int ahead = step; ahead <= std::min(kSteps - 1, step + kAhead); ++ahead) {
      if (!pinned[ahead].empty()) continue;
      pinned[ahead] = BlocksOf(cache, reader_, steps[ahead]);
      cache.Pin(pinned[ahead], /*read_ahead=*/ahead > step);
    }
    const std::vector<BlockCache::BlockRef> blocks = pinned[step];
    std::vector<bool> mapped;
    std::shared_ptr<const void> held = cache.Hold(std::move(pinned[step]), &mapped);
    for (uint64_t i : steps[step]) {
      // As BatchStream does: through the mapping only if all its blocks are admitted.
      std::vector<BlockCache::BlockRef> own;
      const auto [begin, end] = reader_->RecordRange(i);
      cache.AddRange(reader_, begin, end, &own);
      bool all = true;
      for (const auto& b : own) {
        for (size_t k = 0; k < blocks.size(); ++k) {
          if (blocks[k].block == b.block) all = all && mapped[k];
        }
      }
      RecordView view;
      std::string copy;
      ASSERT_TRUE((all ? reader_->Read(i, &view) : reader_->ReadCopy(i, &copy, &view)).ok());
      ASSERT_EQ(view.payload, std::string(kPayload, static_cast<char>('a' + i % 26)));
      copied += all ? 0 : 1;
    }
    peak = std::max(peak, MappedBytes(path_));
    held.reset();
    ASSERT_LE(cache.stats().resident_bytes, kBudget);
  }
  pool_.join();
  const BlockCache::Stats s = cache.stats();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_GT(s.hits, 0u);
  EXPECT_GT(copied, 0u);
  EXPECT_EQ(s.pinned_blocks, 0u);
  // The budget and the header's and footer's pages, which the cache does not
  // manage. Without the cache, nearly the whole file ends up mapped.
  const uint64_t slack = 2 * kBlock;
  static_assert(kBudget + 2 * kBlock < kRecords * kPayload / 2);
  EXPECT_LE(MappedBytes(path_), kBudget + slack);
  EXPECT_LE(peak, kBudget + slack);
}

// Pins are made in step order, so a block pinned later is needed later: it is
// not read ahead at the expense of one pinned earlier, and unpinned blocks
// go first.
TEST_F(BlockCacheTest, EvictionFollowsThePlan) {
  BlockCache cache(BlockCacheOptions{2 * kBlock, kBlock}, &pool_, nullptr);
  auto a = BlocksOf(cache, reader_, {0});    // block 0
  auto b = BlocksOf(cache, reader_, {8});    // block 1
  auto c = BlocksOf(cache, reader_, {16});   // block 2
  cache.Pin(a);
  cache.Pin(b);
  cache.Pin(c);  // needed after a and b, which fill the budget: left out
  WaitForReadAhead(cache, 2);
  EXPECT_EQ(cache.stats().read_ahead_blocks, 2u);
  EXPECT_EQ(cache.stats().resident_bytes, 2 * kBlock);

  cache.Hold(a).reset();  // a used: no step needs it now, so it is the one to go
  auto d = BlocksOf(cache, reader_, {24});  // block 3
  cache.Pin(d);
  WaitForReadAhead(cache, 3);
  BlockCache::Stats s = cache.stats();
  EXPECT_EQ(s.read_ahead_blocks, 3u);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.resident_bytes, 2 * kBlock);

  std::vector<bool> mapped;
  cache.Hold(c, &mapped).reset();  // c was never read ahead: a miss, and it does not fit beside b and d
  ASSERT_EQ(mapped.size(), 1u);
  EXPECT_FALSE(mapped[0]);  // so the stream reads it around the mapping
  s = cache.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.resident_bytes, 2 * kBlock);
  cache.Hold(b).reset();
  cache.Hold(d).reset();
  s = cache.stats();
  EXPECT_EQ(s.hits, 3u);  // a, b and d
  EXPECT_EQ(s.pinned_blocks, 0u);
}

// Small records scattered over many blocks are not worth 2 MiB each: they are
// not read ahead at the cost of evictions, and take blocks in only while the
// budget has room.
TEST_F(BlockCacheTest, SparseUsesDoNotEvict) {
  BlockCache cache(BlockCacheOptions{2 * kBlock, kBlock}, &pool_, nullptr);
  std::vector<BlockCache::BlockRef> sparse;
  cache.AddRange(reader_, 0 * kBlock + 100, 0 * kBlock + 200, &sparse);
  cache.AddRange(reader_, 1 * kBlock + 100, 1 * kBlock + 200, &sparse);
  cache.AddRange(reader_, 2 * kBlock + 100, 2 * kBlock + 200, &sparse);
  BlockCache::Dedupe(&sparse);
  cache.Pin(sparse);
  EXPECT_EQ(cache.stats().read_ahead_blocks, 0u);
  std::vector<bool> mapped;
  cache.Hold(sparse, &mapped).reset();
  EXPECT_EQ(mapped, (std::vector<bool>{true, true, false}));  // two fit, the third is read around
  const BlockCache::Stats s = cache.stats();
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.evictions, 0u);
  EXPECT_EQ(s.resident_bytes, 2 * kBlock);
}

TEST_F(BlockCacheTest, ZeroBudgetDisablesTheCache) {
  BlockCache cache(BlockCacheOptions{0, kBlock}, &pool_, nullptr);
  auto blocks = BlocksOf(cache, reader_, {0, 200});
  cache.Pin(blocks);
  cache.Hold(blocks).reset();
  const BlockCache::Stats s = cache.stats();
  EXPECT_EQ(s.read_ahead_blocks, 0u);
  EXPECT_EQ(s.resident_bytes, 0u);
  EXPECT_EQ(s.hits + s.misses, 0u);
}

}  // namespace
}  // namespace strata
