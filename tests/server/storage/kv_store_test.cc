#include "server/storage/kv_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <utility>

#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using KeyValues = std::vector<std::pair<std::string, std::string>>;

KeyValues ScanAll(const KvStore& kv, KvSpace space, std::string_view prefix, size_t limit = SIZE_MAX) {
  KeyValues out;
  Status s = kv.Scan(space, prefix, [&](std::string_view k, std::string_view v) {
    out.emplace_back(k, v);
    return out.size() < limit;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

std::string GetOrDie(const KvStore& kv, KvSpace space, std::string_view key) {
  std::string value;
  Status s = kv.Get(space, key, &value);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return value;
}

// One suite, both implementations.
class KvStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "memory") {
      kv_ = KvStore::CreateInMemory();
      return;
    }
    Result<std::unique_ptr<KvStore>> opened = KvStore::OpenRocksDb(dir_.Join("meta"), KvOptions());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    kv_ = std::move(opened).value();
  }

  testing::TempDir dir_;
  std::unique_ptr<KvStore> kv_;
};

TEST_P(KvStoreTest, PutGetDelete) {
  ASSERT_TRUE(kv_->Put(KvSpace::kDatasets, "k", "v1").ok());
  EXPECT_EQ(GetOrDie(*kv_, KvSpace::kDatasets, "k"), "v1");
  ASSERT_TRUE(kv_->Put(KvSpace::kDatasets, "k", "v2").ok());
  EXPECT_EQ(GetOrDie(*kv_, KvSpace::kDatasets, "k"), "v2");
  ASSERT_TRUE(kv_->Delete(KvSpace::kDatasets, "k").ok());
  std::string value;
  EXPECT_TRUE(kv_->Get(KvSpace::kDatasets, "k", &value).IsNotFound());
}

TEST_P(KvStoreTest, BinaryKeysAndValues) {
  const std::string key("a\0b\xff", 4);
  const std::string value("\0\1\2", 3);
  ASSERT_TRUE(kv_->Put(KvSpace::kShards, key, value).ok());
  EXPECT_EQ(GetOrDie(*kv_, KvSpace::kShards, key), value);
}

TEST_P(KvStoreTest, MissingKeyIsNotFound) {
  std::string value = "untouched";
  Status s = kv_->Get(KvSpace::kCursors, "absent", &value);
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_TRUE(kv_->Delete(KvSpace::kCursors, "absent").ok());  // deleting nothing is fine
}

TEST_P(KvStoreTest, BatchAppliesAcrossSpaces) {
  ASSERT_TRUE(kv_->Put(KvSpace::kShards, "old", "x").ok());
  KvWriteBatch batch;
  batch.Put(KvSpace::kDatasets, "d", "1");
  batch.Put(KvSpace::kStrata, "s", "2");
  batch.Delete(KvSpace::kShards, "old");
  batch.Put(KvSpace::kNodes, "n", "3");
  ASSERT_TRUE(kv_->Write(batch).ok());
  EXPECT_EQ(GetOrDie(*kv_, KvSpace::kDatasets, "d"), "1");
  EXPECT_EQ(GetOrDie(*kv_, KvSpace::kStrata, "s"), "2");
  EXPECT_EQ(GetOrDie(*kv_, KvSpace::kNodes, "n"), "3");
  std::string value;
  EXPECT_TRUE(kv_->Get(KvSpace::kShards, "old", &value).IsNotFound());
  EXPECT_TRUE(kv_->Write(KvWriteBatch()).ok());
}

TEST_P(KvStoreTest, BatchWithABadOpAppliesNothing) {
  KvWriteBatch batch;
  batch.Put(KvSpace::kDatasets, "d", "1");
  batch.Put(static_cast<KvSpace>(kNumKvSpaces), "bad", "2");
  Status s = kv_->Write(batch);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  std::string value;
  EXPECT_TRUE(kv_->Get(KvSpace::kDatasets, "d", &value).IsNotFound());
}

TEST_P(KvStoreTest, LaterOpsInABatchWin) {
  KvWriteBatch batch;
  batch.Put(KvSpace::kDatasets, "k", "1");
  batch.Delete(KvSpace::kDatasets, "k");
  batch.Put(KvSpace::kDatasets, "j", "1");
  batch.Put(KvSpace::kDatasets, "j", "2");
  ASSERT_TRUE(kv_->Write(batch).ok());
  std::string value;
  EXPECT_TRUE(kv_->Get(KvSpace::kDatasets, "k", &value).IsNotFound());
  EXPECT_EQ(GetOrDie(*kv_, KvSpace::kDatasets, "j"), "2");
}

