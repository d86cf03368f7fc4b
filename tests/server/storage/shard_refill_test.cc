// ShardReader::Refill against the kernel's page cache: a shard read record by
// record after the page cache dropped it lies in small folios, which a
// mapping maps page by page; refilled, each whole 2 MiB block of it is read
// again into one folio and mapped with one entry (FilePmdMapped, from
// /proc/self/smaps: not the reader's own way of telling). Blocks already
// whole are left alone, and every record reads back intact.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "server/storage/aligned_writer.h"
#include "server/storage/shard_format.h"
#include "tests/server/storage/shard_test_util.h"
#include "tests/support/smaps.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using testing::TempDir;
constexpr uint64_t kBlock = AlignedFileWriter::kChunkBytes;  // 2 MiB
constexpr uint64_t kRecords = 9000;                          // about 9 MiB: four whole blocks
constexpr size_t kPayload = 1000;

std::string Payload(uint64_t i) { return testing::UniformPayload(i, kPayload); }

// The shard at `dir`/0.shard, by its canonical path (as /proc/self/smaps names it).
std::string WriteShard(const TempDir& dir) {
  const std::string path = std::filesystem::canonical(dir.path()).string() + "/0.shard";
  EXPECT_NE(testing::WriteUniformShard(path, kRecords, kPayload), nullptr);
  return path;
}

// Out of the page cache, as after a reboot. False if the kernel kept it.
bool DropFromPageCache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool dropped = fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  close(fd);
  return dropped;
}

void ExpectEveryRecordIntact(const ShardReader& reader) {
  RecordView view;
  for (uint64_t i = 0; i < reader.num_records(); ++i) {
    ASSERT_TRUE(reader.Read(i, &view).ok()) << i;
    ASSERT_EQ(view.payload, Payload(i)) << i;
  }
}

TEST(ShardRefillTest, BlocksReadRecordByRecordAreReadAgainIntoWholeFolios) {
  if (auto why = testing::NoLargeFolios(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string path = WriteShard(dir);
  ASSERT_TRUE(DropFromPageCache(path));
  auto opened = ShardReader::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const ShardReader& reader = *opened.value();
  if (reader.Cached(0, 4 * kBlock)) GTEST_SKIP() << "the kernel kept the file in its page cache";

  // A node's sparse reads, in a shuffled epoch's order: a quarter of the
  // records copied out with pread, which leaves their pages in small folios,
  // then an eighth read through the mapping.
  std::vector<uint64_t> order(kRecords);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
  RecordView view;
  std::string copy;
  for (uint64_t k = 0; k < kRecords / 4; ++k) {
    ASSERT_TRUE(reader.ReadCopy(order[k], &copy, &view).ok()) << order[k];
    ASSERT_EQ(view.payload, Payload(order[k]));
  }
  for (uint64_t k = kRecords / 4; k < kRecords / 4 + kRecords / 8; ++k) {
    ASSERT_TRUE(reader.Read(order[k], &view).ok()) << order[k];
    ASSERT_EQ(view.payload, Payload(order[k]));
  }
  const testing::MappedFile before = testing::Mapped(path);
  ASSERT_GT(before.rss_bytes, 0u);
  if (before.pmd_mapped_bytes != 0) GTEST_SKIP() << "this kernel read some of these pages into 2 MiB folios anyway";

  // Blocks 0 and 1 as the block cache reads them ahead (Refill, then
  // Populate), 2 and 3 as it locks a block that uses keep coming back to
  // (Refill, then Lock).
  int refilled = 0;
  for (uint64_t b = 0; b < 4; ++b) {
    if (reader.Refill(b * kBlock, kBlock)) ++refilled;
    if (b < 2) {
      ASSERT_TRUE(reader.Populate(b * kBlock, kBlock).ok());
    } else {
      reader.Lock(b * kBlock, kBlock);  // under sanitizers mlock maps nothing: the reads below do
    }
    reader.Refilled(b * kBlock, kBlock);
  }
  EXPECT_EQ(refilled, 4) << "blocks in small folios, not dropped";
  ExpectEveryRecordIntact(reader);
  const testing::MappedFile after = testing::Mapped(path);
  EXPECT_EQ(after.pmd_mapped_bytes, 4 * kBlock) << "rss " << after.rss_bytes;

  // Whole now: nothing more to drop, and what was locked stays locked.
  for (uint64_t b = 0; b < 4; ++b) EXPECT_FALSE(reader.Refill(b * kBlock, kBlock)) << "block " << b;
  // The file's tail is no whole block: never refilled.
  EXPECT_FALSE(reader.Refill(4 * kBlock, kBlock));
  EXPECT_EQ(testing::Mapped(path).pmd_mapped_bytes, 4 * kBlock);
}

// A shard as ingest leaves it, in 2 MiB folios, is mapped whole at once:
// refilling it would only read it again.
TEST(ShardRefillTest, AShardInWholeFoliosIsLeftAlone) {
  if (auto why = testing::NoLargeFolios(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string path = WriteShard(dir);
  auto opened = ShardReader::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const ShardReader& reader = *opened.value();
  RecordView view;
  for (uint64_t i = 0; i < kRecords; i += 5) ASSERT_TRUE(reader.Read(i, &view).ok()) << i;
  ASSERT_EQ(testing::Mapped(path).pmd_mapped_bytes, 4 * kBlock);
  for (uint64_t b = 0; b < 4; ++b) EXPECT_FALSE(reader.Refill(b * kBlock, kBlock)) << "block " << b;
  // Nor is a block not mapped at all, which the page cache holds whole.
  reader.Release(0, kBlock);
  EXPECT_TRUE(reader.Cached(0, kBlock));
  EXPECT_FALSE(reader.Refill(0, kBlock));
  ExpectEveryRecordIntact(reader);
  EXPECT_EQ(testing::Mapped(path).pmd_mapped_bytes, 4 * kBlock);
}

}  // namespace
}  // namespace strata
