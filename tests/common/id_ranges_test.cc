#include "common/id_ranges.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace strata {
namespace {

// What IdRanges must agree with: the last shard whose first id is at most id.
size_t Expected(const std::vector<uint64_t>& firsts, uint64_t id) {
  return static_cast<size_t>(std::upper_bound(firsts.begin(), firsts.end(), id) - firsts.begin()) - 1;
}

void ExpectAgrees(const std::vector<uint64_t>& firsts, uint64_t end) {
  const IdRanges ranges(firsts);
  ASSERT_EQ(ranges.size(), firsts.size());
  for (size_t i = 0; i < firsts.size(); ++i) EXPECT_EQ(ranges.first(i), firsts[i]);
  // Every shard's first and last ids and their neighbours, then random ids.
  std::vector<uint64_t> ids;
  for (uint64_t f : firsts) {
    for (uint64_t d : {0, 1, 2}) {
      ids.push_back(f + d);
      if (f >= d) ids.push_back(f - d);
    }
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) ids.push_back(rng() % (end + end / 2 + 1));
  for (uint64_t id : ids) ASSERT_EQ(ranges.Find(id), Expected(firsts, id)) << "id " << id;
}

TEST(IdRangesTest, ShardsOfOneSize) {
  std::vector<uint64_t> firsts;
  for (uint64_t f = 0; f < 1000000; f += 58824) firsts.push_back(f);
  ExpectAgrees(firsts, 1000000);
}

TEST(IdRangesTest, OneShard) {
  ExpectAgrees({0}, 1000);
  const IdRanges one({0});
  EXPECT_EQ(one.Find(0), 0u);
  EXPECT_EQ(one.Find(~uint64_t{0}), 0u);
}

TEST(IdRangesTest, ShardsOfMixedSizesAndEmptyOnes) {
  // Several writers: each writer's last shard is short, and a shard may be
  // empty (its first id equals the next one's): the holder is the last of them.
  ExpectAgrees({0, 0, 5000, 10000, 10003, 10003, 10003, 15003, 20003, 20004, 20005, 20006, 20007, 90000}, 100000);
  const IdRanges ranges({0, 10, 10, 20});
  EXPECT_EQ(ranges.Find(9), 0u);
  EXPECT_EQ(ranges.Find(10), 2u);
  EXPECT_EQ(ranges.Find(25), 3u);
}

TEST(IdRangesTest, RandomShardLists) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    const size_t n = 1 + rng() % 64;
    std::vector<uint64_t> firsts{0};
    uint64_t next = 0;
    for (size_t i = 1; i < n; ++i) {
      // Mostly one size, sometimes tiny or huge.
      const uint64_t size = rng() % 8 == 0 ? rng() % 3 : (rng() % 8 == 0 ? 1 + rng() % 1000000 : 1000 + rng() % 50);
      next += size;
      firsts.push_back(next);
    }
    ExpectAgrees(firsts, next + 1000);
  }
}

TEST(IdRangesTest, HugeIdsKeepTheTableSmall) {
  // A span of 2^60 ids in a few shards: the lookup table is bounded, and
  // lookups still agree.
  const std::vector<uint64_t> firsts{0, uint64_t{1} << 40, uint64_t{1} << 59, (uint64_t{1} << 59) + 3};
  ExpectAgrees(firsts, uint64_t{1} << 60);
}

TEST(IdRangesTest, IdsNearTheTopOfTheRange) {
  // A client builds its ranges from a node's shard list: first ids near 2^64
  // must neither wrap the table's span nor misplace an id.
  const uint64_t top = ~uint64_t{0};
  const IdRanges ranges({0, top - 2});
  EXPECT_EQ(ranges.Find(0), 0u);
  EXPECT_EQ(ranges.Find(top - 3), 0u);
  EXPECT_EQ(ranges.Find(top - 2), 1u);
  EXPECT_EQ(ranges.Find(top), 1u);
  const IdRanges many({0, 1, top / 2, top - 1, top});
  for (uint64_t id : {uint64_t{0}, uint64_t{1}, top / 2 - 1, top / 2, top - 2, top - 1, top}) {
    const std::vector<uint64_t> firsts{0, 1, top / 2, top - 1, top};
    EXPECT_EQ(many.Find(id), Expected(firsts, id)) << id;
  }
}

}  // namespace
}  // namespace strata
