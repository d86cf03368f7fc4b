#include "common/shard_format.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "common/checksum.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

struct Sample {
  v1::RecordHeader header;
  std::vector<std::string> fields;
};

constexpr const char* kFieldNames[] = {"image", "text", "meta", "extra"};

// Valid UTF-8 of roughly n bytes, some of it multi-byte.
std::string RandomText(std::mt19937_64& rng, size_t n) {
  static constexpr const char* kPieces[] = {"a", "Z", "0", " ", "\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F\x99\x82"};
  std::string s;
  while (s.size() < n) s += kPieces[rng() % std::size(kPieces)];
  return s;
}

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Record `index` of a test shard: varied labels and attributes, 0..3 fields,
// some of them empty. `sizes` overrides the field sizes when not empty.
Sample MakeSample(uint64_t id, uint64_t index, std::mt19937_64& rng, std::vector<size_t> sizes = {}) {
  if (sizes.empty()) {
    for (uint64_t f = 0; f < index % 4; ++f) sizes.push_back((index + f) % 5 == 0 ? 0 : rng() % 300);
  }
  Sample s;
  s.header.set_id(id);
  s.header.set_key("key-" + std::to_string(index) + RandomText(rng, index % 4));
  s.header.set_label(index % 3 == 0 ? "" : "label-" + std::to_string(index % 7));
  s.header.set_stratum(index % 2 == 0 ? "train" : "holdout");
  for (uint64_t a = 0; a < index % 3; ++a) (*s.header.mutable_attributes())["attr" + std::to_string(a)] = RandomText(rng, a * 5);
  for (size_t f = 0; f < sizes.size(); ++f) {
    s.header.add_field_names(kFieldNames[f]);
    s.header.add_field_sizes(sizes[f]);
    s.fields.push_back(RandomBytes(rng, sizes[f]));
  }
  return s;
}

std::vector<Sample> MakeSamples(uint64_t first_id, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Sample> samples;
  for (uint64_t i = 0; i < n; ++i) samples.push_back(MakeSample(first_id + i, i, rng));
  return samples;
}

Status AppendSample(ShardWriter& writer, const Sample& s) {
  std::vector<std::string_view> views(s.fields.begin(), s.fields.end());
  return writer.Append(s.header, views);
}

ShardIdentity Identity(uint64_t first_id) { return {"images", 3, 7, first_id}; }

ShardSummary WriteShard(const std::string& path, uint64_t first_id, const std::vector<Sample>& samples) {
  auto writer = ShardWriter::Create(path, Identity(first_id));
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  for (const Sample& s : samples) EXPECT_TRUE(AppendSample(**writer, s).ok());
  auto summary = (*writer)->Finish();
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  return *summary;
}

void ExpectSampleEq(const RecordView& view, const Sample& s) {
  EXPECT_TRUE(MessageDifferencer::Equals(view.header, s.header)) << view.header.DebugString();
  ASSERT_EQ(view.header.field_sizes_size(), static_cast<int>(s.fields.size()));
  std::string payload;
  for (size_t f = 0; f < s.fields.size(); ++f) {
    EXPECT_EQ(view.field(static_cast<int>(f)), s.fields[f]);
    EXPECT_EQ(view.field(kFieldNames[f]), s.fields[f]);
    payload += s.fields[f];
  }
  EXPECT_EQ(view.payload, payload);
}

std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

void FlipByte(const std::string& path, uint64_t offset, uint8_t mask = 0x01) {
  std::string bytes = ReadFile(path);
  bytes[offset] = static_cast<char>(bytes[offset] ^ mask);
  WriteFile(path, bytes);
}

uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t LoadU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void StoreU32(std::string* bytes, size_t at, uint32_t v) { std::memcpy(bytes->data() + at, &v, sizeof v); }
void StoreU64(std::string* bytes, size_t at, uint64_t v) { std::memcpy(bytes->data() + at, &v, sizeof v); }

// The shard file `v2` rewritten with a new footer (its trailer and checksums
// made to match), as `version` states it: for files older readers wrote, or
// footers damaged in ways their checksum does not catch.
std::string WithFooter(const std::string& v2, uint32_t version, const std::string& footer) {
  const char* t = v2.data() + v2.size() - kShardTrailerSize;
  const uint64_t footer_offset = LoadU64(t);
  std::string out = v2.substr(0, footer_offset) + footer + v2.substr(v2.size() - kShardTrailerSize);
  StoreU32(&out, 8, version);
  const size_t trailer = out.size() - kShardTrailerSize;
  StoreU32(&out, trailer + 8, static_cast<uint32_t>(footer.size()));
  StoreU32(&out, trailer + 12, version);
  StoreU64(&out, trailer + 16, Checksum64(footer));
  StoreU64(&out, trailer + 24, Checksum64(out.data(), footer_offset + footer.size()));
  return out;
}

// The offsets and metadata of a format 2 file.
std::pair<std::vector<uint64_t>, v1::ShardFooter> SplitFooter(const std::string& v2) {
  const char* t = v2.data() + v2.size() - kShardTrailerSize;
  const char* footer = v2.data() + LoadU64(t);
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

TEST(ShardFormatTest, CreateInMissingDirectoryIsIOError) {
  TempDir dir;
  EXPECT_EQ(ShardWriter::Create(dir.Join("no/such/shard"), Identity(0)).status().code(), Code::kIOError);
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

// Writes a small shard and returns its samples.
std::vector<Sample> WriteSmallShard(const std::string& path) {
  std::vector<Sample> samples = MakeSamples(500, 12, 6);
  WriteShard(path, 500, samples);
  return samples;
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
        EXPECT_EQ(view.header.field_sizes_size(), 0);
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
  // The trailer's file checksum is only checked by VerifyFile(): Open does not read the records.
  const uint64_t file_sum_begin = trailer_offset + 24, file_sum_end = trailer_offset + 32;

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

TEST(ShardFormatTest, WritesFormat2WithAFixedWidthOffsetTable) {
  TempDir dir;
  const std::string path = dir.Join("shard");
  WriteSmallShard(path);
  auto reader = ShardReader::Open(path);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->format_version(), 2u);
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
  auto reader = ShardReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->format_version(), 1u);
  ASSERT_EQ((*reader)->num_records(), samples.size());
  for (uint64_t i = 0; i < samples.size(); ++i) {
    RecordView view;
    ASSERT_TRUE((*reader)->Read(i, &view).ok());
    ExpectSampleEq(view, samples[i]);
    EXPECT_EQ((*reader)->RecordOffset(i), offsets[i]);
  }
  EXPECT_TRUE((*reader)->VerifyFile().ok());

  // Format 1 checks the whole offset list when it opens.
  std::swap(offsets[3], offsets[4]);
  meta.clear_record_offsets();
  for (uint64_t offset : offsets) meta.add_record_offsets(offset);
  WriteFile(path, WithFooter(v1_file, 1, meta.SerializeAsString()));
  EXPECT_EQ(ShardReader::Open(path).status().code(), Code::kDataLoss);
}

// A format 2 table whose checksum matches but whose offsets are wrong (a
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
    WriteFile(path, WithFooter(original, 2, TableFooter(c.offsets, meta)));
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
  // A count larger than the table is refused at open.
  std::string footer = TableFooter(offsets, meta);
  StoreU64(&footer, 0, offsets.size() + 1000);
  WriteFile(path, WithFooter(original, 2, footer));
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
