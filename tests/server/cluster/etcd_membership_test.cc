// etcd membership against a real etcd: several in-process members of one
// cluster, crashes (keep-alive stopped without revoking), leaves, restarts of
// members and of etcd itself. Short TTLs and grace periods; every wait polls
// with a timeout.
#include "server/cluster/etcd_membership.h"

#include <gtest/gtest.h>

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/cluster/etcd_client.h"
#include "server/cluster/etcd_membership_impl.h"
#include "server/storage/disk_space.h"
#include "tests/support/etcd_process.h"

namespace strata {
namespace {

using testing::EtcdProcess;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kTtlS = 2;
constexpr uint32_t kGraceS = 3;

// Polls `pred` every 20 ms until it holds or `timeout` passes.
bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

std::optional<v1::NodeState> StateIn(const Membership& m, const std::string& id) {
  const v1::ClusterMap map = m.Current();
  const v1::NodeInfo* n = FindNode(map, id);
  if (n == nullptr) return std::nullopt;
  return n->state();
}

bool AllUp(const Membership& m, const std::vector<std::string>& ids) {
  const v1::ClusterMap map = m.Current();
  if (map.nodes_size() != static_cast<int>(ids.size())) return false;
  for (const auto& id : ids) {
    const v1::NodeInfo* n = FindNode(map, id);
    if (n == nullptr || n->state() != v1::NODE_UP) return false;
  }
  return true;
}

// The executor the members' reconciliation runs on (the daemon's background
// pool in stratad): one thread per member a test starts at once.
boost::asio::any_io_executor Background() {
  static boost::asio::thread_pool pool(4);
  return pool.get_executor();
}

class EtcdMembershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = EtcdProcess::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    etcd_ = EtcdProcess::Start();
    ASSERT_NE(etcd_, nullptr);
  }

  void TearDown() override {
    if (HasFailure() && etcd_ != nullptr) std::fprintf(stderr, "etcd log:\n%s\n", etcd_->Log().c_str());
  }

  NodeConfig Config(uint32_t ttl_s = kTtlS) const {
    NodeConfig c;
    c.cluster.name = "test";
    c.cluster.membership = "etcd";
    c.cluster.etcd_endpoints = {etcd_->endpoint()};
    c.cluster.lease_ttl_s = ttl_s;
    c.cluster.grace_period_s = kGraceS;
    return c;
  }

  static v1::NodeInfo Self(int i) {
    v1::NodeInfo n;
    n.set_id("node-" + std::to_string(i));
    n.set_address("127.0.0.1:" + std::to_string(7400 + i));
    n.set_metrics_address("127.0.0.1:" + std::to_string(9400 + i));
    n.set_zone("zone-" + std::to_string(i % 2));  // failure domains travel in the registration
    n.set_rack("rack-" + std::to_string(i));
    return n;
  }

  std::unique_ptr<EtcdMembership> StartMember(int i, uint32_t ttl_s = kTtlS) {
    auto m = std::make_unique<EtcdMembership>(Config(ttl_s), Self(i), Background());
    const Status s = m->Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return m;
  }

  // Three members, each seeing all three up.
  void StartThree(uint32_t ttl_s = kTtlS) {
    for (int i = 1; i <= 3; ++i) members_.push_back(StartMember(i, ttl_s));
    for (const auto& m : members_) {
      ASSERT_TRUE(WaitFor([&] { return AllUp(*m, ids_); }, std::chrono::seconds(10))) << m->Current().DebugString();
    }
  }

  // node id -> the lease its registration is attached to, as etcd has it now.
  std::map<std::string, int64_t> Leases() const {
    std::map<std::string, int64_t> out;
    EtcdClient client = Client();
    auto nodes = client.GetPrefix("/strata/test/nodes/");
    if (!nodes.ok()) return out;
    for (const auto& kv : nodes->kvs) out[kv.key.substr(std::string("/strata/test/nodes/").size())] = kv.lease;
    return out;
  }

  // Every member registered under a lease other than its one in `before`, and
  // every map with all three up.
  void ExpectRegisteredAgain(const std::map<std::string, int64_t>& before) {
    ASSERT_TRUE(WaitFor(
        [&] {
          const auto now = Leases();
          if (now.size() != before.size()) return false;
          for (const auto& [id, lease] : now) {
            auto it = before.find(id);
            if (it == before.end() || it->second == lease) return false;
          }
          return true;
        },
        std::chrono::seconds(15)));
    for (const auto& m : members_) {
      ASSERT_TRUE(WaitFor([&] { return AllUp(*m, ids_); }, std::chrono::seconds(10))) << m->Current().DebugString();
    }
  }