TEST_P(KvStoreTest, ScanIsPrefixBoundedAndOrdered) {
  const std::string ab0("ab\0", 3);
  for (const std::string& k : {std::string("b"), std::string("abc"), ab0, std::string("a"), std::string("ab"),
                               std::string("ab\xff"), std::string("aa")}) {
    ASSERT_TRUE(kv_->Put(KvSpace::kDatasets, k, "v" + k).ok());
  }
  EXPECT_THAT(ScanAll(*kv_, KvSpace::kDatasets, "ab"),
              ElementsAre(Pair("ab", "vab"), Pair(ab0, "v" + ab0), Pair("abc", "vabc"), Pair("ab\xff", "vab\xff")));
  EXPECT_EQ(ScanAll(*kv_, KvSpace::kDatasets, "").size(), 7u);
  EXPECT_TRUE(ScanAll(*kv_, KvSpace::kDatasets, "zz").empty());
  EXPECT_TRUE(ScanAll(*kv_, KvSpace::kDatasets, "abd").empty());
}

TEST_P(KvStoreTest, ScanStopsWhenToldTo) {
  for (const char* k : {"p1", "p2", "p3", "p4"}) ASSERT_TRUE(kv_->Put(KvSpace::kCursors, k, "").ok());
  EXPECT_THAT(ScanAll(*kv_, KvSpace::kCursors, "p", 2), ElementsAre(Pair("p1", ""), Pair("p2", "")));
}

TEST_P(KvStoreTest, SpacesAreIndependent) {
  ASSERT_TRUE(kv_->Put(KvSpace::kDatasets, "k", "datasets").ok());
  ASSERT_TRUE(kv_->Put(KvSpace::kShards, "k", "shards").ok());
  EXPECT_EQ(GetOrDie(*kv_, KvSpace::kDatasets, "k"), "datasets");
  EXPECT_EQ(GetOrDie(*kv_, KvSpace::kShards, "k"), "shards");
  std::string value;
  EXPECT_TRUE(kv_->Get(KvSpace::kStrata, "k", &value).IsNotFound());
  EXPECT_TRUE(ScanAll(*kv_, KvSpace::kNodes, "").empty());
  ASSERT_TRUE(kv_->Delete(KvSpace::kDatasets, "k").ok());
  EXPECT_EQ(GetOrDie(*kv_, KvSpace::kShards, "k"), "shards");
}

TEST_P(KvStoreTest, ConcurrentWritersAllLand) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_TRUE(kv_->Put(KvSpace::kNodes, std::to_string(t) + "/" + std::to_string(i), "v").ok());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(ScanAll(*kv_, KvSpace::kNodes, "").size(), size_t{kThreads * kPerThread});
}

TEST_P(KvStoreTest, StatsWhileOpen) {
  ASSERT_TRUE(kv_->Put(KvSpace::kDatasets, "k", "v").ok());
  EXPECT_FALSE(kv_->Stats().empty());
}

TEST_P(KvStoreTest, CallsAfterCloseFail) {
  ASSERT_TRUE(kv_->Put(KvSpace::kDatasets, "k", "v").ok());
  ASSERT_TRUE(kv_->Close().ok());
  EXPECT_TRUE(kv_->Close().ok());  // idempotent
  std::string value;
  EXPECT_EQ(kv_->Get(KvSpace::kDatasets, "k", &value).code(), Code::kFailedPrecondition);
  EXPECT_EQ(kv_->Put(KvSpace::kDatasets, "k", "v").code(), Code::kFailedPrecondition);
  EXPECT_EQ(kv_->Write(KvWriteBatch()).code(), Code::kFailedPrecondition);
  Status s = kv_->Scan(KvSpace::kDatasets, "", [](std::string_view, std::string_view) { return true; });
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_TRUE(kv_->Stats().empty());
}

