// ShardReader's reads around the mapping (CopyRawRecord, ReadCopy), which
// streams use for records in blocks the block cache did not admit.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "common/shard_format.h"
#include "tests/common/shard_test_util.h"

namespace strata {
namespace {

using testing::MakeSample;
using testing::Sample;
using testing::TempDir;
using testing::WriteShard;

TEST(ShardCopyTest, CopiesVerifyLikeReads) {
  TempDir dir;
  std::mt19937_64 rng(3);
  std::vector<Sample> samples;
  for (uint64_t i = 0; i < 20; ++i) samples.push_back(MakeSample(100 + i, i, rng));
  WriteShard(dir.Join("shard"), 100, samples);
  auto reader = ShardReader::Open(dir.Join("shard"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  for (uint64_t i = 0; i < samples.size(); ++i) {
    std::string raw;
    ASSERT_TRUE((*reader)->CopyRawRecord(i, &raw).ok());
    EXPECT_EQ(raw, (*reader)->RawRecord(i));
    RecordView view;
    ASSERT_TRUE((*reader)->ParseRaw(i, raw, &view).ok());
    testing::ExpectSampleEq(view, samples[i]);
    // The bytes of another record are not this one's.
    EXPECT_TRUE((*reader)->ParseRaw((i + 1) % samples.size(), raw, &view).IsCorruption());
  }
  std::string raw = "left over";
  EXPECT_EQ((*reader)->CopyRawRecord(samples.size(), &raw).code(), Code::kOutOfRange);
  EXPECT_TRUE(raw.empty());
}

// With if_cached, a record whose pages left the page cache is not read: the
// call starts reading it and says Unavailable, and a later call finds it
// there without any blocking read in between.
TEST(ShardCopyTest, IfCachedStartsTheReadOfAnUncachedRecordAndReturnsAtOnce) {
  TempDir dir;
  std::mt19937_64 rng(4);
  // Four records of 1 MiB: the first lies in another 2 MiB folio than the
  // footer, which opening the shard and finding a record's offsets touch.
  std::vector<Sample> samples;
  for (uint64_t i = 0; i < 4; ++i) samples.push_back(MakeSample(i, i, rng, {size_t{1} << 20}));
  const std::string path = dir.Join("shard");
  WriteShard(path, 0, samples);
  auto reader = ShardReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const auto [begin, end] = (*reader)->RecordRange(0);

  std::string raw;
  ASSERT_TRUE((*reader)->CopyRawRecord(0, &raw, /*if_cached=*/true).ok());  // just written: cached
  EXPECT_EQ(raw, (*reader)->RawRecord(0));

  // Drop the record's pages: from this process's mapping, then from the page cache.
  (*reader)->Release(0, (*reader)->file_size());
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  close(fd);
  if ((*reader)->Cached(begin, end - begin)) {
    GTEST_SKIP() << "this file system keeps the file's pages in memory (tmpfs?): nothing to read from storage";
  }
  const Status first = (*reader)->CopyRawRecord(0, &raw, /*if_cached=*/true);
  ASSERT_EQ(first.code(), Code::kUnavailable) << first.ToString();
  EXPECT_TRUE(raw.empty());

  // The kernel reads it in on its own.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  Status s = first;
  while (!s.ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    s = (*reader)->CopyRawRecord(0, &raw, /*if_cached=*/true);
  }
  ASSERT_TRUE(s.ok()) << "the record never reached the page cache: " << s.ToString();
  RecordView view;
  ASSERT_TRUE((*reader)->ParseRaw(0, raw, &view).ok());
  testing::ExpectSampleEq(view, samples[0]);
}

}  // namespace
}  // namespace strata
