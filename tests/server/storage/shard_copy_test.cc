// ShardReader's reads around the mapping (CopyRawRecord, ReadCopy), which
// streams use for records in blocks the block cache did not admit.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/storage/shard_format.h"
#include "tests/server/storage/shard_test_util.h"

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

// The VmFlags of the mapping in /proc/self/smaps that holds `at`.
std::string VmFlagsAt(const void* at) {
  const auto addr = reinterpret_cast<uintptr_t>(at);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line.substr(8) + " ";
    }
  }
  return "";
}

// Records are mapped for 2 MiB folios, the footer (offset table, metadata,
// trailer) for reads of a page: after the page cache drops a shard, opening
// it reads the footer's pages, not 2 MiB around each.
TEST(ShardCopyTest, RecordsAreMappedInHugePagesAndTheFooterForRandomReads) {
  TempDir dir;
  std::mt19937_64 rng(5);
  std::vector<Sample> samples;
  for (uint64_t i = 0; i < 4; ++i) samples.push_back(MakeSample(i, i, rng, {size_t{1} << 20}));
  WriteShard(dir.Join("shard"), 0, samples);
  auto reader = ShardReader::Open(dir.Join("shard"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const char* record = (*reader)->RawRecord(0).data();
  const char* base = record - (*reader)->RecordRange(0).first;
  const char* trailer = base + (*reader)->file_size() - 1;
  const std::string records = VmFlagsAt(record), footer = VmFlagsAt(trailer);
  ASSERT_FALSE(records.empty()) << "no mapping holds the records";
  ASSERT_FALSE(footer.empty()) << "no mapping holds the footer";
  EXPECT_NE(footer.find(" rr "), std::string::npos) << "footer VmFlags:" << footer;
  EXPECT_EQ(footer.find(" hg "), std::string::npos) << "footer VmFlags:" << footer;
  EXPECT_EQ(records.find(" rr "), std::string::npos) << "records VmFlags:" << records;
  if (records.find(" hg ") == std::string::npos) {
    GTEST_SKIP() << "this kernel takes no MADV_HUGEPAGE (no transparent huge pages): records VmFlags:" << records;
  }
  // Reads are what they were.
  RecordView view;
  for (uint64_t i = 0; i < samples.size(); ++i) {
    ASSERT_TRUE((*reader)->Read(i, &view).ok());
    testing::ExpectSampleEq(view, samples[i]);
  }
}

}  // namespace
}  // namespace strata
