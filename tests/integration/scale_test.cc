// Scale-out on loopback: 16 stratad processes, a dataset spread over all of
// them at R=1, and 8 ranks (threads) streaming one epoch, once with the
// clients planning (the default) and once with the nodes planning. Checks:
// every sample reaches exactly one rank once; each node serves exactly the
// samples of the shards placed on it (so every node serves, and none serves
// more than its placement share); with the clients planning, no node computes
// a sample id of the plan (strata_planned_samples_total stays put) and a node
// accepts one call per rank for the whole epoch (strata_streams_opened_total:
// its share of each window of 32 steps goes to the ServeWork call it has open;
// here every node owes every rank something in every window); with the nodes
// planning (one StreamBatches call per rank), every node computes
// every rank's whole plan (16 x the samples); every stream is closed once the
// epoch is over; and either way the client process's threads grow with the
// ranks, not with ranks x nodes (one thread reads all of a stream's calls).
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/cluster_stream.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kNodes = 16;
constexpr uint32_t kRanks = 8;
constexpr uint64_t kSamples = 12000;  // 94 steps: three windows
constexpr char kDataset[] = "wide";

// This process's threads now (/proc/self/status), or -1.
int ThreadsNow() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// About 200 bytes: some 20 samples fill a shard of the smallest target size (4 KiB).
std::string Payload(uint64_t i) { return SyntheticPayload(i) + std::string(150, static_cast<char>('A' + i % 26)); }

// Per node id, its status (nodes that do not answer are left out).
std::map<std::string, NodeStatus> Statuses(LocalCluster& cluster, Client& client) {
  std::map<std::string, NodeStatus> out;
  for (int i = 0; i < cluster.size(); ++i) {
    auto s = client.GetNodeStatus(cluster.Address(i));
    if (s.ok()) out[cluster.Id(i)] = *s;
  }
  return out;
}

bool OneCopyEach(const std::map<uint32_t, std::set<std::string>>& copies, size_t shards) {
  if (copies.size() != shards) return false;
  for (const auto& [seq, nodes] : copies) {
    if (nodes.size() != 1) return false;
  }
  return true;
}

// Per node id, its counter `name` from /metrics (nodes that do not answer,
// or whose page lacks it, are left out).
std::map<std::string, uint64_t> Counter(LocalCluster& cluster, const std::string& name) {
  std::map<std::string, uint64_t> out;
  for (int i = 0; i < cluster.size(); ++i) {
    const CommandResult r =
        RunCommand({"/usr/bin/curl", "-s", "http://" + cluster.Process(i).metrics_address() + "/metrics"}, 10);
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with(name + "{") && !line.starts_with(name + " ")) continue;
      const size_t space = line.rfind(' ');
      if (space != std::string::npos) out[cluster.Id(i)] = static_cast<uint64_t>(std::stod(line.substr(space + 1)));
    }
  }
  return out;
}

// Per node, how much `counter` grew between two readings.
std::map<std::string, uint64_t> Grown(const std::map<std::string, uint64_t>& before,
                                      const std::map<std::string, uint64_t>& after) {
  std::map<std::string, uint64_t> out;
  for (const auto& [id, n] : after) out[id] = n - before.at(id);
  return out;
}

uint64_t ServedTotal(const std::map<std::string, NodeStatus>& s) {
  uint64_t sum = 0;
  for (const auto& [id, st] : s) sum += st.samples_served;
  return sum;
}

