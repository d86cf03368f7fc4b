// OpenVersion's map of a sealed version: which shard holds an id, and which
// place in the list a shard's seq has. A version written by several writers
// numbers writer w's shards from w * PartSeqSpan, so a seq is not a place.
#include <gtest/gtest.h>

#include "server/storage/dataset_cache.h"

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

}  // namespace
}  // namespace strata