  // The map key as etcd holds it, with its mod_revision (the map's epoch).
  void ReadStoredMap(v1::ClusterMap* map, uint64_t* revision) const {
    auto map_kv = Client().Get("/strata/test/map");
    ASSERT_TRUE(map_kv.ok()) << map_kv.status().ToString();
    ASSERT_EQ(map_kv->kvs.size(), 1u);
    ASSERT_TRUE(map->ParseFromString(map_kv->kvs[0].value));
    *revision = static_cast<uint64_t>(map_kv->kvs[0].mod_revision);
  }

  EtcdClient Client() const {
    EtcdClient::Options options;
    options.endpoints = {etcd_->endpoint()};
    return EtcdClient(options);
  }

  std::unique_ptr<EtcdProcess> etcd_;
  std::vector<std::unique_ptr<EtcdMembership>> members_;
  const std::vector<std::string> ids_ = {"node-1", "node-2", "node-3"};
};

TEST_F(EtcdMembershipTest, BeforeStartTheMapHoldsThisNodeAlone) {
  EtcdMembership m(Config(), Self(1), Background());
  const v1::ClusterMap map = m.Current();
  ASSERT_EQ(map.nodes_size(), 1);
  EXPECT_EQ(map.nodes(0).id(), "node-1");
  EXPECT_EQ(map.nodes(0).state(), v1::NODE_UP);
  EXPECT_EQ(map.membership(), "etcd");
  EXPECT_EQ(map.epoch(), 0u);
}

TEST_F(EtcdMembershipTest, AllMembersUpInEveryMap) {
  StartThree();
  for (const auto& m : members_) {
    const v1::ClusterMap map = m->Current();
    EXPECT_EQ(map.membership(), "etcd");
    EXPECT_EQ(map.cluster(), "test");
    EXPECT_GT(map.epoch(), 0u);
    ASSERT_EQ(map.nodes_size(), 3);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(map.nodes(i).id(), ids_[i]);  // sorted by id
      EXPECT_EQ(map.nodes(i).address(), Self(i + 1).address());
      EXPECT_EQ(map.nodes(i).metrics_address(), Self(i + 1).metrics_address());
      EXPECT_EQ(map.nodes(i).zone(), Self(i + 1).zone());
      EXPECT_EQ(map.nodes(i).rack(), Self(i + 1).rack());
      EXPECT_EQ(map.nodes(i).down_since_unix_ms(), 0);
    }
  }
  // The keys as documented: the map's epoch is the map key's mod_revision.
  v1::ClusterMap stored;
  uint64_t revision = 0;
  ASSERT_NO_FATAL_FAILURE(ReadStoredMap(&stored, &revision));
  EXPECT_EQ(stored.nodes_size(), 3);
  EXPECT_EQ(members_[0]->Current().epoch(), revision);
  EtcdClient client = Client();
  auto nodes = client.GetPrefix("/strata/test/nodes/");
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->kvs.size(), 3u);
  for (const auto& kv : nodes->kvs) EXPECT_NE(kv.lease, 0) << kv.key << " has no lease";
}

TEST_F(EtcdMembershipTest, EpochsIncreaseAndSubscribersSeeEveryChange) {
  auto first = std::make_unique<EtcdMembership>(Config(), Self(1), Background());
  std::mutex mu;
  std::vector<v1::ClusterMap> seen;
  first->Subscribe([&](const v1::ClusterMap& map) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(map);
  });
  ASSERT_TRUE(first->Start().ok());
  const uint64_t alone = first->Current().epoch();
  EXPECT_GT(alone, 0u);
  members_.push_back(std::move(first));
  members_.push_back(StartMember(2));
  members_.push_back(StartMember(3));
  ASSERT_TRUE(WaitFor([&] { return AllUp(*members_[0], ids_); }, std::chrono::seconds(10)));
  EXPECT_GT(members_[0]->Current().epoch(), alone);

  // Subscribers see the maps this node reads, in order: alone first, all
  // three last (the map with two may have been overtaken before it was read).
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(seen.size(), 2u);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i].epoch(), seen[i - 1].epoch());
  EXPECT_EQ(seen.front().nodes_size(), 1);
  EXPECT_EQ(seen.back().nodes_size(), 3);
  EXPECT_EQ(seen.back().epoch(), members_[0]->Current().epoch());
}

