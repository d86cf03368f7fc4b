#include "server/storage/catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/dataset_ref.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::ShardRecord Shard(uint32_t seq) {
  v1::ShardRecord shard;
  shard.mutable_info()->set_seq(seq);
  shard.mutable_info()->set_samples(10 * seq);
  shard.set_path("shards/" + std::to_string(seq));
  return shard;
}

std::vector<uint32_t> Seqs(const std::vector<v1::ShardRecord>& shards) {
  std::vector<uint32_t> seqs;
  for (const v1::ShardRecord& s : shards) seqs.push_back(s.info().seq());
  return seqs;
}

std::vector<std::string> Names(const std::vector<v1::VersionRecord>& versions) {
  std::vector<std::string> names;
  for (const v1::VersionRecord& r : versions)
    names.push_back(r.info().name() + "@" + std::to_string(r.info().version()));
  return names;
}

// One suite, both stores.
class CatalogTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    catalog_.reset();
    kv_.reset();
    if (GetParam() == "memory") {
      kv_ = KvStore::CreateInMemory();
    } else {
      Result<std::unique_ptr<KvStore>> opened = KvStore::OpenRocksDb(dir_.Join("meta"), KvOptions());
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      kv_ = std::move(opened).value();
    }
    catalog_ = std::make_unique<Catalog>(kv_.get());
  }

  // Creates the next version of `name`, or version `version`; fails the test on error.
  uint64_t Create(const std::string& name, std::optional<uint64_t> version = std::nullopt) {
    Result<v1::VersionRecord> r = catalog_->CreateVersion(name, version, v1::VersionRecord());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->info().version() : 0;
  }

  void Seal(const std::string& name, uint64_t version) {
    Result<v1::VersionRecord> r = catalog_->GetVersion(name, version);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    r->mutable_info()->set_state(v1::VERSION_SEALED);
    r->mutable_info()->set_samples(100);
    Status s = catalog_->SealVersion(*r);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  testing::TempDir dir_;
  std::unique_ptr<KvStore> kv_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_P(CatalogTest, VersionsAreNumberedFromOne) {
  EXPECT_EQ(Create("cats"), 1u);
  EXPECT_EQ(Create("cats"), 2u);
  EXPECT_EQ(Create("cats"), 3u);
  EXPECT_EQ(Create("dogs"), 1u);
}

TEST_P(CatalogTest, CreateFillsTheRecord) {
  v1::VersionRecord initial;
  initial.set_shard_target_bytes(1 << 20);
  initial.mutable_info()->add_stratify_by("label");
  initial.mutable_info()->set_name("ignored");
  Result<v1::VersionRecord> r = catalog_->CreateVersion("cats", std::nullopt, initial);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->info().name(), "cats");
  EXPECT_EQ(r->info().version(), 1u);
  EXPECT_EQ(r->info().state(), v1::VERSION_INGESTING);
  EXPECT_GT(r->info().created_unix_ms(), 0);
  EXPECT_EQ(r->shard_target_bytes(), 1u << 20);
  Result<v1::VersionRecord> stored = catalog_->GetVersion("cats", 1);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->SerializeAsString(), r->SerializeAsString());
}

TEST_P(CatalogTest, ExplicitVersion) {
  EXPECT_EQ(Create("cats", 5), 5u);
  EXPECT_EQ(Create("cats"), 6u);
  EXPECT_EQ(Create("cats", 2), 2u);
  EXPECT_EQ(Create("cats"), 7u);
  EXPECT_EQ(catalog_->CreateVersion("cats", 0, v1::VersionRecord()).status().code(), Code::kInvalidArgument);
}

TEST_P(CatalogTest, SealedVersionCannotBeRecreated) {
  Create("cats");
  Create("cats");
  Seal("cats", 2);
  Result<v1::VersionRecord> r = catalog_->CreateVersion("cats", 2, v1::VersionRecord());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("dataset 'cats' version 2 is already sealed"));
  EXPECT_THAT(r.status().message(), HasSubstr("ingest without @N to create a new version"));
  EXPECT_EQ(catalog_->GetVersion("cats", 2)->info().state(), v1::VERSION_SEALED);
}

