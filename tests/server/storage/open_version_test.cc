// OpenVersion's map of a sealed version: which shard holds an id, and which
// place in the list a shard's seq has. A version written by several writers
// numbers writer w's shards from w * PartSeqSpan, so a seq is not a place.
// And its readers, opened several at once for a stream's first step, and kept
// open within a budget.
#include <gtest/gtest.h>
#include <sys/resource.h>
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

// A version of `shards` shards of 10 samples each, written under `dir`.
struct WrittenVersion {
  v1::VersionRecord record;
  std::vector<v1::ShardRecord> shards;
};
WrittenVersion WriteVersion(const DataDir& dir, uint32_t shards) {
  WrittenVersion v;
  v.record.mutable_info()->set_name("ds");
  v.record.mutable_info()->set_version(1);
  v.record.mutable_info()->set_samples(10 * shards);
  for (uint32_t seq = 0; seq < shards; ++seq) v.shards.push_back(WriteShard(dir, seq, 10 * seq, 10));
  return v;
}

TEST(OpenVersionTest, ABudgetKeepsTheReadersUsedLastWithinItsLimit) {
  testing::TempDir tmp;
  const DataDir dir(tmp.path());
  const WrittenVersion w = WriteVersion(dir, 6);
  const size_t open_before = ShardReader::OpenCount();
  auto budget = std::make_shared<ReaderBudget>(4);  // trims to 3 once a fifth opens
  const auto version = std::make_shared<const OpenVersion>(w.record, w.shards, &dir, budget);
  const OpenVersion& v = *version;
  std::vector<const ShardReader*> first(6, nullptr);
  for (size_t i = 0; i < 4; ++i) first[i] = v.Reader(i).value().get();
  EXPECT_EQ(budget->kept(), 4u);
  ASSERT_EQ(v.Reader(0).value().get(), first[0]);  // 0 is now used after 1, 2 and 3
  first[4] = v.Reader(4).value().get();            // a fifth: 1 and 2, used least recently, go
  EXPECT_EQ(budget->kept(), 3u);
  EXPECT_EQ(ShardReader::OpenCount() - open_before, 3u) << "the readers let go are closed";
  EXPECT_EQ(v.Reader(0).value().get(), first[0]);
  EXPECT_EQ(v.Reader(3).value().get(), first[3]);
  EXPECT_EQ(v.Reader(4).value().get(), first[4]);
  // One let go opens again when it is used, as a new reader.
  auto again = v.Reader(1);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->num_records(), 10u);
  EXPECT_FALSE((*again)->retired());
  EXPECT_EQ(budget->kept(), 4u);
  // A reader a caller still holds when it is let go stays open for that
  // caller, retired, and closes when the caller drops it.
  auto held = v.Reader(5);  // the fifth again: 0, used least recently, goes
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(budget->kept(), 3u);
  const std::shared_ptr<const ShardReader> five = held.value();
  held = Status::Internal("dropped");
  EXPECT_FALSE(five->retired());
  for (size_t i : {1, 3, 4, 0}) ASSERT_TRUE(v.Reader(i).ok());  // 5 is now used least recently
  EXPECT_TRUE(five->retired());
  EXPECT_EQ(v.Reader(5).value()->retired(), false) << "a new reader, not the retired one";
}

TEST(OpenVersionTest, OutOfDescriptorsTheBudgetLetsGoOfEveryReaderAndOpensOnce) {
  testing::TempDir tmp;
  const DataDir dir(tmp.path());
  const WrittenVersion w = WriteVersion(dir, 12);
  auto budget = std::make_shared<ReaderBudget>(100);  // far more than this test opens
  const auto version = std::make_shared<const OpenVersion>(w.record, w.shards, &dir, budget);
  const OpenVersion& v = *version;
  for (size_t i = 0; i < 11; ++i) ASSERT_TRUE(v.Reader(i).ok());
  EXPECT_EQ(budget->kept(), 11u);
  // The process may open no more files: the next reader cannot open until
  // the kept ones are let go.
  struct rlimit before {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  const int lowest_free = ::dup(0);  // a new descriptor takes the lowest number free
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  struct rlimit tight = before;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);  // no number below the limit is free
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
  auto reader = v.Reader(11);
  const size_t kept = budget->kept();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &before), 0);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->first_id(), 110u);
  EXPECT_EQ(kept, 1u);
}

}  // namespace
}  // namespace strata