// Disk figures travel in the registrations, written again when they move:
// every member sees them in its map, etcd's map key holds none, and the epoch
// does not change for them.
TEST_F(EtcdMembershipTest, RegistrationsCarryDiskFiguresThatChangeNoEpoch) {
  const std::string dir = ::testing::TempDir();
  // node-1 has room; node-2 has 100 MiB free, below its high watermark (full);
  // node-3 reports no disk.
  DiskSpace roomy({"node-1", dir, *ParseByteThreshold("1MiB"), *ParseByteThreshold("2MiB"), 0});
  DiskSpace full({"node-2", dir, *ParseByteThreshold("10MiB"), *ParseByteThreshold("1TiB"), 100ull << 20});
  ASSERT_TRUE(roomy.Sample().ok());
  EtcdMembershipOptions with_roomy;
  with_roomy.disk = &roomy;
  EtcdMembershipOptions with_full;
  with_full.disk = &full;
  members_.push_back(std::make_unique<EtcdMembership>(Config(), Self(1), Background(), with_roomy));
  members_.push_back(std::make_unique<EtcdMembership>(Config(), Self(2), Background(), with_full));
  members_.push_back(StartMember(3));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(members_[i]->Start().ok());
  for (const auto& m : members_) {
    ASSERT_TRUE(WaitFor([&] { return AllUp(*m, ids_); }, std::chrono::seconds(10))) << m->Current().DebugString();
  }
  // node-2 registered before its first sample (total 0: not heard); the sample
  // moves its figures, and it writes them again under the same lease.
  const std::map<std::string, int64_t> leases = Leases();
  ASSERT_TRUE(full.Sample().ok());
  ASSERT_TRUE(full.BelowHigh());
  for (const auto& m : members_) {
    ASSERT_TRUE(
        WaitFor([&] { return FullNodes(m->Current()) == std::set<std::string>{"node-2"}; }, std::chrono::seconds(10)))
        << m->Current().DebugString();
    const v1::ClusterMap map = m->Current();
    EXPECT_EQ(FindNode(map, "node-2")->disk_free_bytes(), 100ull << 20);
    EXPECT_EQ(FindNode(map, "node-2")->disk_total_bytes(), full.Last().total_bytes);
    EXPECT_EQ(FindNode(map, "node-1")->disk_total_bytes(), roomy.Last().total_bytes);
    EXPECT_FALSE(FindNode(map, "node-1")->disk_full());
    EXPECT_EQ(FindNode(map, "node-3")->disk_total_bytes(), 0u) << "node-3 reports no disk";
  }
  EXPECT_EQ(Leases(), leases) << "the same leases";
  // The map key: no disk figures, and its revision is still every member's epoch.
  v1::ClusterMap stored;
  uint64_t revision = 0;
  ASSERT_NO_FATAL_FAILURE(ReadStoredMap(&stored, &revision));
  for (const auto& n : stored.nodes()) EXPECT_EQ(n.disk_total_bytes(), 0u) << n.id();
  for (const auto& m : members_) EXPECT_EQ(m->Current().epoch(), revision);
}

// Whoever can write to etcd can register anything: a registration whose id,
// zone, rack or address a node's own config would refuse never enters the
// map (every node places shards by those names, and the CLI prints them).
TEST_F(EtcdMembershipTest, RegistrationsWithBadNamesOrAddressesStayOutOfTheMap) {
  ASSERT_NO_FATAL_FAILURE(StartThree());
  EtcdClient client = Client();
  auto put = [&](const std::string& id, const v1::NodeInfo& info) {
    auto r = client.Put("/strata/test/nodes/" + id, info.SerializeAsString());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  };
  v1::NodeInfo bad_zone = Self(4);
  bad_zone.set_zone("zone a\x1b[31m");
  ASSERT_NO_FATAL_FAILURE(put("node-4", bad_zone));
  v1::NodeInfo long_rack = Self(5);
  long_rack.set_rack(std::string(65, 'r'));
  ASSERT_NO_FATAL_FAILURE(put("node-5", long_rack));
  v1::NodeInfo bad_address = Self(6);
  bad_address.set_address("no-port");
  ASSERT_NO_FATAL_FAILURE(put("node-6", bad_address));
  ASSERT_NO_FATAL_FAILURE(put("node 7", Self(7)));  // the id is the key's last part
  ASSERT_NO_FATAL_FAILURE(put("node-8", Self(8)));  // well formed: it joins, so the others were read
  const std::vector<std::string> with_eight = {"node-1", "node-2", "node-3", "node-8"};
  for (const auto& m : members_) {
    ASSERT_TRUE(WaitFor([&] { return AllUp(*m, with_eight); }, std::chrono::seconds(10))) << m->Current().DebugString();
    const v1::ClusterMap map = m->Current();
    EXPECT_EQ(map.nodes_size(), 4) << map.DebugString();
    for (const char* id : {"node-4", "node-5", "node-6", "node 7"}) EXPECT_EQ(FindNode(map, id), nullptr) << id;
    EXPECT_EQ(FindNode(map, "node-8")->zone(), "zone-0");
  }
}