TEST(ScaleTest, SixteenNodesEightRanksEverySampleOnceEachNodeItsShare) {
  LocalCluster::Options options;
  options.nodes = kNodes;
  // 16 nodes on a loaded 2-core machine: fewer heartbeats (16 x 15 of them), and
  // a node is called down only after 5 s without one (no node stops here).
  options.extra_args = {"--cluster-heartbeat-interval-ms", "500", "--cluster-failure-timeout-ms", "5000"};
  LocalCluster cluster(options);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == kNodes; }, 60s)) << cluster.UpIn(0) << " up";
  auto client = cluster.Connect(0, 30000);
  ASSERT_NE(client, nullptr);

  // Small shards (about 20 samples each): some 200 of them over 16 nodes.
  SyntheticIngest how{.labels = 4, .replication = 1, .shard_target_bytes = 4 << 10, .payload = Payload};
  auto ingested = TryIngestSynthetic(*client, kDataset, kSamples, how);
  ASSERT_TRUE(ingested.ok()) << ingested.status().ToString();
  auto described = client->Describe(kDataset);
  ASSERT_TRUE(described.ok()) << described.status().ToString();
  const std::vector<ShardInfo>& shards = described->shards;
  ASSERT_GE(shards.size(), 4u * kNodes);
  // The ingesting node's hand-off copies go once each holder has its file.
  ASSERT_TRUE(Eventually([&] { return OneCopyEach(ShardHolders(cluster, *client, kDataset), shards.size()); }, 60s));
  std::map<std::string, uint64_t> placed;  // samples of the shards each node holds
  const auto copies = ShardHolders(cluster, *client, kDataset);
  for (const ShardInfo& s : shards) placed[*copies.at(s.seq).begin()] += s.samples;
  ASSERT_EQ(placed.size(), static_cast<size_t>(kNodes)) << "every node holds part of the dataset";

  for (const bool plan_on_client : {true, false}) {
    SCOPED_TRACE(plan_on_client ? "the clients plan" : "the nodes plan");
    const auto before = Statuses(cluster, *client);
    ASSERT_EQ(before.size(), static_cast<size_t>(kNodes));

    const auto opened_before = Counter(cluster, "strata_streams_opened_total");
    const auto planned_before = Counter(cluster, "strata_planned_samples_total");
    ASSERT_EQ(opened_before.size(), static_cast<size_t>(kNodes));
    ASSERT_EQ(planned_before.size(), static_cast<size_t>(kNodes));

    // 8 ranks, one client each, their seeds spread over the nodes.
    std::vector<std::vector<uint64_t>> ids(kRanks);
    std::vector<Status> ends(kRanks);
    // The most threads this process had while the ranks streamed.
    std::atomic<bool> streaming{true};
    std::atomic<int> most_threads{0};
    std::jthread counter([&] {
      while (streaming) {
        most_threads = std::max(most_threads.load(), ThreadsNow());
        std::this_thread::sleep_for(10ms);
      }
    });
    std::vector<std::jthread> ranks;
    for (uint32_t r = 0; r < kRanks; ++r) {
      ranks.emplace_back([&, r] {
        auto rank_client = cluster.Connect(static_cast<int>(r * 2), 30000, plan_on_client);
        ASSERT_NE(rank_client, nullptr);
        StreamOptions o;
        o.dataset = kDataset;
        o.rank = r;
        o.world = kRanks;
        o.batch_size = 16;
        o.seed = 5;
        auto stream = rank_client->OpenStream(o);
        for (;;) {
          Batch b;
          const Status s = stream.ok() ? stream.value()->Next(&b) : stream.status();
          if (!s.ok()) {
            ends[r] = s;
            break;
          }
          for (size_t i = 0; i < b.size(); ++i) {
            EXPECT_EQ(b.sample(i), Payload(b.ids()[i])) << "rank " << r << " id " << b.ids()[i];
          }
          ids[r].insert(ids[r].end(), b.ids().begin(), b.ids().end());
        }
        if (stream.ok()) {
          EXPECT_EQ(stream.value()->stats().failovers, 0u) << "rank " << r;
        }
      });
    }
    for (auto& t : ranks) t.join();
    streaming = false;
    counter.join();
    // A stream reads all its nodes on one thread (client/read_loop.h): the
    // process's threads grow with the ranks, not with ranks x nodes (a reader
    // and a writer per call would be 2 x 8 x 16 = 256 of them).
    RecordProperty("most_threads", most_threads.load());
    EXPECT_LT(most_threads.load(), static_cast<int>(kRanks * kNodes) / 2) << "threads while 8 ranks read 16 nodes";

    // A node accepts at most one call from each rank for the epoch; and with
    // the clients planning, it computes no sample id of any plan.
    const auto opened = Grown(opened_before, Counter(cluster, "strata_streams_opened_total"));
    const auto planned = Grown(planned_before, Counter(cluster, "strata_planned_samples_total"));
    ASSERT_EQ(opened.size(), static_cast<size_t>(kNodes));
    ASSERT_EQ(planned.size(), static_cast<size_t>(kNodes));
    for (const auto& [id, n] : opened) {
      EXPECT_LE(n, kRanks) << id;
      EXPECT_GT(n, 0u) << id;
      EXPECT_EQ(planned.at(id), plan_on_client ? 0 : kSamples) << id << ": every rank's plan, or none";
    }

    // Exactly once over the ranks.
    std::map<uint64_t, int> seen;
    for (uint32_t r = 0; r < kRanks; ++r) {
      EXPECT_EQ(ends[r].code(), Code::kOutOfRange) << "rank " << r << ": " << ends[r].ToString();
      EXPECT_FALSE(ids[r].empty()) << "rank " << r;
      for (uint64_t id : ids[r]) ++seen[id];
    }
    ASSERT_EQ(seen.size(), kSamples);
    EXPECT_EQ(seen.begin()->first, 0u);
    EXPECT_EQ(seen.rbegin()->first, kSamples - 1);
    for (const auto& [id, n] : seen) ASSERT_EQ(n, 1) << "id " << id;

    // Each node served exactly the samples placed on it. A server counts a part
    // when gRPC reports it written, which may be just after the rank has it.
    std::map<std::string, NodeStatus> after;
    Eventually(
        [&] {
          after = Statuses(cluster, *client);
          return after.size() == before.size() && ServedTotal(after) - ServedTotal(before) >= kSamples;
        },
        20s);
    ASSERT_EQ(after.size(), static_cast<size_t>(kNodes));
    for (const auto& [id, st] : after) {
      const uint64_t served = st.samples_served - before.at(id).samples_served;
      EXPECT_EQ(served, placed[id]) << id;
      EXPECT_GT(served, 0u) << id;
    }

    // Every stream is closed once the epoch is over.
    EXPECT_TRUE(Eventually(
        [&] {
          for (const auto& [id, st] : Statuses(cluster, *client)) {
            if (st.active_streams != 0) return false;
          }
          return true;
        },
        20s));
  }
}

