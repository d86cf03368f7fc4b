// BlockCache::StepBlocks: a step's blocks, each once, in the order first met.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "server/storage/block_cache.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using testing::TempDir;

constexpr uint64_t kBlock = 2 << 20;

// StepBlocks only names the readers it is given: a shard of one record will do.
class StepBlocksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Join("000000.shard");
    auto writer = ShardWriter::Create(path_, ShardIdentity{"ds", 1, 0, 0});
    ASSERT_TRUE(writer.ok());
    v1::RecordHeader h;
    h.set_id(0);
    h.add_field_names("x");
    h.add_field_sizes(1);
    const std::string_view field = "a";
    ASSERT_TRUE((*writer)->Append(h, std::span<const std::string_view>(&field, 1)).ok());
    ASSERT_TRUE((*writer)->Finish().ok());
    reader_ = Open();
  }
  std::shared_ptr<const ShardReader> Open() const {
    return std::shared_ptr<const ShardReader>(std::move(ShardReader::Open(path_)).value());
  }
  TempDir dir_;
  std::string path_;
  std::shared_ptr<const ShardReader> reader_;
};

TEST_F(StepBlocksTest, StepBlocksNameEachBlockOnceInTheOrderMet) {
  // Several readers (the same file opened again), ranges at random, some
  // straddling blocks and some empty, over many steps: each step's blocks are
  // those its ranges cover, each once with the bytes the ranges read of it
  // and the first of them, in the order first met; nothing of one step
  // carries into the next.
  std::vector<std::shared_ptr<const ShardReader>> readers{reader_};
  for (int i = 0; i < 3; ++i) readers.push_back(Open());
  // Small blocks: a step of thousands of ranges meets thousands of them, and
  // the table grows, then starts small again.
  constexpr uint64_t kSmall = 4096;
  BlockCache::StepBlocks step(kSmall);
  std::mt19937_64 rng(3);
  for (int round = 0; round < 300; ++round) {
    const size_t ranges = round % 50 == 7 ? 6000 : rng() % 400;
    struct Expected {
      const ShardReader* reader;
      uint64_t block, bytes, first;
    };
    std::vector<Expected> expected;  // in the order first met
    for (size_t i = 0; i < ranges; ++i) {
      const auto& r = readers[rng() % readers.size()];
      const uint64_t begin = rng() % (64 * kBlock);
      const uint64_t end = begin + (rng() % 4 == 0 ? rng() % (3 * kSmall) : rng() % 1024);
      step.Add(r, begin, end);
      for (uint64_t at = begin; at < end;) {  // byte by block, the slow way
        const uint64_t block = at / kSmall;
        const uint64_t stop = std::min(end, (block + 1) * kSmall);
        auto it = std::find_if(expected.begin(), expected.end(),
                               [&](const Expected& e) { return e.reader == r.get() && e.block == block; });
        if (it == expected.end()) {
          expected.push_back({r.get(), block, stop - at, at});
        } else {
          it->bytes += stop - at;
          it->first = std::min(it->first, at);
        }
        at = stop;
      }
    }
    const std::vector<BlockCache::BlockRef> got = step.Take();
    ASSERT_EQ(got.size(), expected.size()) << "round " << round;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].reader.get(), expected[i].reader) << "round " << round << ", block " << i;
      ASSERT_EQ(got[i].block, expected[i].block);
      EXPECT_EQ(got[i].use_bytes, expected[i].bytes);
      EXPECT_EQ(got[i].use_offset, expected[i].first);
    }
  }
  EXPECT_TRUE(step.Take().empty());
}

TEST_F(StepBlocksTest, RangesMapToAlignedBlocksEachOnce) {
  BlockCache::StepBlocks step(kBlock);
  step.Add(reader_, kBlock - 1, kBlock + 1);  // straddles blocks 0 and 1
  step.Add(reader_, 3 * kBlock, 4 * kBlock);  // exactly block 3
  step.Add(reader_, 10, 10);                  // empty
  step.Add(reader_, 5, 6);                    // block 0 again
  const std::vector<BlockCache::BlockRef> out = step.Take();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].block, 0u);
  EXPECT_EQ(out[0].use_bytes, 2u);   // one byte from each of two ranges
  EXPECT_EQ(out[0].use_offset, 5u);  // the first byte either reads
  EXPECT_EQ(out[1].block, 1u);
  EXPECT_EQ(out[1].use_bytes, 1u);
  EXPECT_EQ(out[1].use_offset, kBlock);
  EXPECT_EQ(out[2].block, 3u);
  EXPECT_EQ(out[2].use_bytes, kBlock);
  EXPECT_EQ(out[2].use_offset, 3 * kBlock);
}

}  // namespace
}  // namespace strata