TEST_F(EtcdMembershipTest, CrashedMemberGoesDownThenLeavesAndComesBackUp) {
  StartThree();
  members_[2]->CrashForTesting();  // node-3: keep-alive stops, lease not revoked
  const auto crashed = Clock::now();

  int64_t down_ms = -1;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(
        WaitFor([&] { return StateIn(*members_[i], "node-3") == v1::NODE_DOWN; }, std::chrono::seconds(kTtlS + 8)))
        << members_[i]->Current().DebugString();
    if (down_ms < 0) down_ms = MsSince(crashed);
  }
  // Not before the lease could have expired (the last refresh was at most TTL/3 before the crash).
  EXPECT_GE(down_ms, kTtlS * 1000 * 2 / 3 - 100);
  const v1::ClusterMap down_map = members_[0]->Current();
  EXPECT_GT(FindNode(down_map, "node-3")->down_since_unix_ms(), 0);
  EXPECT_EQ(StateIn(*members_[0], "node-1"), v1::NODE_UP);
  EXPECT_EQ(StateIn(*members_[0], "node-2"), v1::NODE_UP);

  const auto down_at = Clock::now();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(
        WaitFor([&] { return !StateIn(*members_[i], "node-3").has_value(); }, std::chrono::seconds(kGraceS + 8)))
        << members_[i]->Current().DebugString();
  }
  const int64_t removed_ms = MsSince(crashed);
  EXPECT_GE(MsSince(down_at), kGraceS * 1000 - 300);  // the grace period was honoured
  EXPECT_EQ(members_[0]->Current().nodes_size(), 2);

  const auto restarted = Clock::now();
  members_[2] = StartMember(3);  // same id, a new process in real life
  for (const auto& m : members_) {
    ASSERT_TRUE(WaitFor([&] { return AllUp(*m, ids_); }, std::chrono::seconds(10))) << m->Current().DebugString();
  }
  const int64_t up_ms = MsSince(restarted);
  std::printf("[timing] ttl %u s, grace %u s: crash -> down %lld ms, crash -> removed %lld ms, restart -> up %lld ms\n",
              kTtlS, kGraceS, static_cast<long long>(down_ms), static_cast<long long>(removed_ms),
              static_cast<long long>(up_ms));
}

// A second process with a live node's id, at another address, is refused
// (after one lease TTL, in case the registration was a stopped one's): it
// used to take the id over and drop the live node from the map. The same
// address is a restart, taking over its own lingering registration at once.
TEST_F(EtcdMembershipTest, ASecondNodeWithALiveNodesIdIsRefused) {
  StartThree();
  v1::NodeInfo imposter = Self(1);
  imposter.set_address("127.0.0.1:7999");
  EtcdMembership second(Config(kTtlS), imposter, Background());
  const Status s = second.Start();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("another stratad runs with this id"), std::string::npos) << s.ToString();
  auto key = Client().Get("/strata/test/nodes/node-1");
  ASSERT_TRUE(key.ok());
  ASSERT_EQ(key->kvs.size(), 1u);
  v1::NodeInfo held;
  ASSERT_TRUE(held.ParseFromString(key->kvs[0].value));
  EXPECT_EQ(held.address(), Self(1).address()) << "the live node's registration was taken over";

  members_[2]->CrashForTesting();  // its registration lingers for the TTL
  members_[2] = StartMember(3);    // the same address: a restart, not refused
  for (const auto& m : members_) {
    ASSERT_TRUE(WaitFor([&] { return AllUp(*m, ids_); }, std::chrono::seconds(10))) << m->Current().DebugString();
  }
}

