// Shard footers: the fixed-width offset table (formats 2 and 3), format 1 and 2
// files still read, and offset tables that are wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/checksum.h"
#include "common/little_endian.h"
#include "server/storage/shard_format.h"
#include "tests/server/storage/shard_test_util.h"
#include "tests/support/smaps.h"

namespace strata {
namespace {

using testing::ExpectSampleEq;
using testing::ReadFile;
using testing::Sample;
using testing::TempDir;
using testing::WriteFile;
using testing::WriteSmallShard;

// What the trailer's footer checksum covers: the whole footer up to format 2,
// its record count and message (not the offset table) from format 3.
uint64_t FooterSum(uint32_t version, const std::string& footer) {
  if (version < 3) return Checksum64(footer);
  const size_t table_end = 8 + 8 * LoadU64(footer.data());
  return Checksum64(footer.substr(0, 8) + footer.substr(table_end));
}

// The shard file `file` rewritten with a new footer (its trailer and checksums
// made to match), as `version` states it: for files older writers wrote, or
// footers damaged in ways their checksum does not catch.
std::string WithFooter(const std::string& file, uint32_t version, const std::string& footer) {
  const char* t = file.data() + file.size() - kShardTrailerSize;
  const uint64_t footer_offset = LoadU64(t);
  std::string out = file.substr(0, footer_offset) + footer + file.substr(file.size() - kShardTrailerSize);
  StoreU32(&out, 8, version);
  const size_t trailer = out.size() - kShardTrailerSize;
  StoreU32(&out, trailer + 8, static_cast<uint32_t>(footer.size()));
  StoreU32(&out, trailer + 12, version);
  StoreU64(&out, trailer + 16, FooterSum(version, footer));
  StoreU64(&out, trailer + 24, Checksum64(out.data(), footer_offset + footer.size()));
  return out;
}

// The offsets and metadata of a file with an offset table (format 2 or 3).
std::pair<std::vector<uint64_t>, v1::ShardFooter> SplitFooter(const std::string& file) {
  const char* t = file.data() + file.size() - kShardTrailerSize;
  const char* footer = file.data() + LoadU64(t);
  const uint32_t footer_len = LoadU32(t + 8);
  const uint64_t count = LoadU64(footer);
  std::vector<uint64_t> offsets(count);
  for (uint64_t i = 0; i < count; ++i) offsets[i] = LoadU64(footer + 8 + 8 * i);
  v1::ShardFooter meta;
  EXPECT_TRUE(meta.ParseFromArray(footer + 8 + 8 * count, static_cast<int>(footer_len - 8 - 8 * count)));
  return {offsets, meta};
}

std::string TableFooter(const std::vector<uint64_t>& offsets, const v1::ShardFooter& meta) {
  std::string footer(8 + 8 * offsets.size(), '\0');
  StoreU64(&footer, 0, offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) StoreU64(&footer, 8 + 8 * i, offsets[i]);
  return footer + meta.SerializeAsString();
}

// Opens the file at `path` as format `version` and reads every record of
// `samples` from it, at `offsets`; the whole file verifies.
void ExpectOpensAndReads(const std::string& path, uint32_t version, const std::vector<Sample>& samples,
                         const std::vector<uint64_t>& offsets) {
  auto reader = ShardReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->format_version(), version);
  ASSERT_EQ((*reader)->num_records(), samples.size());
  for (uint64_t i = 0; i < samples.size(); ++i) {
    RecordView view;
    ASSERT_TRUE((*reader)->Read(i, &view).ok());
    ExpectSampleEq(view, samples[i]);
    EXPECT_EQ((*reader)->RecordOffset(i), offsets[i]);
  }
  EXPECT_TRUE((*reader)->VerifyFile().ok());
}

TEST(ShardFormatTest, WritesAFixedWidthOffsetTable) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  WriteSmallShard(path);
  auto reader = ShardReader::Open(path);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->format_version(), 3u);
  EXPECT_EQ((*reader)->footer().record_offsets_size(), 0);
  const auto [offsets, meta] = SplitFooter(ReadFile(path));
  ASSERT_EQ(offsets.size(), (*reader)->num_records());
  for (uint64_t i = 0; i < offsets.size(); ++i) EXPECT_EQ((*reader)->RecordOffset(i), offsets[i]);
  EXPECT_EQ(meta.dataset(), "images");
}

// Shards written before format 2 (offsets as a varint list in the footer
// message) still open and read the same.
TEST(ShardFormatTest, ReadsFormat1Files) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  const std::vector<Sample> samples = WriteSmallShard(path);
  auto [offsets, meta] = SplitFooter(ReadFile(path));
  for (uint64_t offset : offsets) meta.add_record_offsets(offset);
  const std::string v1_file = WithFooter(ReadFile(path), 1, meta.SerializeAsString());
  WriteFile(path, v1_file);
  ExpectOpensAndReads(path, 1, samples, offsets);

  // Format 1 checks the whole offset list when it opens.
  std::swap(offsets[3], offsets[4]);
  meta.clear_record_offsets();
  for (uint64_t offset : offsets) meta.add_record_offsets(offset);
  WriteFile(path, WithFooter(v1_file, 1, meta.SerializeAsString()));
  EXPECT_EQ(ShardReader::Open(path).status().code(), Code::kDataLoss);
}

