#include "server/storage/shard_format.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <random>
#include <vector>

#include "common/little_endian.h"
#include "tests/server/storage/shard_test_util.h"

namespace strata {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::AppendSample;
using testing::DirEntries;
using testing::ExpectSampleEq;
using testing::FlipByte;
using testing::Identity;
using testing::MakeSample;
using testing::MakeSamples;
using testing::ReadFile;
using testing::Sample;
using testing::TempDir;
using testing::WriteFile;
using testing::WriteShard;
using testing::WriteSmallShard;

TEST(ShardFormatTest, RoundTripsManyRecords) {
  TempDir dir;
  std::vector<Sample> samples = MakeSamples(1000, 3000, 1);
  std::mt19937_64 rng(2);
  // Sizes around the writer's staging thresholds (256 KiB direct write, 1 MiB flush).
  samples[7] = MakeSample(1007, 7, rng, {3 << 20, 0, 10});
  samples[8] = MakeSample(1008, 8, rng, {300 << 10, 12});
  samples[9] = MakeSample(1009, 9, rng, {(256 << 10) - 1});
  samples[10] = MakeSample(1010, 10, rng, {0, 0, 0});
  const std::string path = dir.Join("shard-0007");
  const ShardSummary summary = WriteShard(path, 1000, samples);

  auto reader = ShardReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const ShardReader& r = **reader;
  uint64_t payload_bytes = 0;
  for (const Sample& s : samples) {
    for (const std::string& f : s.fields) payload_bytes += f.size();
  }
  EXPECT_EQ(summary.records, samples.size());
  EXPECT_EQ(summary.payload_bytes, payload_bytes);
  EXPECT_EQ(summary.file_bytes, std::filesystem::file_size(path));
  EXPECT_EQ(summary.file_checksum, r.file_checksum());
  EXPECT_EQ(r.file_size(), summary.file_bytes);
  EXPECT_EQ(r.first_id(), 1000u);
  EXPECT_EQ(r.num_records(), samples.size());
  EXPECT_EQ(r.footer().dataset(), "images");
  EXPECT_EQ(r.footer().version(), 3u);
  EXPECT_EQ(r.footer().seq(), 7u);
  EXPECT_EQ(r.footer().payload_bytes(), payload_bytes);
  for (uint64_t i = 0; i < samples.size(); ++i) {
    SCOPED_TRACE(i);
    RecordView view;
    ASSERT_TRUE(r.Read(i, &view).ok());
    ExpectSampleEq(view, samples[i]);
    EXPECT_EQ(r.RawRecord(i).size(), 4 + LoadU32(r.RawRecord(i).data()) + view.payload.size() + 8);
  }
  EXPECT_TRUE(r.VerifyFile().ok());
}

TEST(ShardFormatTest, EmptyShardRoundTrips) {
  TempDir dir;
  const ShardSummary summary = WriteShard(dir.Join("empty"), 42, {});
  EXPECT_EQ(summary.records, 0u);
  EXPECT_EQ(summary.payload_bytes, 0u);
  auto reader = ShardReader::Open(dir.Join("empty"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->num_records(), 0u);
  EXPECT_EQ((*reader)->first_id(), 42u);
  EXPECT_EQ((*reader)->file_size(), summary.file_bytes);
  EXPECT_TRUE((*reader)->VerifyFile().ok());
  RecordView view;
  EXPECT_EQ((*reader)->Read(0, &view).code(), Code::kOutOfRange);
}

TEST(ShardFormatTest, FileAppearsOnlyAfterFinish) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  auto writer = ShardWriter::Create(path, Identity(0));
  ASSERT_TRUE(writer.ok());
  for (const Sample& s : MakeSamples(0, 50, 3)) ASSERT_TRUE(AppendSample(**writer, s).ok());
  std::vector<std::string> during = DirEntries(dir.path());
  ASSERT_EQ(during.size(), 1u);
  EXPECT_EQ(during[0].rfind(".tmp.shard.", 0), 0u) << during[0];
  EXPECT_FALSE(std::filesystem::exists(path));
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ(DirEntries(dir.path()), std::vector<std::string>{"shard"});
}

TEST(ShardFormatTest, DestructorWithoutFinishLeavesNoFiles) {
  TempDir dir;
  {
    auto writer = ShardWriter::Create(dir.Join("shard"), Identity(0));
    ASSERT_TRUE(writer.ok());
    for (const Sample& s : MakeSamples(0, 20, 4)) ASSERT_TRUE(AppendSample(**writer, s).ok());
  }
  EXPECT_TRUE(DirEntries(dir.path()).empty());
}

TEST(ShardFormatTest, CreateOverExistingPathIsAlreadyExists) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  WriteFile(path, "someone else's");
  EXPECT_EQ(ShardWriter::Create(path, Identity(0)).status().code(), Code::kAlreadyExists);