TEST_F(EtcdMembershipTest, StopRevokesSoOthersSeeTheNodeDownAtOnce) {
  constexpr uint32_t kLongTtl = 30;  // far longer than the wait below: only the revoke can explain it
  StartThree(kLongTtl);
  const auto stopped = Clock::now();
  members_[2]->Stop();
  ASSERT_TRUE(WaitFor([&] { return StateIn(*members_[0], "node-3") == v1::NODE_DOWN; }, std::chrono::seconds(5)))
      << members_[0]->Current().DebugString();
  std::printf("[timing] stop -> down %lld ms (ttl %u s)\n", static_cast<long long>(MsSince(stopped)), kLongTtl);
  members_[2]->Stop();  // idempotent
  EtcdClient client = Client();
  auto key = client.Get("/strata/test/nodes/node-3");
  ASSERT_TRUE(key.ok());
  EXPECT_TRUE(key->kvs.empty());
}

TEST_F(EtcdMembershipTest, LostLeaseIsReplacedByANewRegistration) {
  StartThree();
  EtcdClient client = Client();
  auto key = client.Get("/strata/test/nodes/node-2");
  ASSERT_TRUE(key.ok());
  ASSERT_EQ(key->kvs.size(), 1u);
  const int64_t old_lease = key->kvs[0].lease;
  // As after a long SIGSTOP of node-2: etcd drops its lease and its key.
  ASSERT_TRUE(client.LeaseRevoke(old_lease).ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto k = client.Get("/strata/test/nodes/node-2");
        return k.ok() && k->kvs.size() == 1 && k->kvs[0].lease != 0 && k->kvs[0].lease != old_lease;
      },
      std::chrono::seconds(10)));
  for (const auto& m : members_) {
    ASSERT_TRUE(WaitFor([&] { return AllUp(*m, ids_); }, std::chrono::seconds(10))) << m->Current().DebugString();
  }
}

TEST_F(EtcdMembershipTest, MembersRegisterAgainAfterEtcdRestarts) {
  StartThree();
  const auto before = Leases();
  ASSERT_EQ(before.size(), 3u);
  etcd_->Kill();
  // Gone for longer than the TTL: every keep-alive gives up (the sleep is the
  // outage being simulated, not a wait for the code under test).
  std::this_thread::sleep_for(std::chrono::seconds(kTtlS + 1));
  ASSERT_TRUE(etcd_->Restart());
  ExpectRegisteredAgain(before);
}

TEST_F(EtcdMembershipTest, MembersRegisterAgainAfterEtcdHangsPastTheTtl) {
  StartThree();
  const auto before = Leases();
  ASSERT_EQ(before.size(), 3u);
  etcd_->Pause();  // connections stay open; nothing answers
  std::this_thread::sleep_for(std::chrono::seconds(kTtlS + 1));
  etcd_->Resume();
  ExpectRegisteredAgain(before);
}

TEST_F(EtcdMembershipTest, UnreachableEndpointIsSkipped) {
  NodeConfig c = Config();
  const std::string dead = "127.0.0.1:" + std::to_string(EtcdProcess::FreePort());
  c.cluster.etcd_endpoints = {dead, etcd_->endpoint()};
  EtcdMembership m(c, Self(1), Background());
  const Status s = m.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(WaitFor([&] { return AllUp(m, {"node-1"}) && m.Current().epoch() > 0; }, std::chrono::seconds(5)));
}

TEST_F(EtcdMembershipTest, ClientCompareAndSwap) {
  EtcdClient client = Client();
  auto created = client.CompareAndSwap("/k", 0, "a");  // 0: only if absent
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_TRUE(created->swapped);
  auto again = client.CompareAndSwap("/k", 0, "b");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->swapped);
  ASSERT_TRUE(again->current.has_value());
  EXPECT_EQ(again->current->value, "a");
  EXPECT_EQ(again->current->mod_revision, created->revision);
  auto swapped = client.CompareAndSwap("/k", created->revision, "c");
  ASSERT_TRUE(swapped.ok());
  EXPECT_TRUE(swapped->swapped);
  EXPECT_GT(swapped->revision, created->revision);
  auto got = client.Get("/k");
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs[0].value, "c");
  auto deleted = client.Delete("/k");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 1);
}

}  // namespace
}  // namespace strata