INSTANTIATE_TEST_SUITE_P(Stores, KvStoreTest, ::testing::Values("rocksdb", "memory"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// RocksDB only: durability, the directory lock, bad directories.

Result<std::unique_ptr<KvStore>> Open(const std::string& dir, bool sync_writes = true) {
  KvOptions options;
  options.sync_writes = sync_writes;
  return KvStore::OpenRocksDb(dir, options);
}

TEST(RocksDbKvStoreTest, DataSurvivesCloseAndReopen) {
  testing::TempDir dir;
  for (bool sync : {true, false}) {
    const std::string path = dir.Join(sync ? "synced" : "unsynced");
    {
      Result<std::unique_ptr<KvStore>> kv = Open(path, sync);
      ASSERT_TRUE(kv.ok()) << kv.status().ToString();
      ASSERT_TRUE((*kv)->Put(KvSpace::kDatasets, "a", "1").ok());
      ASSERT_TRUE((*kv)->Put(KvSpace::kNodes, "b", "2").ok());
      ASSERT_TRUE((*kv)->Close().ok());
    }
    {
      Result<std::unique_ptr<KvStore>> kv = Open(path, sync);
      ASSERT_TRUE(kv.ok()) << kv.status().ToString();
      EXPECT_EQ(GetOrDie(**kv, KvSpace::kDatasets, "a"), "1");
      EXPECT_EQ(GetOrDie(**kv, KvSpace::kNodes, "b"), "2");
      // Not closed: the destructor closes and releases the lock.
      ASSERT_TRUE((*kv)->Put(KvSpace::kDatasets, "c", "3").ok());
    }
    Result<std::unique_ptr<KvStore>> kv = Open(path, sync);
    ASSERT_TRUE(kv.ok()) << kv.status().ToString();
    EXPECT_EQ(GetOrDie(**kv, KvSpace::kDatasets, "c"), "3");
  }
}

TEST(RocksDbKvStoreTest, SecondOpenOfADirectoryInUseFails) {
  testing::TempDir dir;
  Result<std::unique_ptr<KvStore>> first = Open(dir.Join("meta"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Result<std::unique_ptr<KvStore>> second = Open(dir.Join("meta"));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kIOError);
  EXPECT_THAT(second.status().message(), HasSubstr("in use by another stratad"));
  EXPECT_THAT(second.status().message(), HasSubstr(dir.Join("meta")));
  // Once the first closes, the directory is free.
  ASSERT_TRUE((*first)->Close().ok());
  EXPECT_TRUE(Open(dir.Join("meta")).ok());
}

TEST(RocksDbKvStoreTest, RegularFileWhereTheDirectoryShouldBe) {
  testing::TempDir dir;
  testing::WriteFile(dir.Join("meta"), "not a database");
  Result<std::unique_ptr<KvStore>> kv = Open(dir.Join("meta"));
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), Code::kIOError) << kv.status().ToString();
  EXPECT_THAT(kv.status().message(), HasSubstr(dir.Join("meta")));
}

TEST(RocksDbKvStoreTest, GarbledManifestIsAnErrorNotACrash) {
  testing::TempDir dir;
  const std::string path = dir.Join("meta");
  {
    Result<std::unique_ptr<KvStore>> kv = Open(path);
    ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  }
  const std::string manifest = testing::ReadFile(path + "/CURRENT");
  ASSERT_FALSE(manifest.empty());
  testing::WriteFile(path + "/" + manifest.substr(0, manifest.size() - 1), std::string(4096, '\x5a'));
  Result<std::unique_ptr<KvStore>> kv = Open(path);
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), Code::kDataLoss) << kv.status().ToString();
}

TEST(RocksDbKvStoreTest, MissingDirectoryWithoutCreateIfMissing) {
  testing::TempDir dir;
  KvOptions options;
  options.create_if_missing = false;
  Result<std::unique_ptr<KvStore>> kv = KvStore::OpenRocksDb(dir.Join("absent"), options);
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), Code::kInvalidArgument) << kv.status().ToString();
}

TEST(RocksDbKvStoreTest, StatsNameRocksDbProperties) {
  testing::TempDir dir;
  Result<std::unique_ptr<KvStore>> kv = Open(dir.Join("meta"));
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  ASSERT_TRUE((*kv)->Put(KvSpace::kDatasets, "k", std::string(1000, 'x')).ok());
  std::map<std::string, uint64_t> stats = (*kv)->Stats();
  EXPECT_TRUE(stats.contains("rocksdb.estimate-num-keys"));
  EXPECT_GT(stats["rocksdb.cur-size-all-mem-tables"], 1000u);
}

}  // namespace
}  // namespace strata