TEST_P(CatalogTest, IngestingVersionCannotBeRecreated) {
  Create("cats");
  Result<v1::VersionRecord> r = catalog_->CreateVersion("cats", 1, v1::VersionRecord());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
}

TEST_P(CatalogTest, SealRequiresIngestingAndASealedRecord) {
  Create("cats");
  v1::VersionRecord record = *catalog_->GetVersion("cats", 1);
  EXPECT_EQ(catalog_->SealVersion(record).code(), Code::kInvalidArgument);  // still says ingesting
  Seal("cats", 1);
  record.mutable_info()->set_state(v1::VERSION_SEALED);
  EXPECT_EQ(catalog_->SealVersion(record).code(), Code::kFailedPrecondition);  // sealed twice
  record.mutable_info()->set_version(9);
  EXPECT_EQ(catalog_->SealVersion(record).code(), Code::kNotFound);
  EXPECT_EQ(catalog_->GetVersion("cats", 1)->info().samples(), 100u);
}

TEST_P(CatalogTest, ShardsAreListedInSeqOrder) {
  Create("cats");
  for (uint32_t seq : {3u, 0u, 256u, 1u, 2u}) ASSERT_TRUE(catalog_->PutShard("cats", 1, Shard(seq)).ok());
  Result<std::vector<v1::ShardRecord>> shards = catalog_->ListShards("cats", 1);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  EXPECT_THAT(Seqs(*shards), ElementsAre(0u, 1u, 2u, 3u, 256u));
  EXPECT_EQ((*shards)[4].path(), "shards/256");
  EXPECT_TRUE(catalog_->ListShards("cats", 2)->empty());
}

TEST_P(CatalogTest, ShardsOnlyWhileIngesting) {
  Create("cats");
  Seal("cats", 1);
  EXPECT_EQ(catalog_->PutShard("cats", 1, Shard(0)).code(), Code::kFailedPrecondition);
  EXPECT_EQ(catalog_->PutShard("cats", 2, Shard(0)).code(), Code::kNotFound);
}

TEST_P(CatalogTest, AbortedVersionNumberIsNotReusedImplicitly) {
  Create("cats");
  Create("cats");
  ASSERT_TRUE(catalog_->PutShard("cats", 2, Shard(0)).ok());
  ASSERT_TRUE(catalog_->AbortVersion("cats", 2).ok());
  EXPECT_TRUE(catalog_->AbortVersion("cats", 2).ok());  // idempotent
  EXPECT_EQ(catalog_->GetVersion("cats", 2)->info().state(), v1::VERSION_ABORTED);
  EXPECT_TRUE(catalog_->ListShards("cats", 2)->empty());
  EXPECT_EQ(Create("cats"), 3u);
}

TEST_P(CatalogTest, ImportNeverAbortsARunningIngestNorChangesASealedVersion) {
  EXPECT_EQ(Create("cats"), 1u);  // ingesting here
  v1::VersionRecord aborted;
  aborted.mutable_info()->set_name("cats");
  aborted.mutable_info()->set_version(1);
  aborted.mutable_info()->set_state(v1::VERSION_ABORTED);
  Result<bool> changed = catalog_->ImportVersion(aborted, {});
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_FALSE(changed.value());
  EXPECT_EQ(catalog_->GetVersion("cats", 1)->info().state(), v1::VERSION_INGESTING);
  Seal("cats", 1);
  changed = catalog_->ImportVersion(aborted, {});
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(changed.value());
  EXPECT_EQ(catalog_->GetVersion("cats", 1)->info().state(), v1::VERSION_SEALED);
  // A name that could leave the data directory is refused outright.
  aborted.mutable_info()->set_name("../../victim");
  EXPECT_EQ(catalog_->ImportVersion(aborted, {}).status().code(), Code::kInvalidArgument);
}

