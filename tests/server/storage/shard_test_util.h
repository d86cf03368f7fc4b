// Helpers for the shard format tests: varied samples, written shards, and
// comparisons of what a reader returns with what was written.
#pragma once

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/shard_format.h"
#include "tests/support/temp_dir.h"

namespace strata::testing {

struct Sample {
  v1::RecordHeader header;
  std::vector<std::string> fields;
};

inline constexpr const char* kFieldNames[] = {"image", "text", "meta", "extra"};

// Valid UTF-8 of roughly n bytes, some of it multi-byte.
inline std::string RandomText(std::mt19937_64& rng, size_t n) {
  static constexpr const char* kPieces[] = {"a", "Z", "0", " ", "\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F\x99\x82"};
  std::string s;
  while (s.size() < n) s += kPieces[rng() % std::size(kPieces)];
  return s;
}

inline std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Record `index` of a test shard: varied labels and attributes, 0..3 fields,
// some of them empty. `sizes` overrides the field sizes when not empty.
inline Sample MakeSample(uint64_t id, uint64_t index, std::mt19937_64& rng, std::vector<size_t> sizes = {}) {
  if (sizes.empty()) {
    for (uint64_t f = 0; f < index % 4; ++f) sizes.push_back((index + f) % 5 == 0 ? 0 : rng() % 300);
  }
  Sample s;
  s.header.set_id(id);
  s.header.set_key("key-" + std::to_string(index) + RandomText(rng, index % 4));
  s.header.set_label(index % 3 == 0 ? "" : "label-" + std::to_string(index % 7));
  s.header.set_stratum(index % 2 == 0 ? "train" : "holdout");
  for (uint64_t a = 0; a < index % 3; ++a)
    (*s.header.mutable_attributes())["attr" + std::to_string(a)] = RandomText(rng, a * 5);
  for (size_t f = 0; f < sizes.size(); ++f) {
    s.header.add_field_names(kFieldNames[f]);
    s.header.add_field_sizes(sizes[f]);
    s.fields.push_back(RandomBytes(rng, sizes[f]));
  }
  return s;
}

inline std::vector<Sample> MakeSamples(uint64_t first_id, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Sample> samples;
  for (uint64_t i = 0; i < n; ++i) samples.push_back(MakeSample(first_id + i, i, rng));
  return samples;
}

inline Status AppendSample(ShardWriter& writer, const Sample& s) {
  std::vector<std::string_view> views(s.fields.begin(), s.fields.end());
  return writer.Append(s.header, views);
}

inline ShardIdentity Identity(uint64_t first_id) { return {"images", 3, 7, first_id}; }

inline ShardSummary WriteShard(const std::string& path, uint64_t first_id, const std::vector<Sample>& samples) {
  auto writer = ShardWriter::Create(path, Identity(first_id));
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  for (const Sample& s : samples) EXPECT_TRUE(AppendSample(**writer, s).ok());
  auto summary = (*writer)->Finish();
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  return *summary;
}

inline void ExpectSampleEq(const RecordView& view, const Sample& s) {
  v1::RecordHeader header;
  ASSERT_TRUE(view.ParseHeader(&header).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(header, s.header)) << header.DebugString();
  // The serving fields, read as views without the message.
  EXPECT_EQ(view.id, s.header.id());
  EXPECT_EQ(view.label, s.header.label());
  EXPECT_EQ(view.stratum, s.header.stratum());
  EXPECT_TRUE(std::equal(view.field_names.begin(), view.field_names.end(), s.header.field_names().begin(),
                         s.header.field_names().end()));
  EXPECT_TRUE(std::equal(view.field_sizes.begin(), view.field_sizes.end(), s.header.field_sizes().begin(),
                         s.header.field_sizes().end()));
  ASSERT_EQ(view.field_sizes.size(), s.fields.size());
  std::string payload;
  for (size_t f = 0; f < s.fields.size(); ++f) {
    EXPECT_EQ(view.field(static_cast<int>(f)), s.fields[f]);
    EXPECT_EQ(view.field(kFieldNames[f]), s.fields[f]);
    payload += s.fields[f];
  }
  EXPECT_EQ(view.payload, payload);
}

inline std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

// Writes a small shard and returns its samples.
inline std::vector<Sample> WriteSmallShard(const std::string& path) {
  std::vector<Sample> samples = MakeSamples(500, 12, 6);
  WriteShard(path, 500, samples);
  return samples;
}

// Writes `records` records with ids 0.. at `path`, record i holding one
// field "x" of `payload` bytes of the letter 'a' + i % 26
// (UniformPayload), and opens it.
inline std::string UniformPayload(uint64_t i, size_t payload) {
  return std::string(payload, static_cast<char>('a' + i % 26));
}
inline std::shared_ptr<const ShardReader> WriteUniformShard(const std::string& path, uint64_t records, size_t payload) {
  auto writer = ShardWriter::Create(path, ShardIdentity{"ds", 1, 0, 0});
  EXPECT_TRUE(writer.ok());
  if (!writer.ok()) return nullptr;
  for (uint64_t i = 0; i < records; ++i) {
    v1::RecordHeader h;
    h.set_id(i);
    h.add_field_names("x");
    h.add_field_sizes(payload);
    const std::string bytes = UniformPayload(i, payload);
    const std::string_view field = bytes;
    EXPECT_TRUE((*writer)->Append(h, std::span<const std::string_view>(&field, 1)).ok());
  }
  EXPECT_TRUE((*writer)->Finish().ok());
  auto reader = ShardReader::Open(path);
  EXPECT_TRUE(reader.ok());
  if (!reader.ok()) return nullptr;
  return std::shared_ptr<const ShardReader>(std::move(reader).value());
}

}  // namespace strata::testing
