// Records verified in locked pages (server/storage/verified_records.h): a read
// hashes a record unless it verified it since its pages were locked, and
// every release makes reads hash again.
#include "server/storage/verified_records.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/little_endian.h"
#include "server/storage/shard_format.h"
#include "tests/server/storage/shard_test_util.h"

namespace strata {
namespace {

using testing::FlipByte;
using testing::TempDir;
using testing::WriteSmallShard;

const uint64_t kPage = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));

// Where a byte of record `index`'s payload lies in the file.
uint64_t PayloadByte(const ShardReader& r, uint64_t index) {
  const std::string_view raw = r.RawRecord(index);
  const uint32_t header_len = LoadU32(raw.data());
  return r.RecordOffset(index) + 4 + header_len + (raw.size() - 12 - header_len) / 2;
}

// An anonymous mapping of `pages` pages standing in for a shard file.
class Mapping {
 public:
  explicit Mapping(uint64_t pages) : size_(pages * kPage) {
    base_ = static_cast<char*>(mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Mapping() { munmap(base_, size_); }
  const char* base() const { return base_; }
  uint64_t size() const { return size_; }

 private:
  char* base_;
  uint64_t size_;
};

TEST(VerifiedRecordsTest, OnlyARecordVerifiedWhileEveryPageOfItWasLockedIsTrusted) {
  Mapping m(4);
  VerifiedRecords v(m.base(), m.size(), 3);
  // Record 0 in page 0, record 1 across pages 1 and 2, record 2 in page 3.
  const uint64_t r1_begin = kPage + kPage / 2, r1_end = 2 * kPage + 10;
  EXPECT_EQ(v.Begin(0, 100), 0u) << "nothing locked: no verification is remembered";
  v.Verified(v.Begin(0, 100), 0);
  EXPECT_FALSE(v.Trusted(0, 0, 100));

  if (!v.Lock(0, 2 * kPage)) GTEST_SKIP() << "this process may not lock memory (RLIMIT_MEMLOCK)";
  EXPECT_TRUE(v.Locked(0, 2 * kPage));
  EXPECT_FALSE(v.Locked(r1_begin, r1_end)) << "page 2 is not locked";
  v.Verified(v.Begin(0, 100), 0);
  EXPECT_TRUE(v.Trusted(0, 0, 100));
  EXPECT_EQ(v.Begin(r1_begin, r1_end), 0u);
  v.Verified(v.Begin(r1_begin, r1_end), 1);
  EXPECT_FALSE(v.Trusted(1, r1_begin, r1_end));

  ASSERT_TRUE(v.Lock(2 * kPage, 2 * kPage));
  v.Verified(v.Begin(r1_begin, r1_end), 1);
  EXPECT_TRUE(v.Trusted(1, r1_begin, r1_end));
  EXPECT_FALSE(v.Trusted(2, 3 * kPage, 3 * kPage + 5)) << "locked, but never verified";

  // Unlocking one page forgets every verification, not only its records'.
  v.Unlock(3 * kPage, kPage);
  EXPECT_FALSE(v.Trusted(0, 0, 100));
  EXPECT_FALSE(v.Trusted(1, r1_begin, r1_end));
  EXPECT_TRUE(v.Locked(0, 3 * kPage));
  EXPECT_FALSE(v.Locked(3 * kPage, 4 * kPage));
  v.Unlock(0, m.size());
}

TEST(VerifiedRecordsTest, AVerificationThatAnUnlockOverlapsIsNotRemembered) {
  Mapping m(2);
  VerifiedRecords v(m.base(), m.size(), 2);
  if (!v.Lock(0, m.size())) GTEST_SKIP() << "this process may not lock memory (RLIMIT_MEMLOCK)";
  const uint64_t ticket = v.Begin(0, 100);
  ASSERT_NE(ticket, 0u);
  // The pages are unlocked and locked again while the record is hashed: its
  // bytes may have come from storage again after the hash read them.
  v.Unlock(0, m.size());
  ASSERT_TRUE(v.Lock(0, m.size()));
  v.Verified(ticket, 0);
  EXPECT_FALSE(v.Trusted(0, 0, 100));
  v.Verified(v.Begin(0, 100), 0);
  EXPECT_TRUE(v.Trusted(0, 0, 100));
  v.Unlock(0, m.size());
}

// Readers verifying and trusting while the pages are locked and unlocked over
// and over (run under TSan by .ci/sanitize.sh): once the last unlock is over,
// no verification survives it.
TEST(VerifiedRecordsTest, NoVerificationOutlivesTheUnlocksItRacedWith) {
  constexpr uint64_t kRecords = 64;
  Mapping m(4);
  VerifiedRecords v(m.base(), m.size(), kRecords);
  if (!v.Lock(0, m.size())) GTEST_SKIP() << "this process may not lock memory (RLIMIT_MEMLOCK)";
  const auto range = [&](uint64_t i) { return std::pair<uint64_t, uint64_t>{i * 64, i * 64 + 64}; };
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      for (uint64_t n = 0; !stop.load(); ++n) {
        const uint64_t i = (n * 7 + static_cast<uint64_t>(t)) % kRecords;
        const auto [begin, end] = range(i);
        if (!v.Trusted(i, begin, end)) v.Verified(v.Begin(begin, end), i);
      }
    });
  }
  for (int k = 0; k < 2000; ++k) {
    v.Unlock(0, m.size());
    ASSERT_TRUE(v.Lock(0, m.size()));
  }
  v.Unlock(0, m.size());
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(v.Begin(0, 64), 0u);
  // Locked again, every record must be verified again: a verification the
  // unlocks raced with would show here as trusted.
  ASSERT_TRUE(v.Lock(0, m.size()));
  for (uint64_t i = 0; i < kRecords; ++i) {
    const auto [begin, end] = range(i);
    EXPECT_FALSE(v.Trusted(i, begin, end)) << "record " << i;
  }
  v.Unlock(0, m.size());
}

