#include "server/storage/block_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <random>

#include "server/storage/process_memory.h"
#include "tests/server/storage/block_cache_test_util.h"

namespace strata {
namespace {

TEST_F(BlockCacheTest, ReadAheadMapsPinnedBlocksAndUsesAreHits) {
  BlockCache cache(BlockCacheOptions{64 * kBlock, kBlock}, &pool_, nullptr);
  ASSERT_LE(MappedBytes(path_), 2 * kBlock);                      // the header's and the footer's pages
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

// A stream of `steps` random steps read through the cache, each pinned
// kAhead steps before it is served, as BatchStream does: records in admitted
// blocks through the mapping, the others with pread. Checks every payload;
// calls after_step once each step's use has ended. Returns the records copied.
uint64_t StreamRandomSteps(BlockCache& cache, const std::shared_ptr<const ShardReader>& reader, int steps,
                           uint64_t seed, const std::function<void()>& after_step) {
  std::mt19937_64 rng(seed);
  constexpr int kAhead = 2, kBatch = 2;
  std::vector<std::vector<uint64_t>> records(steps);
  for (auto& s : records) {
    for (int i = 0; i < kBatch; ++i) s.push_back(rng() % kRecords);
  }
  std::vector<std::vector<BlockCache::BlockRef>> pinned(steps);
  uint64_t copied = 0;
  for (int step = 0; step < steps; ++step) {
    for (int ahead = step; ahead <= std::min(steps - 1, step + kAhead); ++ahead) {
      if (!pinned[ahead].empty()) continue;
      pinned[ahead] = BlocksOf(cache, reader, records[ahead]);
      cache.Pin(pinned[ahead], /*read_ahead=*/ahead > step);
    }
    const std::vector<BlockCache::BlockRef> blocks = pinned[step];
    std::vector<bool> mapped;
    std::shared_ptr<const void> held = cache.Hold(std::move(pinned[step]), &mapped);
    for (uint64_t i : records[step]) {
      // Through the mapping only if all its blocks are admitted.
      BlockCache::StepBlocks record(cache.options().block_bytes);
      const auto [begin, end] = reader->RecordRange(i);
      record.Add(reader, begin, end);
      const std::vector<BlockCache::BlockRef> own = record.Take();
      bool all = true;
      for (const auto& b : own) {
        for (size_t k = 0; k < blocks.size(); ++k) {
          if (blocks[k].block == b.block) all = all && mapped[k];
        }
      }
      RecordView view;
      std::string copy;
      EXPECT_TRUE((all ? reader->Read(i, &view) : reader->ReadCopy(i, &copy, &view)).ok());
      EXPECT_EQ(view.payload, std::string(kPayload, static_cast<char>('a' + i % 26)));
      copied += all ? 0 : 1;
    }
    held.reset();
    after_step();
  }
  return copied;
}

// A stream of random reads through the cache, pinned a few steps ahead, with a
// budget far below the file: what is mapped stays within the budget, and what
// is read is what was written.
TEST_F(BlockCacheTest, MappedBytesStayWithinTheBudget) {
  constexpr uint64_t kBudget = 4 * kBlock;  // 8 MiB of a 48 MiB file
  BlockCache cache(BlockCacheOptions{kBudget, kBlock}, &pool_, nullptr);
  uint64_t peak = 0;
  const uint64_t copied = StreamRandomSteps(cache, reader_, 200, 3, [&] {
    peak = std::max(peak, MappedBytes(path_));
    ASSERT_LE(cache.stats().resident_bytes, kBudget);
  });
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

// Anonymous memory the process holds while it lives: mapped and touched
// directly, so that it adds to the resident set however malloc would reuse
// freed memory.
class Ballast {
 public:
  explicit Ballast(size_t bytes) : bytes_(bytes) {
    at_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(at_, MAP_FAILED);
    if (at_ != MAP_FAILED) std::memset(at_, 1, bytes);
  }
  ~Ballast() {
    if (at_ != MAP_FAILED) munmap(at_, bytes_);
  }

 private:
  size_t bytes_;
  void* at_;
};

uint64_t ResidentNow() {
  const Result<uint64_t> rss = ProcessResidentBytes();
  EXPECT_TRUE(rss.ok()) << rss.status().ToString();
  return rss.ok() ? rss.value() : 0;
}

// With a memory budget the cache holds what the rest of the process leaves:
// the process stays within the budget, and when the rest grows (here memory
// standing for more streams' buffers) the cache shrinks; when the rest alone
// fills the budget, records are all read with pread, still intact.
TEST_F(BlockCacheTest, MemoryBudgetKeepsTheWholeProcessWithinIt) {
  const uint64_t budget = ResidentNow() + 8 * kBlock;  // 8 blocks: about 4 for the cache beside 4 of reserve
  BlockCache cache(BlockCacheOptions{64 * kBlock, kBlock, budget}, &pool_, nullptr);
  // The process's peak, from the 4th step on: blocks pinned when the rest
  // grew leave only once their steps are served (2 steps ahead). The slack is
  // the test's own allocations and what changes between two readings.
  const uint64_t slack = 2 * kBlock;
  uint64_t peak = 0;
  int step = 0;
  auto watch = [&] {
    if (++step > 3) peak = std::max(peak, ResidentNow());
  };
  StreamRandomSteps(cache, reader_, 150, 5, watch);
  BlockCache::Stats s = cache.stats();
  EXPECT_GT(s.evictions, 0u) << "the memory budget, not the 64 blocks of budget_bytes, bounds the cache";
  EXPECT_LT(s.budget_bytes, 12 * kBlock);
  EXPECT_LE(s.resident_bytes, s.budget_bytes);
  EXPECT_LE(peak, budget + slack);

  // The rest grows by 4 blocks (as much as the cache would hold beside it):
  // the cache gives them up.
  Ballast more(4 * kBlock);
  peak = 0;
  step = 0;
  StreamRandomSteps(cache, reader_, 100, 6, watch);
  s = cache.stats();
  EXPECT_LE(s.resident_bytes, s.budget_bytes);
  EXPECT_LE(peak, budget + slack);

  // The rest alone is over the budget: nothing is mapped for streams.
  Ballast all(10 * kBlock);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the next pin looks again
  const uint64_t copied = StreamRandomSteps(cache, reader_, 50, 7, [] {});
  pool_.join();
  s = cache.stats();
  EXPECT_EQ(s.budget_bytes, 0u);
  EXPECT_EQ(copied, 100u) << "every record of the 50 steps";
  EXPECT_EQ(s.resident_bytes, 0u);
}

// Small records spread over every block keep every block pinned by some
// stream's coming steps, and with shuffled steps nearly every block is read
// by some batch waiting for the socket. When the memory budget shrinks then,
// the cache sheds pinned blocks that no use is reading through the mapping
// (their uses read with pread), then blocks being read: the use reads on
// through the mapping, and the pages it faults in again go when it ends.
TEST_F(BlockCacheTest, ShrinkingBudgetShedsPinnedBlocksEvenWhileRead) {
  const uint64_t mapped_before = MappedBytes(path_);
  const uint64_t budget = ResidentNow() + 10 * kBlock;  // about 6 blocks for the cache beside 4 of reserve
  BlockCache cache(BlockCacheOptions{64 * kBlock, kBlock, budget}, &pool_, nullptr);
  auto coming = BlocksOf(cache, reader_, {0, 8, 16, 24});  // blocks 0 to 3, pinned for a coming step
  cache.Pin(coming);
  WaitForReadAhead(cache, 4);
  ASSERT_EQ(cache.stats().resident_bytes, 4 * kBlock);
  auto now = BlocksOf(cache, reader_, {0});  // block 0, being read
  cache.Pin(now);
  std::vector<bool> mapped;
  std::shared_ptr<const void> held = cache.Hold(now, &mapped);
  ASSERT_EQ(mapped, std::vector<bool>{true});

  Ballast rest(10 * kBlock);  // the rest alone is over the budget now
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  cache.Pin(BlocksOf(cache, reader_, {40}));  // any pin looks at the budget again
  BlockCache::Stats s = cache.stats();
  EXPECT_EQ(s.budget_bytes, 0u);
  EXPECT_EQ(s.resident_bytes, 0u) << "blocks 1 to 3 shed, then block 0 while it is read";
  EXPECT_EQ(s.evictions, 4u);
  EXPECT_LE(MappedBytes(path_), mapped_before);
  RecordView view;
  ASSERT_TRUE(reader_->Read(0, &view).ok());  // the use goes on through the mapping
  EXPECT_EQ(view.payload, std::string(kPayload, 'a'));
  EXPECT_GT(MappedBytes(path_), mapped_before) << "its pages fault in again";

  held.reset();  // its use ends: what it mapped goes
  s = cache.stats();
  EXPECT_EQ(s.resident_bytes, 0u);
  EXPECT_EQ(s.evictions, 4u);
  EXPECT_LE(MappedBytes(path_), mapped_before);
  cache.Hold(coming, &mapped).reset();  // the coming step, served around the mapping
  EXPECT_EQ(mapped, std::vector<bool>(4, false));
  EXPECT_LE(MappedBytes(path_), mapped_before);
}

// Pins are made in step order, so a block pinned later is needed later: it is
// not read ahead at the expense of one pinned earlier, and unpinned blocks
// go first.
TEST_F(BlockCacheTest, EvictionFollowsThePlan) {
  BlockCache cache(BlockCacheOptions{2 * kBlock, kBlock}, &pool_, nullptr);
  auto a = BlocksOf(cache, reader_, {0});   // block 0
  auto b = BlocksOf(cache, reader_, {8});   // block 1
  auto c = BlocksOf(cache, reader_, {16});  // block 2
  cache.Pin(a);
  cache.Pin(b);
  cache.Pin(c);  // needed after a and b, which fill the budget: left out
  WaitForReadAhead(cache, 2);
  EXPECT_EQ(cache.stats().read_ahead_blocks, 2u);
  EXPECT_EQ(cache.stats().resident_bytes, 2 * kBlock);

  cache.Hold(a).reset();                    // a used: no step needs it now, so it is the one to go
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

// A use's blocks stay pinned for as long as its owner lives (gRPC slices
// point into them): other streams' pins cannot evict them, however short
// the budget, and they go only once the owner is released.
TEST_F(BlockCacheTest, HeldBlocksStayUntilTheOwnerIsReleased) {
  BlockCache cache(BlockCacheOptions{kBlock, kBlock}, &pool_, nullptr);
  auto a = BlocksOf(cache, reader_, {0});  // block 0
  auto b = BlocksOf(cache, reader_, {8});  // block 1
  cache.Pin(a);
  WaitForReadAhead(cache, 1);
  std::vector<bool> mapped;
  std::shared_ptr<const void> held = cache.Hold(a, &mapped);
  ASSERT_EQ(mapped, std::vector<bool>{true});
  EXPECT_EQ(cache.stats().pinned_blocks, 1u) << "held: still pinned";
  cache.Pin(b);  // wants the one block of budget
  cache.Hold(b, &mapped).reset();
  EXPECT_EQ(mapped, std::vector<bool>{false}) << "no room while block 0 is held";
  BlockCache::Stats s = cache.stats();
  EXPECT_EQ(s.evictions, 0u);
  EXPECT_EQ(s.resident_bytes, kBlock);
  EXPECT_GE(MappedBytes(path_), kBlock) << "block 0 is still mapped";
  held.reset();
  s = cache.stats();
  EXPECT_EQ(s.pinned_blocks, 0u);
  cache.Pin(b);
  WaitForReadAhead(cache, 2);
  cache.Hold(b, &mapped).reset();
  EXPECT_EQ(mapped, std::vector<bool>{true}) << "block 0 released, block 1 read ahead in its place";
  EXPECT_EQ(cache.stats().evictions, 1u);
}

// A reader the dataset cache let go of (its budget of open files) must be able
// to close: Forget evicts its idle blocks at once, and once it is retired its
// pinned ones leave as their uses end, instead of staying idle.
TEST_F(BlockCacheTest, ARetiredReadersBlocksLeaveSoItsFileCloses) {
  BlockCache cache(BlockCacheOptions{64 * kBlock, kBlock}, &pool_, nullptr);
  auto a = BlocksOf(cache, reader_, {0});   // block 0
  auto b = BlocksOf(cache, reader_, {40});  // block 5
  cache.Pin(a);
  cache.Pin(b);
  WaitForReadAhead(cache, 2);
  std::shared_ptr<const void> held = cache.Hold(a);
  cache.Hold(b).reset();  // idle, resident
  ASSERT_EQ(cache.stats().resident_blocks, 2u);
  cache.Forget({reader_.get()});
  BlockCache::Stats s = cache.stats();
  EXPECT_EQ(s.evictions, 1u) << "the idle block goes";
  EXPECT_EQ(s.resident_blocks, 1u) << "the held one stays while its use reads it";
  reader_->Retire();
  held.reset();
  s = cache.stats();
  EXPECT_EQ(s.evictions, 2u);
  EXPECT_EQ(s.resident_bytes, 0u);
  const std::weak_ptr<const ShardReader> file = reader_;
  a.clear();  // the caller's references
  b.clear();
  reader_.reset();
  EXPECT_TRUE(file.expired()) << "the cache still holds the reader, and its file open";
}

// Small records scattered over many blocks are not worth 2 MiB each: they are
// not read ahead at the cost of evictions, and take blocks in only while the
// budget has room.
TEST_F(BlockCacheTest, SparseUsesDoNotEvict) {
  BlockCache cache(BlockCacheOptions{2 * kBlock, kBlock}, &pool_, nullptr);
  BlockCache::StepBlocks step(kBlock);
  step.Add(reader_, 0 * kBlock + 100, 0 * kBlock + 200);
  step.Add(reader_, 1 * kBlock + 100, 1 * kBlock + 200);
  step.Add(reader_, 2 * kBlock + 100, 2 * kBlock + 200);
  std::vector<BlockCache::BlockRef> sparse = step.Take();
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

// A block that is not in the page cache is not mapped for a use it was not
// read ahead for: touching it would read the whole 2 MiB from storage for a
// few records, so those are read with pread. Once cached, it is mapped.
TEST_F(BlockCacheTest, UncachedBlocksAreNotMappedForUsesNotReadAhead) {
  BlockCache cache(BlockCacheOptions{64 * kBlock, kBlock}, &pool_, nullptr);
  reader_->Release(0, reader_->file_size());
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fdatasync(fd), 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);  // out of the page cache
  const uint64_t block5 = 5 * kBlock;
  if (reader_->Cached(block5, kBlock)) {
    close(fd);
    GTEST_SKIP() << "the kernel kept the file cached (nothing to measure here)";
  }
  auto blocks = BlocksOf(cache, reader_, {40});  // block 5
  cache.Pin(blocks, /*read_ahead=*/false);
  std::vector<bool> mapped;
  cache.Hold(blocks, &mapped).reset();
  EXPECT_EQ(mapped, std::vector<bool>{false}) << "uncached: read around the mapping";
  EXPECT_EQ(cache.stats().resident_bytes, 0u);

  std::string bytes(kBlock, '\0');
  ASSERT_EQ(pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(block5)), static_cast<ssize_t>(kBlock));
  close(fd);
  ASSERT_TRUE(reader_->Cached(block5, kBlock));
  cache.Pin(blocks, /*read_ahead=*/false);
  cache.Hold(blocks, &mapped).reset();
  EXPECT_EQ(mapped, std::vector<bool>{true}) << "cached and room to spare: mapped";
  EXPECT_EQ(cache.stats().resident_bytes, kBlock);
}

// A block the page cache holds only part of, in small folios (records read
// one by one with pread after the page cache dropped the file, as after a
// reboot), is dropped before it is read ahead, and comes back whole: one
// 2 MiB folio, mapped with one entry.
TEST_F(BlockCacheTest, ABlockInSmallFoliosIsReadAheadWhole) {
  if (auto why = testing::NoLargeFolios(); !why.empty()) GTEST_SKIP() << why;
  BlockCache cache(BlockCacheOptions{64 * kBlock, kBlock}, &pool_, nullptr);
  reader_->Release(0, reader_->file_size());
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fdatasync(fd), 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  const uint64_t block5 = 5 * kBlock;
  // A page here and there, from the block's end back (no read-ahead pattern).
  std::string page(4096, '\0');
  for (uint64_t at = block5 + kBlock - page.size(); at > block5; at -= 37 * page.size()) {
    ASSERT_EQ(pread(fd, page.data(), page.size(), static_cast<off_t>(at)), static_cast<ssize_t>(page.size()));
  }
  close(fd);
  if (reader_->Cached(block5, kBlock) || !reader_->Cached(block5 + kBlock - page.size(), 1)) {
    GTEST_SKIP() << "the kernel did not keep part of the block in its page cache";
  }
  const std::string path = std::filesystem::canonical(path_).string();
  ASSERT_EQ(testing::Mapped(path).pmd_mapped_bytes, 0u);

  auto blocks = BlocksOf(cache, reader_, {40});  // a dense use of block 5: read ahead
  cache.Pin(blocks);
  WaitForReadAhead(cache, 1);
  for (int i = 0; i < 500 && testing::Mapped(path).pmd_mapped_bytes < kBlock; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(cache.stats().refills, 1u);
  EXPECT_EQ(testing::Mapped(path).pmd_mapped_bytes, kBlock);
  std::vector<bool> mapped;
  std::shared_ptr<const void> held = cache.Hold(blocks, &mapped);
  EXPECT_EQ(mapped, std::vector<bool>{true});
  RecordView view;
  ASSERT_TRUE(reader_->Read(40, &view).ok());
  EXPECT_EQ(view.payload, std::string(kPayload, static_cast<char>('a' + 40 % 26)));
  held.reset();
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
