#include "server/ingest/ingest_session.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "server/daemon/server.h"
#include "tests/server/server_test_util.h"

namespace strata {
namespace {

using testing::MakeSample;
using testing::TempDir;
using testing::TestNodeConfig;

v1::IngestOptions Options(const std::string& dataset) {
  v1::IngestOptions o;
  o.set_dataset(dataset);
  return o;
}

class IngestSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto node = Server::Open(TestNodeConfig(dir_.path()));
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = std::move(node).value();
  }

  Result<v1::IngestReply> Ingest(const std::string& dataset, int n, int labels = 3) {
    auto session = node_->ingests().Start(Options(dataset));
    if (!session.ok()) return session.status();
    for (int i = 0; i < n; ++i) {
      STRATA_RETURN_IF_ERROR(
          session.value()->Add(MakeSample("k" + std::to_string(i), "L" + std::to_string(i % labels),
                                          std::string(200, char('a' + i % 26)) + std::to_string(i))));
    }
    return session.value()->Commit(static_cast<uint64_t>(n));
  }

  TempDir dir_;
  std::unique_ptr<Server> node_;
};

TEST_F(IngestSessionTest, SealsAVersionWithCountsAndShards) {
  auto reply = Ingest("cats", 100);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  const v1::DatasetInfo& info = reply->dataset();
  EXPECT_EQ(info.name(), "cats");
  EXPECT_EQ(info.version(), 1u);
  EXPECT_EQ(info.state(), v1::VERSION_SEALED);
  EXPECT_EQ(info.samples(), 100u);
  EXPECT_GT(info.shards(), 3u) << "a 4 KiB shard target cuts many shards";
  ASSERT_EQ(info.label_counts_size(), 3);
  EXPECT_EQ(info.label_counts(0).key(), "L0");
  EXPECT_EQ(info.label_counts(0).count(), 34u);
  EXPECT_EQ(info.stratum_counts_size(), 3) << "stratified by label by default";
  auto shards = node_->catalog().ListShards("cats", 1);
  ASSERT_TRUE(shards.ok());
  uint64_t next_id = 0;
  for (const auto& s : shards.value()) {
    EXPECT_EQ(s.info().first_id(), next_id);
    next_id += s.info().samples();
    EXPECT_TRUE(std::filesystem::exists(node_->data_dir().Absolute(s.path())));
  }
  EXPECT_EQ(next_id, 100u);
  EXPECT_EQ(Ingest("cats", 10)->dataset().version(), 2u) << "a second ingest makes the next version";
}

TEST_F(IngestSessionTest, FindsExactDuplicatesByContent) {
  auto session = node_->ingests().Start(Options("dups"));
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE(session.value()->Add(MakeSample("a", "x", "same")).ok());
  ASSERT_TRUE(session.value()->Add(MakeSample("b", "y", "same")).ok());  // other key and label, same content
  ASSERT_TRUE(session.value()->Add(MakeSample("c", "x", "other")).ok());
  ASSERT_TRUE(session.value()->Add(MakeSample("d", "x", "same")).ok());
  auto reply = session.value()->Commit(4);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->dataset().duplicate_samples(), 2u);
  ASSERT_EQ(reply->duplicate_examples_size(), 1);
  const auto& g = reply->duplicate_examples(0);
  EXPECT_EQ(g.count(), 3u);
  ASSERT_EQ(g.keys_size(), 3);
  EXPECT_EQ(g.keys(0), "a");
  EXPECT_EQ(g.keys(1), "b");
  EXPECT_EQ(g.keys(2), "d");
}

TEST_F(IngestSessionTest, SealedVersionsAreImmutable) {
  ASSERT_TRUE(Ingest("cats", 5).ok());
  auto again = node_->ingests().Start(Options("cats@1"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("sealed"), std::string::npos) << again.status().message();
}

TEST_F(IngestSessionTest, AbortRemovesEverything) {
  {
    auto session = node_->ingests().Start(Options("gone"));
    ASSERT_TRUE(session.ok());
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(session.value()->Add(MakeSample("k", "l", std::string(300, 'x'))).ok());
    // Destroyed without a commit.
  }
  auto v = node_->catalog().GetVersion("gone", 1);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->info().state(), v1::VERSION_ABORTED);
  EXPECT_FALSE(std::filesystem::exists(node_->data_dir().VersionDir("gone", 1)));
  auto shards = node_->catalog().ListShards("gone", 1);
  ASSERT_TRUE(shards.ok());
  EXPECT_TRUE(shards->empty());
}

TEST_F(IngestSessionTest, RefusesBadInputWithClearStatus) {
  EXPECT_EQ(node_->ingests().Start(Options("../etc")).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(node_->ingests().Start(Options("a/b")).status().code(), Code::kInvalidArgument);
  {
    auto s = node_->ingests().Start(Options("empty"));
    ASSERT_TRUE(s.ok());
    auto reply = s.value()->Commit(0);
    EXPECT_EQ(reply.status().code(), Code::kFailedPrecondition);
  }
  {
    auto s = node_->ingests().Start(Options("count"));
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(s.value()->Add(MakeSample("a", "x", "1")).ok());
    EXPECT_EQ(s.value()->Commit(2).status().code(), Code::kInvalidArgument);
  }
  {
    auto s = node_->ingests().Start(Options("fields"));
    ASSERT_TRUE(s.ok());
    v1::Sample no_fields;
    no_fields.set_key("nf");
    Status st = s.value()->Add(no_fields);
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_NE(st.message().find("'nf'"), std::string::npos) << st.message();
    EXPECT_EQ(s.value()->Add(MakeSample("a", "x", "1")).code(), Code::kFailedPrecondition) << "aborted after an error";
  }
  {
    auto s = node_->ingests().Start(Options("names"));
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s.value()->Add(MakeSample("a", "x", "1", "bad/name")).code(), Code::kInvalidArgument);
  }
}

TEST_F(IngestSessionTest, InterruptedIngestIsRemovedAtRestart) {
  auto session = node_->ingests().Start(Options("crash"));
  ASSERT_TRUE(session.ok());
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(session.value()->Add(MakeSample("k", "l", std::string(300, 'y'))).ok());
  // Simulate a crash: the node goes away while the session is open, without
  // the session's own abort (release it, then close the node underneath).
  // Never destroyed: a crashed process runs no destructors. Kept reachable
  // from a static that is never destroyed either, so that LeakSanitizer (CI's
  // ASan step, which checks after static destructors ran) does not report it.
  static auto* crashed = new std::vector<IngestSession*>();
  crashed->push_back(session.value().release());
  ASSERT_TRUE(node_->Stop().ok());
  node_.reset();
  auto reopened = Server::Open(TestNodeConfig(dir_.path()));
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  auto v = reopened.value()->catalog().GetVersion("crash", 1);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->info().state(), v1::VERSION_ABORTED);
  EXPECT_FALSE(std::filesystem::exists(reopened.value()->data_dir().VersionDir("crash", 1)));
}

}  // namespace
}  // namespace strata