// The same rules seen through ShardReader, with damage made through the page
// cache (which a mapping shares): what a read hashes, and what it trusts.
TEST(VerifiedRecordsTest, AShardReadHashesItsRecordUnlessItVerifiedItInLockedPages) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  WriteSmallShard(path);
  auto opened = ShardReader::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const ShardReader& r = **opened;
  RecordView view;

  // Not locked: every read hashes, so damage after a good read is found.
  ASSERT_TRUE(r.Read(2, &view).ok());
  FlipByte(path, PayloadByte(r, 2), 0x04);
  EXPECT_EQ(r.Read(2, &view).code(), Code::kDataLoss);

  if (!r.Lock(0, r.file_size())) GTEST_SKIP() << "this process may not lock memory (RLIMIT_MEMLOCK)";
  ASSERT_TRUE(r.Locked(0, r.file_size()));
  // Locked, the first read of a record still hashes it: damage that came
  // before it is found.
  EXPECT_EQ(r.Read(2, &view).code(), Code::kDataLoss);
  FlipByte(path, PayloadByte(r, 5), 0x04);
  EXPECT_EQ(r.Read(5, &view).code(), Code::kDataLoss);
  // A record verified in locked pages is not hashed again: a change made to
  // the page itself (no storage can do that to a locked page) goes unseen.
  ASSERT_TRUE(r.Read(7, &view).ok());
  FlipByte(path, PayloadByte(r, 7), 0x04);
  EXPECT_TRUE(r.Read(7, &view).ok()) << "the checksum was computed again";
  // Released (the block cache let the block go), every record is hashed again.
  r.Release(0, r.file_size());
  EXPECT_FALSE(r.Locked(0, r.file_size()));
  EXPECT_EQ(r.Read(7, &view).code(), Code::kDataLoss);
  ASSERT_TRUE(r.Read(8, &view).ok());
}

}  // namespace
}  // namespace strata