// Waits for the 3 nodes of `cluster` to see each other up, then ingests
// `count` samples of `how` as `name` and waits until more than `min_holders`
// nodes hold its shards. The client of node 0, or null (the failure recorded).
std::unique_ptr<Client> IngestOnThree(LocalCluster& cluster, const std::string& name, uint64_t count,
                                      const SyntheticIngest& how, size_t min_holders) {
  EXPECT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 60s));
  auto client = cluster.Connect(0, 30000);
  if (client == nullptr) {
    ADD_FAILURE() << "no client of node 0";
    return nullptr;
  }
  const auto ingested = TryIngestSynthetic(*client, name, count, how);
  if (!ingested.ok()) {
    ADD_FAILURE() << ingested.status().ToString();
    return nullptr;
  }
  if (!Eventually([&] { return ShardHolders(cluster, *client, name).size() > min_holders; }, 30s)) {
    ADD_FAILURE() << name << "'s shards are not on more than " << min_holders << " nodes";
    return nullptr;
  }
  return client;
}

// SyntheticPayload(i) and then `pad` bytes of i's low byte: samples of about
// `pad` bytes whose every byte is checked.
std::function<std::string(uint64_t)> PaddedPayload(size_t pad) {
  return [pad](uint64_t i) { return SyntheticPayload(i) + std::string(pad, static_cast<char>(i)); };
}

// Reads `stream` to its end, which must be OutOfRange: each batch is the
// step after the last and each sample holds payload(id); `after_batch` runs
// after each batch, given its step. Counts each id in *seen; returns the
// number of steps.
uint64_t ReadEpoch(Stream& stream, const std::function<std::string(uint64_t)>& payload, std::map<uint64_t, int>* seen,
                   const std::function<void(uint64_t)>& after_batch = {}) {
  uint64_t step = 0;
  for (;; ++step) {
    Batch b;
    const Status st = stream.Next(&b);
    if (!st.ok()) {
      EXPECT_EQ(st.code(), Code::kOutOfRange) << st.ToString();
      return step;
    }
    EXPECT_EQ(b.step(), step);
    for (size_t i = 0; i < b.size(); ++i) {
      ++(*seen)[b.ids()[i]];
      EXPECT_EQ(b.sample(i), payload(b.ids()[i])) << "id " << b.ids()[i];
    }
    if (after_batch) after_batch(step);
  }
}

// Small steps join while the trainer is away: 3 nodes at R=1, 16 KiB samples,
// batches of 3 (about one sample a node a step). The trainer takes one batch
// and stops for a second, so each node's writes back up and its steps go out
// joined (Batch.following, strata_joined_steps_total); every sample still
// arrives once, with its bytes, in order.
TEST(ScaleTest, SmallStepsJoinWhileTheTrainerIsAwayAndArriveExactlyOnce) {
  LocalCluster cluster(LocalCluster::Options{});  // three nodes
  constexpr uint64_t kSmall = 600;
  const auto payload = PaddedPayload(16 << 10);
  SyntheticIngest how{.labels = 3, .replication = 1, .shard_target_bytes = 64 << 10, .payload = payload};
  auto client = IngestOnThree(cluster, "joined", kSmall, how, 0);
  ASSERT_NE(client, nullptr);
  const auto joined_before = Counter(cluster, "strata_joined_steps_total");
  ClientOptions co;
  co.max_buffered_parts = 2;
  StreamOptions o;
  o.dataset = "joined";
  o.batch_size = 3;
  auto opened = cluster.Open(0, co, o);
  ASSERT_NE(opened.stream, nullptr);
  std::map<uint64_t, int> seen;
  const uint64_t step = ReadEpoch(*opened.stream, payload, &seen, [](uint64_t read) {
    if (read == 0) std::this_thread::sleep_for(1s);  // the trainer is away
  });
  EXPECT_EQ(step, kSmall / 3);
  ASSERT_EQ(seen.size(), kSmall);
  for (const auto& [id, n] : seen) ASSERT_EQ(n, 1) << "id " << id;
  const auto joined = Grown(joined_before, Counter(cluster, "strata_joined_steps_total"));
  uint64_t total = 0;
  for (const auto& [id, n] : joined) total += n;
  EXPECT_GT(total, 0u) << "the nodes' writes backed up while the trainer was away: steps were joined";
}