  // A file that appears while the writer runs is not replaced either.
  const std::string late = dir.Join("late");
  auto writer = ShardWriter::Create(late, Identity(0));
  ASSERT_TRUE(writer.ok());
  WriteFile(late, "first");
  EXPECT_EQ((*writer)->Finish().status().code(), Code::kAlreadyExists);
  EXPECT_EQ(ReadFile(late), "first");
  EXPECT_EQ(DirEntries(dir.path()).size(), 2u);  // no temporary left behind
}

TEST(ShardFormatTest, BareFileNameWritesIntoWorkingDirectory) {
  TempDir dir;
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  const ShardSummary summary = WriteShard("shard", 0, MakeSamples(0, 5, 8));
  std::filesystem::current_path(cwd);
  EXPECT_EQ(summary.records, 5u);
  EXPECT_EQ(DirEntries(dir.path()), std::vector<std::string>{"shard"});
}

TEST(ShardFormatTest, CreateInMissingDirectoryIsNotFound) {
  TempDir dir;
  EXPECT_EQ(ShardWriter::Create(dir.Join("no/such/shard"), Identity(0)).status().code(), Code::kNotFound);
}

TEST(ShardFormatTest, AppendPreconditionsAreInvalidArgument) {
  TempDir dir;
  auto writer = ShardWriter::Create(dir.Join("shard"), Identity(10));
  ASSERT_TRUE(writer.ok());
  ShardWriter& w = **writer;
  Sample s = MakeSamples(10, 4, 5)[3];  // three fields
  std::vector<std::string_view> views(s.fields.begin(), s.fields.end());

  EXPECT_EQ(w.Append(s.header, views).code(), Code::kInvalidArgument);  // id 13, expected 10
  s.header.set_id(10);
  EXPECT_EQ(w.Append(s.header, std::span(views).first(2)).code(), Code::kInvalidArgument);
  v1::RecordHeader wrong_size = s.header;
  wrong_size.set_field_sizes(1, s.fields[1].size() + 1);
  EXPECT_EQ(w.Append(wrong_size, views).code(), Code::kInvalidArgument);
  EXPECT_EQ(w.records(), 0u);

  ASSERT_TRUE(w.Append(s.header, views).ok());  // rejected appends left the writer usable
  ASSERT_TRUE(w.Finish().ok());
  s.header.set_id(11);
  EXPECT_EQ(w.Append(s.header, views).code(), Code::kInvalidArgument);
  EXPECT_EQ(w.Finish().status().code(), Code::kInvalidArgument);
  auto reader = ShardReader::Open(dir.Join("shard"));
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->num_records(), 1u);
}