// Other nodes keep the aborted record and drop copies under its number, so
// an explicit create of it again could never keep its copies: refused.
TEST_P(CatalogTest, ExplicitCreateNeverReusesAnAbortedNumber) {
  Create("cats");
  ASSERT_TRUE(catalog_->PutShard("cats", 1, Shard(0)).ok());
  ASSERT_TRUE(catalog_->AbortVersion("cats", 1).ok());
  auto again = catalog_->CreateVersion("cats", 1, v1::VersionRecord());
  EXPECT_EQ(again.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("never reused"), std::string::npos) << again.status().ToString();
  EXPECT_EQ(catalog_->GetVersion("cats", 1)->info().state(), v1::VERSION_ABORTED);
  EXPECT_EQ(Create("cats"), 2u);
}

// A name@N near 2^64 used to wrap the next number to 0 ("invalid version in
// 'v@0'") for every later ingest of the dataset.
TEST_P(CatalogTest, VersionNumbersStopAtTheirMaximumWithAClearError) {
  EXPECT_EQ(catalog_->CreateVersion("cats", kMaxDatasetVersion + 1, v1::VersionRecord()).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(Create("cats", kMaxDatasetVersion), kMaxDatasetVersion);
  auto next = catalog_->CreateVersion("cats", std::nullopt, v1::VersionRecord());
  EXPECT_EQ(next.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(next.status().message().find("no version numbers left"), std::string::npos) << next.status().ToString();
  EXPECT_FALSE(ParseDatasetRef("cats@18446744073709551615").ok());
  EXPECT_TRUE(ParseDatasetRef("cats@9007199254740992").ok());
}

TEST_P(CatalogTest, SealedVersionCannotBeAborted) {
  Create("cats");
  Seal("cats", 1);
  EXPECT_EQ(catalog_->AbortVersion("cats", 1).code(), Code::kFailedPrecondition);
  EXPECT_EQ(catalog_->AbortVersion("cats", 7).code(), Code::kNotFound);
}

TEST_P(CatalogTest, DeleteRemovesVersionAndShards) {
  Create("cats");
  ASSERT_TRUE(catalog_->PutShard("cats", 1, Shard(0)).ok());
  Seal("cats", 1);
  ASSERT_TRUE(catalog_->DeleteVersion("cats", 1).ok());
  EXPECT_EQ(catalog_->GetVersion("cats", 1).status().code(), Code::kNotFound);
  EXPECT_TRUE(catalog_->ListShards("cats", 1)->empty());
  EXPECT_EQ(catalog_->DeleteVersion("cats", 1).code(), Code::kNotFound);
}

TEST_P(CatalogTest, MarkDeletedLeavesATombstoneWhoseNumberIsNeverReused) {
  Create("cats");
  ASSERT_TRUE(catalog_->PutShard("cats", 1, Shard(0)).ok());
  Seal("cats", 1);
  Create("cats");
  EXPECT_EQ(catalog_->MarkDeleted("cats", 2, "node-1").status().code(), Code::kFailedPrecondition);  // ingesting
  Result<v1::VersionRecord> gone = catalog_->MarkDeleted("cats", 1, "node-1");
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_EQ(gone->info().state(), v1::VERSION_DELETED);
  EXPECT_EQ(gone->info().samples(), 100u);  // what it was stays readable
  EXPECT_EQ(gone->deleted_by(), "node-1");
  EXPECT_GT(gone->deleted_unix_ms(), 0);
  EXPECT_TRUE(catalog_->ListShards("cats", 1)->empty());
  EXPECT_TRUE(Names(catalog_->ListVersions(false).value()).empty());
  EXPECT_EQ(catalog_->LatestSealed("cats").status().code(), Code::kNotFound);
  EXPECT_EQ(catalog_->GetVersion("cats", 1)->info().state(), v1::VERSION_DELETED);
  // Idempotent; an abort or a re-ingest of that number never revives it.
  EXPECT_TRUE(catalog_->MarkDeleted("cats", 1, "node-2").ok());
  EXPECT_EQ(catalog_->GetVersion("cats", 1)->deleted_by(), "node-1");
  EXPECT_TRUE(catalog_->AbortVersion("cats", 1).ok());
  EXPECT_EQ(catalog_->GetVersion("cats", 1)->info().state(), v1::VERSION_DELETED);
  Result<v1::VersionRecord> again = catalog_->CreateVersion("cats", 1, v1::VersionRecord());
  EXPECT_EQ(again.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("was deleted"));
  Result<v1::VersionRecord> unknown = catalog_->MarkDeleted("cats", 9, "node-1");
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("'cats' has no version 9"));
}

TEST_P(CatalogTest, AnImportedTombstoneReplacesASealedVersionAndIsFinal) {
  Create("cats");
  ASSERT_TRUE(catalog_->PutShard("cats", 1, Shard(0)).ok());
  Seal("cats", 1);
  v1::VersionRecord sealed = catalog_->GetVersion("cats", 1).value();
  v1::VersionRecord tombstone = sealed;
  tombstone.mutable_info()->set_state(v1::VERSION_DELETED);
  tombstone.set_deleted_by("node-2");
  Result<bool> changed = catalog_->ImportVersion(tombstone, {});
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(changed.value());
  EXPECT_EQ(catalog_->GetVersion("cats", 1)->info().state(), v1::VERSION_DELETED);
  EXPECT_TRUE(catalog_->ListShards("cats", 1)->empty());
  // Neither a sealed nor an aborted record brings it back.
  changed = catalog_->ImportVersion(sealed, {Shard(0)});
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(changed.value());
  EXPECT_EQ(catalog_->GetVersion("cats", 1)->info().state(), v1::VERSION_DELETED);
  EXPECT_TRUE(catalog_->ListShards("cats", 1)->empty());
  // A tombstone for a version this node never had is kept too.
  tombstone.mutable_info()->set_version(5);
  changed = catalog_->ImportVersion(tombstone, {});
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(changed.value());
}

TEST_P(CatalogTest, GetVersionNotFoundNamesIt) {
  Result<v1::VersionRecord> r = catalog_->GetVersion("cats", 3);
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("'cats'"));
  EXPECT_THAT(r.status().message(), HasSubstr("3"));
}