// Large steps are buffered by bytes: 3 nodes at R=1, 64 KiB samples in
// batches of 8 (steps of 512 KiB). With max_buffered_bytes at 1 MiB the
// stream takes 2 steps ahead, not max_buffered_parts' 8, and with the default
// (16 MiB) 8; either way every sample arrives once, in order, with its bytes.
TEST(ScaleTest, LargeStepsAreBufferedByBytesAndArriveExactlyOnce) {
  LocalCluster cluster(LocalCluster::Options{});  // three nodes
  constexpr uint64_t kLarge = 240;
  const auto payload = PaddedPayload(64 << 10);
  SyntheticIngest how{.labels = 3, .replication = 1, .shard_target_bytes = 1 << 20, .payload = payload};
  auto client = IngestOnThree(cluster, "large", kLarge, how, 1);
  ASSERT_NE(client, nullptr);
  for (const size_t budget : {size_t{1} << 20, ClientOptions().max_buffered_bytes}) {
    SCOPED_TRACE("max_buffered_bytes " + std::to_string(budget));
    ClientOptions co;
    co.max_buffered_bytes = budget;
    StreamOptions o;
    o.dataset = "large";
    o.batch_size = 8;
    auto opened = cluster.Open(0, co, o);
    ASSERT_NE(opened.stream, nullptr);
    const auto* cluster_stream = dynamic_cast<const client_internal::ClusterStream*>(opened.stream.get());
    ASSERT_NE(cluster_stream, nullptr);
    std::map<uint64_t, int> seen;
    const uint64_t steps = ReadEpoch(*opened.stream, payload, &seen, [&](uint64_t step) {
      EXPECT_EQ(cluster_stream->lookahead(), budget == (size_t{1} << 20) ? 2u : 8u) << "after step " << step;
    });
    EXPECT_EQ(steps, kLarge / 8);
    ASSERT_EQ(seen.size(), kLarge);
    for (const auto& [id, n] : seen) ASSERT_EQ(n, 1) << "id " << id;
  }
}

// A planning client bounds each window by ids as well as by steps, so that a
// node is never given more work not yet begun than it accepts
// (InputLimits::kMaxWorkIds), however large the batches: with the bound
// lowered to 45 ids and batches of 30, every window is one step. The work
// still goes over one call per node, and every sample arrives once.
TEST(ScaleTest, WindowsBoundedByIdsStillServeEverySampleOnceOverOneCallPerNode) {
  LocalCluster::Options options;
  options.nodes = 3;
  LocalCluster cluster(options);
  constexpr uint64_t kCount = 600;
  SyntheticIngest how{.labels = 3, .replication = 1, .shard_target_bytes = 4 << 10, .payload = Payload};
  auto client = IngestOnThree(cluster, "windows", kCount, how, 1);
  ASSERT_NE(client, nullptr);
  const auto opened_before = Counter(cluster, "strata_streams_opened_total");
  client_internal::ClusterStream::SetWindowIdsForTesting(45);
  StreamOptions o;
  o.dataset = "windows";
  o.batch_size = 30;
  auto stream = client->OpenStream(o);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  const auto* planning = dynamic_cast<const client_internal::ClusterStream*>(stream.value().get());
  ASSERT_NE(planning, nullptr);
  std::map<uint64_t, int> seen;
  const uint64_t steps = ReadEpoch(*stream.value(), Payload, &seen, [&](uint64_t step) {
    EXPECT_EQ(planning->last_window_steps(), 1u) << "step " << step;
  });
  client_internal::ClusterStream::SetWindowIdsForTesting(0);
  EXPECT_EQ(steps, kCount / 30);
  ASSERT_EQ(seen.size(), kCount);
  for (const auto& [id, n] : seen) ASSERT_EQ(n, 1) << "id " << id;
  EXPECT_EQ(stream.value()->stats().failovers, 0u);
  // 20 windows of one step each, given to the calls already open.
  for (const auto& [id, n] : Grown(opened_before, Counter(cluster, "strata_streams_opened_total"))) {
    EXPECT_LE(n, 1u) << id;
  }
}

}  // namespace
}  // namespace strata::testing