// Format 2 files (the same table, the footer checksum over all of it) still
// open and read the same; a flipped table entry fails their open.
TEST(ShardFormatTest, ReadsFormat2Files) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  const std::vector<Sample> samples = WriteSmallShard(path);
  const auto [offsets, meta] = SplitFooter(ReadFile(path));
  const std::string v2_file = WithFooter(ReadFile(path), 2, TableFooter(offsets, meta));
  WriteFile(path, v2_file);
  ExpectOpensAndReads(path, 2, samples, offsets);
  std::string flipped = v2_file;
  flipped[LoadU64(v2_file.data() + v2_file.size() - kShardTrailerSize) + 8 + 8 * 3] ^= 0x04;  // entry 3
  WriteFile(path, flipped);
  EXPECT_EQ(ShardReader::Open(path).status().code(), Code::kDataLoss);
}

// Format 3's footer checksum leaves the offset table out, so opening costs
// nothing per record: a bit flip in the table opens, and the record it
// misplaces is Corruption when read (and in VerifyFile); a flip in the
// count or the footer message fails the open.
TEST(ShardFormatTest, Format3ChecksTheTableEntriesItReads) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  const std::vector<Sample> samples = WriteSmallShard(path);
  const std::string good = ReadFile(path);
  const uint64_t footer_at = LoadU64(good.data() + good.size() - kShardTrailerSize);
  const uint32_t footer_len = LoadU32(good.data() + good.size() - kShardTrailerSize + 8);
  std::string bytes = good;
  bytes[footer_at + 8 + 8 * 3] ^= 0x04;  // record 3's offset: records 2 and 3 lose their bounds
  WriteFile(path, bytes);
  auto reader = ShardReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  for (uint64_t i = 0; i < samples.size(); ++i) {
    RecordView view;
    const Status s = (*reader)->Read(i, &view);
    if (i == 2 || i == 3) {
      EXPECT_EQ(s.code(), Code::kDataLoss) << i;
      EXPECT_TRUE(view.payload.empty());
    } else {
      ASSERT_TRUE(s.ok()) << i << ": " << s.ToString();
      ExpectSampleEq(view, samples[i]);
    }
  }
  EXPECT_EQ((*reader)->VerifyFile().code(), Code::kDataLoss);
  for (uint64_t at : {footer_at, footer_at + footer_len - 2}) {  // the count; the message
    bytes = good;
    bytes[at] ^= 0x01;
    WriteFile(path, bytes);
    const Status s = ShardReader::Open(path).status();
    EXPECT_EQ(s.code(), Code::kDataLoss) << at;
  }
}

// A table whose footer checksum matches but whose offsets are wrong (a
// writer bug, not a bit flip) opens in O(1); the records it misplaces are
// Corruption when read, never wrong bytes, and the others still read.
TEST(ShardFormatTest, MisplacedOffsetsInAMatchingFooterAreCorruptionWhenRead) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  const std::vector<Sample> samples = WriteSmallShard(path);
  const std::string original = ReadFile(path);
  const auto [offsets, meta] = SplitFooter(original);
  ASSERT_GT(offsets.size(), 6u);

  std::vector<uint64_t> swapped = offsets;
  std::swap(swapped[4], swapped[5]);  // records 3, 4 and 5 lose their bounds
  std::vector<uint64_t> shifted = offsets;
  shifted[2] += 1;  // records 1 and 2 lose theirs
  std::vector<uint64_t> past_end = offsets;
  past_end[6] = original.size() * 2;  // records 5 and 6
  const struct {
    const char* what;
    std::vector<uint64_t> offsets;
    std::vector<uint64_t> damaged;
  } cases[] = {{"swapped", swapped, {3, 4, 5}}, {"shifted", shifted, {1, 2}}, {"past the end", past_end, {5, 6}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    WriteFile(path, WithFooter(original, 2, TableFooter(c.offsets, meta)));  // checksummed with the table
    auto reader = ShardReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    for (uint64_t i = 0; i < samples.size(); ++i) {
      RecordView view;
      Status status = (*reader)->Read(i, &view);
      if (std::find(c.damaged.begin(), c.damaged.end(), i) != c.damaged.end()) {
        EXPECT_EQ(status.code(), Code::kDataLoss) << i;
        EXPECT_TRUE(view.payload.empty());
      } else {
        ASSERT_TRUE(status.ok()) << i << ": " << status.ToString();
        ExpectSampleEq(view, samples[i]);
      }
    }
  }
  // Prefetch hints accept what the footer says, damaged or not, and any index.
  for (const auto& c : cases) {
    WriteFile(path, WithFooter(original, 2, TableFooter(c.offsets, meta)));
    auto reader = ShardReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    for (uint64_t i : {uint64_t{0}, uint64_t{5}, uint64_t{6}, samples.size(), samples.size() + 1, UINT64_MAX}) {
      (*reader)->PrefetchOffset(i);
      (*reader)->PrefetchRecord(i);
    }
  }
  // A count larger than the table is refused at open.
  std::string footer = TableFooter(offsets, meta);
  StoreU64(&footer, 0, offsets.size() + 1000);
  WriteFile(path, WithFooter(original, 2, footer));
  EXPECT_EQ(ShardReader::Open(path).status().code(), Code::kDataLoss);
}