// protobuf would write these headers but refuse to parse them back.
TEST(ShardFormatTest, NonUtf8HeaderStringsAreInvalidArgument) {
  TempDir dir;
  auto writer = ShardWriter::Create(dir.Join("shard"), Identity(0));
  ASSERT_TRUE(writer.ok());
  const std::string bad[] = {"\xFF", "a\xC3", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"};
  for (const std::string& b : bad) {
    v1::RecordHeader h;
    h.set_label(b);
    EXPECT_EQ((*writer)->Append(h, {}).code(), Code::kInvalidArgument);
    h.clear_label();
    (*h.mutable_attributes())["k"] = b;
    EXPECT_EQ((*writer)->Append(h, {}).code(), Code::kInvalidArgument);
  }
  v1::RecordHeader good;
  good.set_label("caf\xC3\xA9 \xF0\x9F\x99\x82");
  EXPECT_TRUE((*writer)->Append(good, {}).ok());
}

TEST(ShardFormatTest, PayloadOver4GiBIsInvalidArgument) {
  // Address space only: the writer rejects the sizes before touching the bytes.
  const size_t huge = (size_t{4} << 30) + 1;
  void* map = mmap(nullptr, huge, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  TempDir dir;
  auto writer = ShardWriter::Create(dir.Join("shard"), Identity(0));
  ASSERT_TRUE(writer.ok());
  v1::RecordHeader header;
  header.add_field_sizes(huge);
  std::string_view field(static_cast<const char*>(map), huge);
  EXPECT_EQ((*writer)->Append(header, std::span(&field, 1)).code(), Code::kInvalidArgument);
  munmap(map, huge);
}

TEST(ShardFormatTest, DamagedRecordIsCorruptionAndOthersStillRead) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  const std::vector<Sample> samples = WriteSmallShard(path);
  const std::string original = ReadFile(path);
  auto intact = ShardReader::Open(path);
  ASSERT_TRUE(intact.ok());
  const uint64_t victim = 6;  // two fields
  const uint64_t offset = (*intact)->RecordOffset(victim);
  const std::string_view raw = (*intact)->RawRecord(victim);
  const uint32_t header_len = LoadU32(raw.data());
  const uint64_t payload_len = raw.size() - 12 - header_len;
  ASSERT_GT(payload_len, 0u);

  const struct {
    const char* what;
    uint64_t at;
    uint8_t mask;
  } damages[] = {
      {"payload", offset + 4 + header_len + payload_len / 2, 0x01},
      {"header", offset + 4 + header_len / 2, 0x20},
      {"checksum", offset + raw.size() - 3, 0x80},
      {"length prefix low", offset, 0x01},
      {"length prefix high", offset + 3, 0x80},
  };
  for (const auto& d : damages) {
    SCOPED_TRACE(d.what);
    WriteFile(path, original);
    FlipByte(path, d.at, d.mask);
    auto reader = ShardReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    RecordView view;  // reused: a failed Read must not leave the previous record's bytes
    for (uint64_t i = 0; i < samples.size(); ++i) {
      Status status = (*reader)->Read(i, &view);
      if (i == victim) {
        EXPECT_EQ(status.code(), Code::kDataLoss) << status.ToString();
        EXPECT_NE(status.message().find(path), std::string::npos);
        EXPECT_TRUE(view.payload.empty());
        EXPECT_TRUE(view.field_sizes.empty());
      } else {
        ASSERT_TRUE(status.ok()) << status.ToString();
        ExpectSampleEq(view, samples[i]);
      }
    }
    EXPECT_EQ((*reader)->VerifyFile().code(), Code::kDataLoss);
  }
}

TEST(ShardFormatTest, DamagedFileHeaderFooterOrTrailerFailsOpen) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  WriteSmallShard(path);
  const std::string original = ReadFile(path);
  auto intact = ShardReader::Open(path);
  ASSERT_TRUE(intact.ok());
  const uint64_t footer_offset = (*intact)->RecordOffset(11) + (*intact)->RawRecord(11).size();
  const uint64_t trailer_offset = original.size() - kShardTrailerSize;
  // The trailer's file checksum is only checked by VerifyFile(): Open does not
  // read the records. Nor does it hash the offset table (format 3): a read
  // checks the entries it uses.
  const uint64_t file_sum_begin = trailer_offset + 24, file_sum_end = trailer_offset + 32;
  const uint64_t table_begin = footer_offset + 8, table_end = table_begin + 8 * (*intact)->num_records();

  std::vector<uint64_t> offsets;
  for (uint64_t at = 0; at < kShardHeaderSize; ++at) offsets.push_back(at);
  for (uint64_t at = footer_offset; at < original.size(); ++at) offsets.push_back(at);
  for (uint64_t at : offsets) {
    SCOPED_TRACE(at);
    WriteFile(path, original);
    FlipByte(path, at, 0x04);
    auto reader = ShardReader::Open(path);
    if (at >= file_sum_begin && at < file_sum_end) {
      ASSERT_TRUE(reader.ok());
      EXPECT_EQ((*reader)->VerifyFile().code(), Code::kDataLoss);
    } else if (at >= table_begin && at < table_end) {
      const uint64_t entry = (at - table_begin) / 8;
      if (!reader.ok()) {  // the first entry and the last one's bounds are checked at open
        EXPECT_EQ(reader.status().code(), Code::kDataLoss) << reader.status().ToString();
        EXPECT_TRUE(entry == 0 || entry + 1 == (*intact)->num_records()) << entry;
        continue;
      }
      ASSERT_TRUE(reader.ok()) << reader.status().ToString();
      EXPECT_EQ((*reader)->VerifyFile().code(), Code::kDataLoss);
      RecordView view;
      EXPECT_EQ((*reader)->Read(entry, &view).code(), Code::kDataLoss) << "the record whose offset it is";
    } else {
      EXPECT_EQ(reader.status().code(), Code::kDataLoss) << reader.status().ToString();
    }
  }
}

