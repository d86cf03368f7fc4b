// The block cache's tests' shard and helpers: a shard of 192 records of 256
// KiB (about 8 a block, 48 MiB in all), and a cache's I/O pool.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/storage/block_cache.h"
#include "tests/server/storage/shard_test_util.h"
#include "tests/support/smaps.h"
#include "tests/support/temp_dir.h"

namespace strata {

// Blocks as large as the largest page-cache folio (see BlockCacheOptions).
constexpr uint64_t kBlock = 2 << 20;
constexpr uint64_t kRecords = 192;
constexpr size_t kPayload = 256 << 10;  // about 8 records a block, 48 MiB in all

inline std::shared_ptr<const ShardReader> WriteShard(const std::string& path) {
  return testing::WriteUniformShard(path, kRecords, kPayload);
}

// Bytes of `path` mapped into this process now.
inline uint64_t MappedBytes(const std::string& path) { return testing::Mapped(path).rss_bytes; }

// The blocks of records [first, first + n).
inline std::vector<BlockCache::BlockRef> BlocksOf(const BlockCache& cache, const std::shared_ptr<const ShardReader>& r,
                                                  std::vector<uint64_t> records) {
  BlockCache::StepBlocks step(cache.options().block_bytes);
  for (uint64_t i : records) {
    const auto [begin, end] = r->RecordRange(i);
    step.Add(r, begin, end);
  }
  return step.Take();
}

inline void WaitForReadAhead(const BlockCache& cache, uint64_t blocks) {
  for (int i = 0; i < 500; ++i) {
    if (cache.stats().read_ahead_blocks >= blocks) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the last task marks its block resident
}

class BlockCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Join("000000.shard");
    reader_ = WriteShard(path_);
  }
  testing::TempDir dir_;
  std::string path_;
  std::shared_ptr<const ShardReader> reader_;
  boost::asio::thread_pool pool_{2};
};

}  // namespace strata