// Writes `records` samples of 128 KiB to `path` and opens the shard with
// none of its pages mapped into this process (null, with a failure, if not).
std::unique_ptr<ShardReader> OpenUnmapped(const std::string& path, uint64_t records, uint64_t seed,
                                          std::vector<Sample>* samples) {
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; i < records; ++i) samples->push_back(testing::MakeSample(i, i, rng, {128 << 10}));
  testing::WriteShard(path, 0, *samples);
  auto reader = ShardReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return nullptr;
  reader.value()->Release(0, reader.value()->file_size());
  EXPECT_EQ(testing::Mapped(path).rss_bytes, 0u);
  return std::move(reader).value();
}

// Prefetching loads what is mapped into the CPU cache; it never maps a page,
// so it cannot undo the block cache's releases.
TEST(ShardFormatTest, PrefetchHintsMapNoRecords) {
  TempDir dir;
  const std::string path = std::filesystem::canonical(dir.path()).string() + "/shard";
  std::vector<Sample> samples;
  auto reader = OpenUnmapped(path, 40, 3, &samples);  // 5 MiB
  ASSERT_NE(reader, nullptr);
  const ShardReader& r = *reader;
  for (uint64_t i = 0; i <= samples.size(); ++i) {
    r.PrefetchOffset(i);
    r.PrefetchRecord(i);
  }
  // Reading the offset table maps the footer, and at most the rest of the
  // last, partial 2 MiB chunk it shares a page-cache folio with: none of the
  // first 4 MiB of records.
  const uint64_t after = testing::Mapped(path).rss_bytes;
  EXPECT_LE(after, r.file_size() - 2 * AlignedFileWriter::kChunkBytes);
  RecordView view;
  ASSERT_TRUE(r.Read(0, &view).ok());
  ExpectSampleEq(view, samples[0]);
  EXPECT_GT(testing::Mapped(path).rss_bytes, after) << "a read maps its record";
}

// The scrubber verifies whole shards while streams read them: verifying maps
// no page of the file, so it cannot push the server past its memory budget.
TEST(ShardFormatTest, VerifyFileMapsNothing) {
  TempDir dir;
  const std::string path = std::filesystem::canonical(dir.path()).string() + "/shard";
  std::vector<Sample> samples;
  auto reader = OpenUnmapped(path, 48, 4, &samples);  // 6 MiB
  ASSERT_NE(reader, nullptr);
  ASSERT_TRUE(reader->VerifyFile().ok());
  EXPECT_EQ(testing::Mapped(path).rss_bytes, 0u);
  // And it still finds damage anywhere in the records.
  std::string bytes = ReadFile(path);
  bytes[5 << 20] ^= 0x10;
  WriteFile(path, bytes);
  auto damaged = ShardReader::Open(path);
  ASSERT_TRUE(damaged.ok()) << damaged.status().ToString();
  EXPECT_EQ((*damaged)->VerifyFile().code(), Code::kDataLoss);
}

// The scrubber paces each piece as it is read (at its rate throughout, never a
// whole shard in one burst) and can stop part way through a large shard.
TEST(ShardFormatTest, VerifyFileAsksBeforeEachPiece) {
  TempDir dir;
  const std::string path = std::filesystem::canonical(dir.path()).string() + "/shard";
  std::vector<Sample> samples;
  auto reader = OpenUnmapped(path, 48, 4, &samples);  // 6 MiB
  ASSERT_NE(reader, nullptr);
  std::vector<size_t> pieces;
  ASSERT_TRUE(reader
                  ->VerifyFile([&](size_t n) {
                    pieces.push_back(n);
                    return true;
                  })
                  .ok());
  ASSERT_GE(pieces.size(), 6u);
  size_t total = 0;
  for (size_t n : pieces) {
    EXPECT_LE(n, size_t{1} << 20);
    total += n;
  }
  EXPECT_GE(total, size_t{6} << 20);
  EXPECT_LE(total, std::filesystem::file_size(path));
  // Stopping after two pieces reads no more and says it stopped.
  int asked = 0;
  const Status stopped = reader->VerifyFile([&](size_t) { return ++asked <= 2; });
  EXPECT_EQ(stopped.code(), Code::kCancelled);
  EXPECT_EQ(asked, 3);
}

}  // namespace
}  // namespace strata
