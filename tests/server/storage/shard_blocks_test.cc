// Shard format 4 (server/storage/shard_blocks.cc): records in zstd blocks.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/little_endian.h"
#include "server/storage/decompressed_cache.h"
#include "server/storage/shard_format.h"
#include "tests/server/storage/shard_test_util.h"

namespace strata {
namespace {

using testing::AppendSample;
using testing::ExpectSampleEq;
using testing::FlipByte;
using testing::Identity;
using testing::MakeSample;
using testing::ReadFile;
using testing::Sample;
using testing::TempDir;
using testing::WriteFile;

// Samples whose fields compress (repeated words), with one larger than a block.
std::vector<Sample> CompressibleSamples(uint64_t first_id, uint64_t n) {
  std::mt19937_64 rng(11);
  std::vector<Sample> samples;
  for (uint64_t i = 0; i < n; ++i) {
    const size_t size = i == n / 2 ? 20000 : 100 + rng() % 700;
    Sample s = MakeSample(first_id + i, i, rng, {size});
    std::string text;
    while (text.size() < size)
      text += "{\"review\": \"good value, would buy again\", \"stars\": " + std::to_string(i % 5) + "} ";
    text.resize(size);
    s.fields[0] = text;
    samples.push_back(std::move(s));
  }
  return samples;
}

ShardSummary WriteCompressed(const std::string& path, uint64_t first_id, const std::vector<Sample>& samples,
                             size_t block_bytes = 4096) {
  ShardWriteOptions options;
  options.compression = v1::COMPRESSION_ZSTD;
  options.block_bytes = block_bytes;
  auto writer = ShardWriter::Create(path, Identity(first_id), options);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  for (const Sample& s : samples) EXPECT_TRUE(AppendSample(**writer, s).ok());
  auto summary = (*writer)->Finish();
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  return *summary;
}

// Every record through each read that serves a compressed shard: ok and
// equal to what was written, or DataLoss. Returns the records that failed.
std::vector<uint64_t> ReadAll(const ShardReader& reader, const std::vector<Sample>& samples) {
  std::vector<uint64_t> failed;
  for (uint64_t i = 0; i < samples.size(); ++i) {
    std::shared_ptr<const std::string> block;
    RecordView view;
    Status s = reader.ReadBlockRecord(i, &block, &view);
    std::string copy;
    RecordView copied;
    Status c = reader.ReadCopy(i, &copy, &copied);
    EXPECT_EQ(s.code(), c.code()) << s.ToString() << " / " << c.ToString();
    if (s.ok()) {
      ExpectSampleEq(view, samples[i]);
      ExpectSampleEq(copied, samples[i]);
    } else {
      EXPECT_EQ(s.code(), Code::kDataLoss) << s.ToString();
      EXPECT_TRUE(view.payload.empty());
      failed.push_back(i);
    }
  }
  return failed;
}

TEST(ShardBlocksTest, RoundTripsInBlocksAndIsSmaller) {
  TempDir dir;
  const std::vector<Sample> samples = CompressibleSamples(100, 300);
  const ShardSummary packed = WriteCompressed(dir.Join("packed"), 100, samples);
  const ShardSummary plain = testing::WriteShard(dir.Join("plain"), 100, samples);
  EXPECT_EQ(packed.records, samples.size());
  EXPECT_EQ(packed.payload_bytes, plain.payload_bytes);
  EXPECT_LT(packed.file_bytes * 3, plain.file_bytes);  // repeated text: well over 3x
  EXPECT_EQ(packed.record_bytes, plain.record_bytes);

  auto reader = ShardReader::Open(dir.Join("packed"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->format_version(), kCompressedShardFormatVersion);
  EXPECT_TRUE((*reader)->compressed());
  EXPECT_GT((*reader)->num_blocks(), 10u);
  EXPECT_EQ((*reader)->footer().compression(), v1::COMPRESSION_ZSTD);
  EXPECT_EQ((*reader)->num_records(), samples.size());
  const size_t cached_before = DecompressedCache::Process().bytes();
  EXPECT_TRUE(ReadAll(**reader, samples).empty());
  EXPECT_TRUE((*reader)->VerifyFile().ok());
  // Its blocks stay decompressed in the process's cache while it is open.
  EXPECT_GE(DecompressedCache::Process().bytes(), cached_before + packed.record_bytes);
  // Records are not in the mapping as served: Read refuses, RawRecord is empty.
  RecordView view;
  EXPECT_EQ((*reader)->Read(0, &view).code(), Code::kFailedPrecondition);
  EXPECT_TRUE((*reader)->RawRecord(0).empty());
  // The range of a record is that of its stored block, inside the records.
  const auto [begin, end] = (*reader)->RecordRange(0);
  EXPECT_EQ(begin, kShardHeaderSize);
  EXPECT_GT(end, begin);
  std::shared_ptr<const std::string> block;
  EXPECT_EQ((*reader)->ReadBlockRecord(samples.size(), &block, &view).code(), Code::kOutOfRange);

  // The uncompressed shard is still format 3, read as before.
  auto old = ShardReader::Open(dir.Join("plain"));
  ASSERT_TRUE(old.ok());
  EXPECT_EQ((*old)->format_version(), kShardFormatVersion);
  EXPECT_FALSE((*old)->compressed());
  EXPECT_EQ((*old)->ReadBlockRecord(0, &block, &view).code(), Code::kFailedPrecondition);
  // Closing the shard drops its blocks from the cache.
  reader->reset();
  EXPECT_EQ(DecompressedCache::Process().bytes(), cached_before);
}

TEST(ShardBlocksTest, EmptyCompressedShardRoundTrips) {
  TempDir dir;
  WriteCompressed(dir.Join("s"), 0, {});
  auto reader = ShardReader::Open(dir.Join("s"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->num_records(), 0u);
  EXPECT_EQ((*reader)->num_blocks(), 0u);
  EXPECT_TRUE((*reader)->VerifyFile().ok());
}

TEST(ShardBlocksTest, DamagedBlockIsDataLossBeforeDecompression) {
  TempDir dir;
  const std::string path = dir.Join("s");
  const std::vector<Sample> samples = CompressibleSamples(0, 120);
  WriteCompressed(path, 0, samples);
  const std::string original = ReadFile(path);
  auto intact = ShardReader::Open(path);
  ASSERT_TRUE(intact.ok());
  const uint64_t victim = 40;
  const auto [begin, end] = (*intact)->RecordRange(victim);
  ASSERT_GT(end - begin, kBlockHeaderSize + 8 + 4);
  const struct {
    const char* what;
    uint64_t at;
    const char* found;  // how the read finds it: before any byte is decompressed
  } damages[] = {
      {"compressed bytes", begin + kBlockHeaderSize + (end - begin - kBlockHeaderSize - 8) / 2, "checksum mismatch"},
      {"raw length", begin + 1, "checksum mismatch"},
      {"stored length", begin + 8, "length does not match"},
      {"checksum", end - 2, "checksum mismatch"},
  };
  for (const auto& d : damages) {
    SCOPED_TRACE(d.what);
    WriteFile(path, original);
    FlipByte(path, d.at, 0x10);
    auto reader = ShardReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::shared_ptr<const std::string> block;
    RecordView view;
    Status s = (*reader)->ReadBlockRecord(victim, &block, &view);
    ASSERT_EQ(s.code(), Code::kDataLoss) << s.ToString();
    EXPECT_NE(s.message().find(path), std::string::npos);
    EXPECT_NE(s.message().find(d.found), std::string::npos) << s.ToString();
    // Only the damaged block's records fail; the others are served.
    const std::vector<uint64_t> failed = ReadAll(**reader, samples);
    ASSERT_FALSE(failed.empty());
    for (uint64_t i : failed) EXPECT_EQ((*reader)->RecordRange(i), (*intact)->RecordRange(victim)) << i;
    EXPECT_EQ((*reader)->VerifyFile().code(), Code::kDataLoss);
  }
}

TEST(ShardBlocksTest, RandomByteFlipsNeverServeWrongBytes) {
  TempDir dir;
  const std::string path = dir.Join("s");
  const std::vector<Sample> samples = CompressibleSamples(7, 60);
  WriteCompressed(path, 7, samples, 1024);
  const std::string original = ReadFile(path);
  std::mt19937_64 rng(3);
  for (int round = 0; round < 200; ++round) {
    const uint64_t at = rng() % original.size();
    const uint8_t mask = static_cast<uint8_t>(1 + rng() % 255);
    SCOPED_TRACE(::testing::Message() << "offset " << at << " mask " << int{mask});
    std::string damaged = original;
    damaged[at] = static_cast<char>(damaged[at] ^ mask);
    WriteFile(path, damaged);
    auto reader = ShardReader::Open(path);
    if (!reader.ok()) {
      EXPECT_EQ(reader.status().code(), Code::kDataLoss);
      continue;
    }
    ReadAll(**reader, samples);  // each record exact or DataLoss
    EXPECT_EQ((*reader)->VerifyFile().code(), Code::kDataLoss);
  }
}

TEST(ShardBlocksTest, CompressionChoicesAreValidated) {
  EXPECT_TRUE(ValidateCompression(v1::COMPRESSION_NONE, 0).ok());
  EXPECT_TRUE(ValidateCompression(v1::COMPRESSION_ZSTD, 0).ok());
  EXPECT_TRUE(ValidateCompression(v1::COMPRESSION_ZSTD, 19).ok());
  EXPECT_EQ(ValidateCompression(v1::COMPRESSION_ZSTD, 20).code(), Code::kInvalidArgument);
  EXPECT_EQ(ValidateCompression(v1::COMPRESSION_ZSTD, -1).code(), Code::kInvalidArgument);
  EXPECT_EQ(ValidateCompression(v1::COMPRESSION_NONE, 3).code(), Code::kInvalidArgument);
  EXPECT_EQ(ValidateCompression(static_cast<v1::Compression>(7), 0).code(), Code::kInvalidArgument);
  TempDir dir;
  ShardWriteOptions options;
  options.compression = static_cast<v1::Compression>(7);
  EXPECT_EQ(ShardWriter::Create(dir.Join("s"), Identity(0), options).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata
