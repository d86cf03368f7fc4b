// OpenVersion's map of a sealed version: which shard holds an id, and which
// place in the list a shard's seq has. A version written by several writers
// numbers writer w's shards from w * PartSeqSpan, so a seq is not a place.
// And its readers, opened several at once for a stream's first step.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "server/storage/dataset_cache.h"
#include "server/storage/shard_format.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

v1::ShardRecord Shard(uint32_t seq, uint64_t first_id, uint64_t samples) {
  v1::ShardRecord r;
  r.mutable_info()->set_seq(seq);
  r.mutable_info()->set_first_id(first_id);
  r.mutable_info()->set_samples(samples);
  return r;
}

TEST(OpenVersionTest, FindsAShardByItsSeqWhenSeqsAreNotPlaces) {
  const uint32_t span = 500000;  // PartSeqSpan(2)
  v1::VersionRecord record;
  record.mutable_info()->set_name("parts");
  record.mutable_info()->set_version(1);
  record.mutable_info()->set_samples(100);
  // Writer 0 cut two shards, writer 1 three.
  const DataDir dir("/nonexistent");
  OpenVersion v(
      record,
      {Shard(0, 0, 20), Shard(1, 20, 20), Shard(span, 40, 20), Shard(span + 1, 60, 20), Shard(span + 2, 80, 20)}, &dir);
  EXPECT_EQ(v.IndexOf(0), 0u);
  EXPECT_EQ(v.IndexOf(1), 1u);
  EXPECT_EQ(v.IndexOf(span), 2u);
  EXPECT_EQ(v.IndexOf(span + 2), 4u);
  EXPECT_FALSE(v.IndexOf(2).has_value()) << "place 2 is seq " << span;
  EXPECT_FALSE(v.IndexOf(4).has_value());
  EXPECT_FALSE(v.IndexOf(span + 3).has_value());
  EXPECT_FALSE(v.IndexOf(span - 1).has_value());
  // Locate gives both: the place, and the seq the file is named by.
  const OpenVersion::Location at = v.Locate(65);
  EXPECT_EQ(at.shard, 3u);
  EXPECT_EQ(at.seq, span + 1);
  EXPECT_EQ(at.record, 5u);
}

TEST(OpenVersionTest, AVersionWithoutShardsHasNoSeq) {
  v1::VersionRecord record;
  const DataDir dir("/nonexistent");
  OpenVersion v(record, {}, &dir);
  EXPECT_FALSE(v.IndexOf(0).has_value());
}

// Writes shard `seq` of ds@1 (ids first_id.., `samples` records) where the
// data directory `dir` keeps it, and returns its record.
v1::ShardRecord WriteShard(const DataDir& dir, uint32_t seq, uint64_t first_id, uint64_t samples) {
  v1::ShardRecord r = Shard(seq, first_id, samples);
  r.set_path(dir.ShardRelativePath("ds", 1, seq));
  std::filesystem::create_directories(std::filesystem::path(dir.Absolute(r.path())).parent_path());
  auto writer = ShardWriter::Create(dir.Absolute(r.path()), ShardIdentity{"ds", 1, seq, first_id});
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  for (uint64_t i = 0; i < samples; ++i) {
    v1::RecordHeader h;
    h.set_id(first_id + i);
    h.add_field_names("x");
    const std::string payload = "sample " + std::to_string(first_id + i);
    h.add_field_sizes(payload.size());
    const std::string_view field = payload;
    EXPECT_TRUE((*writer)->Append(h, std::span<const std::string_view>(&field, 1)).ok());
  }
  EXPECT_TRUE((*writer)->Finish().ok());
  return r;
}

TEST(OpenVersionTest, OpenReadersOpensTheShardsItIsGivenAndLeavesErrorsToReader) {
  testing::TempDir tmp;
  const DataDir dir(tmp.path());
  v1::VersionRecord record;
  record.mutable_info()->set_name("ds");
  record.mutable_info()->set_version(1);
  record.mutable_info()->set_samples(60);
  std::vector<v1::ShardRecord> shards;
  for (uint32_t seq = 0; seq < 5; ++seq) shards.push_back(WriteShard(dir, seq, 10 * seq, 10));
  v1::ShardRecord missing = Shard(5, 50, 10);  // listed, never written
  missing.set_path(dir.ShardRelativePath("ds", 1, 5));
  shards.push_back(missing);
  const OpenVersion v(record, shards, &dir);

  // Repeats, the missing shard and an index past the end are all allowed.
  // Shard 4 is left out: it opens on its first Reader, as before.
  v.OpenReaders({3, 0, 1, 1, 2, 5, 99, 0});
  // What was opened stays open once its file is gone (the reader keeps the
  // mapping); what was not cannot be opened any more.
  for (const auto& s : shards) ::unlink(dir.Absolute(s.path()).c_str());
  for (size_t i = 0; i < 4; ++i) {
    auto reader = v.Reader(i);
    ASSERT_TRUE(reader.ok()) << "shard " << i << ": " << reader.status().ToString();
    EXPECT_EQ((*reader)->num_records(), 10u);
    EXPECT_EQ((*reader)->first_id(), 10 * i);
  }
  EXPECT_TRUE(v.Reader(4).status().IsNotFound()) << v.Reader(4).status().ToString();
  EXPECT_TRUE(v.Reader(5).status().IsNotFound()) << v.Reader(5).status().ToString();
  // Nothing left to open: no thread is started, nothing changes.
  v.OpenReaders({0, 1, 2, 3});
  EXPECT_TRUE(v.Reader(2).ok());
}

}  // namespace
}  // namespace strata
