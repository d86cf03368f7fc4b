// DiskSpace against the real file system of a temporary directory, with the
// test-only free figure standing in for a nearly full disk.
#include "server/storage/disk_space.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace strata {
namespace {

DiskSpace::Options Opts(const std::string& path, const char* low, const char* high, uint64_t free = 0) {
  return {"node-7", path, ParseByteThreshold(low).value(), ParseByteThreshold(high).value(), free};
}

TEST(DiskSpaceTest, SamplesTheFileSystemOfTheDirectory) {
  testing::TempDir dir;
  DiskSpace disk(Opts(dir.path(), "1%", "2%"));
  EXPECT_FALSE(disk.BelowLow()) << "no sample yet: never refused for want of a figure";
  ASSERT_TRUE(disk.Sample().ok());
  const DiskFigures f = disk.Last();
  EXPECT_GT(f.total_bytes, 0u);
  EXPECT_LE(f.free_bytes, f.total_bytes);
  EXPECT_EQ(disk.LowBytes(), f.total_bytes / 100 + f.total_bytes % 100 / 100);
}

TEST(DiskSpaceTest, WatermarksDecideWhatTheNodeTakes) {
  testing::TempDir dir;
  DiskSpace plenty(Opts(dir.path(), "1MiB", "2MiB", 3 << 20));
  ASSERT_TRUE(plenty.Sample().ok());
  EXPECT_FALSE(plenty.BelowHigh());
  EXPECT_TRUE(plenty.CheckWritable("x").ok());

  DiskSpace full(Opts(dir.path(), "1MiB", "4MiB", 3 << 20));
  ASSERT_TRUE(full.Sample().ok());
  EXPECT_TRUE(full.BelowHigh()) << "no new replicas";
  EXPECT_FALSE(full.BelowLow());
  EXPECT_TRUE(full.CheckWritable("x").ok()) << "but writes are still taken";

  DiskSpace tight(Opts(dir.path(), "4MiB", "8MiB", 3 << 20));
  ASSERT_TRUE(tight.Sample().ok());
  EXPECT_TRUE(tight.BelowLow());
  const Status s = tight.CheckWritable("a replica of d@1/000003.shard");
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_EQ(s.message().rfind("node-7 refuses a replica of d@1/000003.shard: 3.0 MiB free of ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(" on " + dir.path() + ", below disk_low_watermark (4.0 MiB)"), std::string::npos)
      << s.message();
}

TEST(DiskSpaceTest, AShareNamesItselfAndItsBytes) {
  testing::TempDir dir;
  DiskSpace disk(Opts(dir.path(), "100%", "100%", 1));
  ASSERT_TRUE(disk.Sample().ok());
  const Status s = disk.CheckWritable("the ingest of d");
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("below disk_low_watermark (100% = "), std::string::npos) << s.message();
}

TEST(DiskSpaceTest, TheHighMarkIsNeverBelowTheLow) {
  testing::TempDir dir;
  DiskSpace disk(Opts(dir.path(), "8MiB", "1%", 1));  // mixed units: 1% of a small disk may be under 8 MiB
  ASSERT_TRUE(disk.Sample().ok());
  EXPECT_GE(disk.HighBytes(), disk.LowBytes());
}

TEST(DiskSpaceTest, AMissingDirectoryIsAnErrorAndKeepsTheLastSample) {
  testing::TempDir dir;
  DiskSpace disk(Opts(dir.Join("nope"), "1%", "2%"));
  EXPECT_FALSE(disk.Sample().ok());
  EXPECT_EQ(disk.Last().total_bytes, 0u);
  EXPECT_TRUE(disk.CheckWritable("x").ok());
}

}  // namespace
}  // namespace strata