TEST(ShardFormatTest, TruncatedFileFailsOpen) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  WriteSmallShard(path);
  const std::string original = ReadFile(path);
  for (uint64_t len : {uint64_t{0}, uint64_t{1}, uint64_t{15}, uint64_t{16}, uint64_t{17}, uint64_t{55},
                       original.size() / 2, original.size() - 41, original.size() - 40, original.size() - 1}) {
    SCOPED_TRACE(len);
    WriteFile(path, original.substr(0, len));
    EXPECT_EQ(ShardReader::Open(path).status().code(), Code::kDataLoss);
  }
  WriteFile(path, original + "x");
  EXPECT_EQ(ShardReader::Open(path).status().code(), Code::kDataLoss);
}

TEST(ShardFormatTest, OpenMissingFileIsNotFound) {
  TempDir dir;
  EXPECT_EQ(ShardReader::Open(dir.Join("absent")).status().code(), Code::kNotFound);
}

TEST(ShardFormatTest, ReadPastEndIsOutOfRange) {
  TempDir dir;
  WriteSmallShard(dir.Join("shard"));
  auto reader = ShardReader::Open(dir.Join("shard"));
  ASSERT_TRUE(reader.ok());
  RecordView view;
  EXPECT_EQ((*reader)->Read(12, &view).code(), Code::kOutOfRange);
  EXPECT_EQ((*reader)->Read(UINT64_MAX, &view).code(), Code::kOutOfRange);
}

TEST(ShardFormatTest, MissingFieldsAreEmptyViews) {
  TempDir dir;
  const std::vector<Sample> samples = WriteSmallShard(dir.Join("shard"));
  auto reader = ShardReader::Open(dir.Join("shard"));
  ASSERT_TRUE(reader.ok());
  RecordView view;
  ASSERT_TRUE((*reader)->Read(1, &view).ok());  // one field
  EXPECT_EQ(view.field("image"), samples[1].fields[0]);
  EXPECT_TRUE(view.field("text").empty());
  EXPECT_TRUE(view.field(1).empty());
  EXPECT_TRUE(view.field(-1).empty());
}

// Every single-byte flip is caught by Open or VerifyFile, and a Read that
// succeeds returns exactly the original bytes.
TEST(ShardFormatTest, RandomByteFlipsAreDetected) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  const std::vector<Sample> samples = WriteSmallShard(path);
  const std::string original = ReadFile(path);
  std::mt19937_64 rng(7);
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
    for (uint64_t i = 0; i < samples.size(); ++i) {
      RecordView view;
      Status status = (*reader)->Read(i, &view);
      if (status.ok()) {
        ExpectSampleEq(view, samples[i]);
      } else {
        EXPECT_EQ(status.code(), Code::kDataLoss);
      }
    }
    EXPECT_EQ((*reader)->VerifyFile().code(), Code::kDataLoss);
  }
}

}  // namespace
}  // namespace strata