TEST_P(CatalogTest, LatestSealedIgnoresUnsealedVersions) {
  EXPECT_EQ(catalog_->LatestSealed("cats").status().code(), Code::kNotFound);
  Create("cats");
  EXPECT_EQ(catalog_->LatestSealed("cats").status().code(), Code::kNotFound);
  Seal("cats", 1);
  Create("cats");
  Seal("cats", 2);
  Create("cats");  // 3: ingesting
  Create("cats");  // 4: aborted
  ASSERT_TRUE(catalog_->AbortVersion("cats", 4).ok());
  Result<v1::VersionRecord> latest = catalog_->LatestSealed("cats");
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  EXPECT_EQ(latest->info().version(), 2u);
}

TEST_P(CatalogTest, NamesThatArePrefixesDoNotCollide) {
  Create("cat");
  Create("cats");
  Create("cats");
  Seal("cats", 2);
  Create("ca");
  ASSERT_TRUE(catalog_->PutShard("cats", 1, Shard(0)).ok());
  EXPECT_EQ(Create("cat"), 2u);
  EXPECT_EQ(catalog_->LatestSealed("cat").status().code(), Code::kNotFound);
  EXPECT_EQ(catalog_->LatestSealed("cats")->info().version(), 2u);
  EXPECT_TRUE(catalog_->ListShards("cat", 1)->empty());
  ASSERT_TRUE(catalog_->DeleteVersion("cat", 1).ok());
  EXPECT_EQ(catalog_->ListShards("cats", 1)->size(), 1u);
}

