#include "server/storage/aligned_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>

#include "server/storage/shard_format.h"
#include "tests/support/smaps.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using testing::TempDir;
constexpr size_t kChunk = AlignedFileWriter::kChunkBytes;

int CreateFile(const std::string& path) { return open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); }

TEST(AlignedFileWriterTest, WritesWhatWasAppendedAndOnlyWholeChunksBeforeFlush) {
  TempDir dir;
  const std::string path = dir.Join("f");
  const int fd = CreateFile(path);
  ASSERT_GE(fd, 0);
  AlignedFileWriter w(fd, path);
  std::mt19937_64 rng(7);
  std::string want;
  // Small appends, appends across a boundary, exactly a chunk, several chunks at once.
  for (size_t size : {size_t{0}, size_t{1}, size_t{100}, kChunk - 101, kChunk, kChunk + 1, 3 * kChunk + 5, size_t{4096},
                      kChunk - 1, 2 * kChunk}) {
    std::string bytes(size, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    ASSERT_TRUE(w.Append(bytes).ok());
    want += bytes;
    EXPECT_EQ(w.size(), want.size());
    // Every write so far ended on a chunk boundary.
    EXPECT_EQ(std::filesystem::file_size(path), want.size() / kChunk * kChunk);
  }
  ASSERT_TRUE(w.Flush().ok());
  close(fd);
  EXPECT_EQ(testing::ReadFile(path), want);
}

TEST(AlignedFileWriterTest, AFailedWriteIsAnIOErrorNamingTheFile) {
  TempDir dir;
  const std::string path = dir.Join("read-only");
  testing::WriteFile(path, "");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  AlignedFileWriter w(fd, path);
  ASSERT_TRUE(w.Append("staged, not yet written").ok());
  const Status s = w.Flush();
  EXPECT_EQ(s.code(), Code::kIOError) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
  EXPECT_FALSE(w.Append(std::string(kChunk, 'x')).ok());
  close(fd);
}

TEST(AlignedFileWriterTest, AShardFileIsMappedInWholeHugePages) {
  if (auto why = testing::NoLargeFolios(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string path = std::filesystem::canonical(dir.path()).string() + "/0.shard";
  auto writer = ShardWriter::Create(path, ShardIdentity{"ds", 1, 0, 0});
  ASSERT_TRUE(writer.ok());
  const std::string payload(1000, 'p');  // small records, written across chunk boundaries
  const std::string_view field = payload;
  for (uint64_t i = 0; i < 9000; ++i) {  // about 9 MiB: four whole chunks
    v1::RecordHeader h;
    h.set_id(i);
    h.add_field_names("x");
    h.add_field_sizes(payload.size());
    ASSERT_TRUE((*writer)->Append(h, std::span<const std::string_view>(&field, 1)).ok());
  }
  ASSERT_TRUE((*writer)->Finish().ok());
  auto reader = ShardReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  RecordView view;
  for (uint64_t i = 0; i < (*reader)->num_records(); ++i) ASSERT_TRUE((*reader)->Read(i, &view).ok());
  const auto mapped = testing::Mapped(path);
  // The whole chunks map as 2 MiB pages; the last, partial one does not.
  EXPECT_EQ(mapped.pmd_mapped_bytes, 4 * kChunk) << "rss " << mapped.rss_bytes;
}

}  // namespace
}  // namespace strata
