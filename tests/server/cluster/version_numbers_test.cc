// Version numbers no two nodes repeat: the static rule over every rank and
// floor, the static numbering of a node's own catalog, and the etcd counter
// under concurrent nodes (a real etcd; skipped when it is missing).
#include "server/cluster/version_numbers.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common/dataset_ref.h"
#include "common/placement.h"
#include "server/storage/kv_store.h"
#include "tests/support/etcd_process.h"

namespace strata {
namespace {

void AddVersion(Catalog& catalog, const std::string& name, uint64_t version) {
  ASSERT_TRUE(catalog.CreateVersion(name, version, v1::VersionRecord()).ok());
}

TEST(StaticVersionNumberTest, RanksNeverMeetAndEachTakesItsSmallestAboveTheFloor) {
  for (uint32_t slots = 1; slots <= 6; ++slots) {
    std::set<uint64_t> taken;
    for (uint32_t rank = 0; rank < slots; ++rank) {
      for (uint64_t floor = 0; floor < 200; ++floor) {
        const uint64_t n = StaticVersionNumber(floor, rank, slots);
        ASSERT_GT(n, floor);
        ASSERT_EQ((n - 1) % slots, rank) << "slots " << slots << " floor " << floor;
        ASSERT_TRUE(n <= slots || n - slots <= floor) << "a smaller number of this rank was free: " << n;
        taken.insert(n);
      }
    }
    // Every number belongs to exactly one rank: the series partition 1, 2, 3...
    for (uint64_t n = 1; n <= 200; ++n) EXPECT_EQ(taken.count(n), 1u) << n;
  }
  EXPECT_EQ(StaticVersionNumber(0, 0, 1), 1u);
  EXPECT_EQ(StaticVersionNumber(7, 0, 1), 8u);  // one node: contiguous
}

TEST(VersionNumbersTest, StaticHomeStartsAtOneAndOthersTakeTheirOwnSeries) {
  const std::vector<std::string> ids = {"node-1", "node-2", "node-3"};
  const std::vector<std::string> ranked = RankMembers(DatasetHomeKey("d"), ids);
  auto kv = KvStore::CreateInMemory();
  Catalog catalog(kv.get());
  VersionNumbers numbers(&catalog, nullptr, "", ids);
  EXPECT_EQ(numbers.Next("d", ranked[0]).value(), 1u);
  EXPECT_EQ(numbers.Next("d", ranked[1]).value(), 2u);
  EXPECT_EQ(numbers.Next("d", ranked[2]).value(), 3u);
  AddVersion(catalog, "d", 1);  // the home took 1 (and died): nobody takes it again
  EXPECT_EQ(numbers.Next("d", ranked[0]).value(), 4u);
  EXPECT_EQ(numbers.Next("d", ranked[1]).value(), 2u);
  AddVersion(catalog, "d", 2);
  EXPECT_EQ(numbers.Next("d", ranked[0]).value(), 4u);
  EXPECT_EQ(numbers.Next("d", ranked[1]).value(), 5u);
  EXPECT_EQ(numbers.Next("other", RankMembers(DatasetHomeKey("other"), ids)[0]).value(), 1u);
  EXPECT_FALSE(numbers.Next("d", "node-9").ok()) << "a node outside the list numbers nothing";
  VersionNumbers alone(&catalog, nullptr, "", {});
  EXPECT_EQ(alone.Next("d", "solo").value(), 3u) << "a single node numbers on from the highest it knows";
}

// A version named near the top (name@N is taken as given) leaves a rank no
// number of its series at or below the maximum: a clear error, not a wrap.
TEST(VersionNumbersTest, StaticNumbersStopAtTheMaximum) {
  const std::vector<std::string> ids = {"node-1", "node-2", "node-3"};
  const std::vector<std::string> ranked = RankMembers(DatasetHomeKey("d"), ids);
  auto kv = KvStore::CreateInMemory();
  Catalog catalog(kv.get());
  VersionNumbers numbers(&catalog, nullptr, "", ids);
  AddVersion(catalog, "d", kMaxDatasetVersion - 1);
  std::set<uint64_t> given;
  for (const std::string& node : ranked) {
    auto n = numbers.Next("d", node);
    if (n.ok()) {
      EXPECT_EQ(n.value(), kMaxDatasetVersion);
      given.insert(n.value());
    } else {
      EXPECT_EQ(n.status().code(), Code::kFailedPrecondition) << n.status().ToString();
      EXPECT_NE(n.status().message().find("no version numbers left"), std::string::npos) << n.status().ToString();
    }
  }
  EXPECT_EQ(given.size(), 1u) << "only the rank whose series holds the maximum takes it";
  AddVersion(catalog, "d", kMaxDatasetVersion);
  for (const std::string& node : ranked) EXPECT_FALSE(numbers.Next("d", node).ok());
}

TEST(VersionNumbersTest, EtcdCounterIsSharedByConcurrentNodes) {
  if (auto why = testing::EtcdProcess::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto etcd = testing::EtcdProcess::Start();
  ASSERT_NE(etcd, nullptr);
  auto client = [&] {
    EtcdClient::Options o;
    o.endpoints = {etcd->endpoint()};
    return std::make_unique<EtcdClient>(o);
  };
  std::vector<std::unique_ptr<KvStore>> kvs;
  std::vector<std::unique_ptr<Catalog>> catalogs;
  std::vector<std::unique_ptr<VersionNumbers>> nodes;
  for (int i = 0; i < 3; ++i) {
    kvs.push_back(KvStore::CreateInMemory());
    catalogs.push_back(std::make_unique<Catalog>(kvs.back().get()));
    nodes.push_back(
        std::make_unique<VersionNumbers>(catalogs.back().get(), client(), "/strata/t/", std::vector<std::string>{}));
  }
  std::mutex mu;
  std::vector<uint64_t> got;
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 10; ++k) {
        auto n = nodes[static_cast<size_t>(t % 3)]->Next("d", "a");
        ASSERT_TRUE(n.ok()) << n.status().ToString();
        std::lock_guard<std::mutex> lock(mu);
        got.push_back(n.value());
      }
    });
  }
  for (auto& th : threads) th.join();
  const std::set<uint64_t> distinct(got.begin(), got.end());
  EXPECT_EQ(distinct.size(), got.size()) << "a number was given twice";
  EXPECT_EQ(*distinct.begin(), 1u);
  EXPECT_EQ(*distinct.rbegin(), 60u) << "contiguous";
  // A node that knows a higher version (imported from a build that numbered
  // locally) numbers above it, and the counter follows.
  AddVersion(*catalogs[1], "d", 500);
  EXPECT_EQ(nodes[1]->Next("d", "a").value(), 501u);
  EXPECT_EQ(nodes[0]->Next("d", "a").value(), 502u);
}

}  // namespace
}  // namespace strata