TEST_P(CatalogTest, ListVersionsByNameThenVersion) {
  Create("cats");
  Create("cat");
  for (int i = 0; i < 9; ++i) Create("b");
  Create("cats");
  Create("dogs");
  Seal("cats", 2);
  Seal("cat", 1);
  Seal("b", 9);
  Seal("b", 2);
  Result<std::vector<v1::VersionRecord>> all = catalog_->ListVersions(/*include_unsealed=*/true);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 13u);
  EXPECT_EQ(Names(*all)[8], "b@9");
  EXPECT_EQ(Names(*all)[9], "cat@1");
  EXPECT_EQ(Names(*all)[12], "dogs@1");
  Result<std::vector<v1::VersionRecord>> sealed = catalog_->ListVersions(/*include_unsealed=*/false);
  ASSERT_TRUE(sealed.ok()) << sealed.status().ToString();
  EXPECT_THAT(Names(*sealed), ElementsAre("b@2", "b@9", "cat@1", "cats@2"));
}

TEST_P(CatalogTest, CursorsRoundTrip) {
  v1::CursorRecord cursor;
  cursor.set_dataset("cats");
  cursor.set_version(2);
  cursor.set_epoch(3);
  cursor.set_step(12345);
  ASSERT_TRUE(catalog_->PutCursor("job", 7, cursor).ok());
  cursor.set_step(1);
  ASSERT_TRUE(catalog_->PutCursor("job", 300, cursor).ok());
  ASSERT_TRUE(catalog_->PutCursor("jo", 7, v1::CursorRecord()).ok());
  Result<v1::CursorRecord> got = catalog_->GetCursor("job", 7);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->step(), 12345u);
  EXPECT_EQ(got->dataset(), "cats");
  EXPECT_EQ(catalog_->GetCursor("job", 300)->step(), 1u);
  EXPECT_EQ(catalog_->GetCursor("job", 8).status().code(), Code::kNotFound);
  EXPECT_EQ(catalog_->PutCursor("", 0, cursor).code(), Code::kInvalidArgument);
}

TEST_P(CatalogTest, CorruptValueIsCorruptionNamingTheKey) {
  Create("cats");
  std::string key("cats\0\0\0\0\0\0\0\0\x02", 13);
  ASSERT_TRUE(kv_->Put(KvSpace::kDatasets, key, "\xff\xff\xff").ok());
  Result<v1::VersionRecord> r = catalog_->GetVersion("cats", 2);
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("cats\\x00"));
  EXPECT_EQ(catalog_->ListVersions(true).status().code(), Code::kDataLoss);
  EXPECT_EQ(catalog_->CreateVersion("cats", std::nullopt, {}).status().code(), Code::kDataLoss);
}

INSTANTIATE_TEST_SUITE_P(Stores, CatalogTest, ::testing::Values("rocksdb", "memory"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// Only a durable store has something to reopen.
class DurableCatalogTest : public CatalogTest {};

TEST_P(DurableCatalogTest, ReopenKeepsEverything) {
  Create("cats");
  ASSERT_TRUE(catalog_->PutShard("cats", 1, Shard(0)).ok());
  Seal("cats", 1);
  Create("cats");
  ASSERT_TRUE(catalog_->AbortVersion("cats", 2).ok());
  ASSERT_TRUE(catalog_->PutCursor("job", 0, v1::CursorRecord()).ok());
  ASSERT_TRUE(kv_->Close().ok());
  Open();
  EXPECT_EQ(catalog_->LatestSealed("cats")->info().version(), 1u);
  EXPECT_EQ(catalog_->ListShards("cats", 1)->size(), 1u);
  EXPECT_EQ(catalog_->GetVersion("cats", 2)->info().state(), v1::VERSION_ABORTED);
  EXPECT_TRUE(catalog_->GetCursor("job", 0).ok());
  EXPECT_EQ(Create("cats"), 3u);
}

INSTANTIATE_TEST_SUITE_P(Stores, DurableCatalogTest, ::testing::Values("rocksdb"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace strata
